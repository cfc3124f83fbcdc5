"""Keys and values as the spec defines them, and the sizes the limits are measured in.

A value is JSON data: ``None``, ``bool``, ``int``, finite ``float``, ``str``, lists and objects
with string keys, at most ``MAX_VALUE_DEPTH`` containers deep. It is checked by an explicit walk,
never by recursion, so a value nested 100,000 levels deep is a clean error rather than a
``RecursionError``. Stored values are compact JSON text (``ensure_ascii=False``); sizes are UTF-8
bytes of that text, and a namespace's size is that of its values as one JSON object.

A model-facing schema cannot describe "any JSON value" strictly, so an argument holding one
(``JsonText``: ``set_value``'s value, an HTTP tool's body) is offered as a string of JSON text and
decoded when the call is planned; an already-decoded value (an object, a number, ...) is accepted
as it is. A string is always JSON text: the string value ``hi`` is the text ``"hi"``.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Annotated, Any

from pydantic import BeforeValidator, JsonValue, PlainSerializer, WithJsonSchema

MAX_KEY_CHARS = 256
"""Keys are nonblank strings of at most 256 characters (spec)."""
MAX_VALUE_DEPTH = 64
"""Containers a value may nest. Temporal's JSON decoding stops at 200 levels for a whole payload,
and a value sits a few levels down in a request, an approval memo or a result."""


class ValueProblem(ValueError):
    """A key or value the spec does not admit; the message says why, without naming the tool."""


def check_key(key: str) -> str:
    """``key`` if it is a nonblank string of at most ``MAX_KEY_CHARS`` characters."""
    if not key.strip():
        raise ValueProblem("keys must not be blank")
    if len(key) > MAX_KEY_CHARS:
        raise ValueProblem(f"key has {len(key)} characters; the limit is {MAX_KEY_CHARS}")
    _utf8(key, "key")
    return key


def check_prefix(prefix: str) -> str:
    """``prefix`` if a key could start with it (blank and empty prefixes are allowed)."""
    if len(prefix) > MAX_KEY_CHARS:
        raise ValueProblem(f"prefix has {len(prefix)} characters; the limit is {MAX_KEY_CHARS}")
    _utf8(prefix, "prefix")
    return prefix


def check_value(value: Any) -> None:
    """Refuse anything that is not finite JSON data at most ``MAX_VALUE_DEPTH`` deep."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            depth += 1
            if depth > MAX_VALUE_DEPTH:
                raise ValueProblem(f"value nests deeper than {MAX_VALUE_DEPTH} levels")
            if isinstance(node, dict):
                for name, item in node.items():
                    if not isinstance(name, str):
                        raise ValueProblem("object keys must be strings")
                    stack.append((item, depth))
            else:
                stack.extend((item, depth) for item in node)
        elif isinstance(node, float):
            if not math.isfinite(node):
                raise ValueProblem("non-finite numbers (NaN, Infinity) are not JSON")
        elif node is not None and not isinstance(node, str | int):
            raise ValueProblem(f"{type(node).__name__} is not JSON data")


def encode_value(value: Any) -> str:
    """The compact JSON text stored for ``value``, which must have passed ``check_value``."""
    text = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    _utf8(text, "value")
    return text


def decode_value(text: str) -> Any:
    """A fresh value from stored text, refusing text a tool could not have stored."""
    try:
        value = _parse(text)
    except RecursionError:
        raise ValueProblem(f"stored value nests deeper than {MAX_VALUE_DEPTH} levels") from None
    except ValueError as exc:
        raise ValueProblem(f"stored value is not JSON: {exc}") from None
    try:
        check_value(value)
    except ValueProblem as exc:
        raise ValueProblem(f"stored {exc}") from None
    return value


def json_argument(value: Any) -> Any:
    """An argument's JSON value: a string is JSON text and is decoded; anything else is taken as
    already decoded. Either way it must pass ``check_value``."""
    if isinstance(value, str):
        try:
            value = _parse(value)
        except RecursionError:
            raise ValueProblem(f"value nests deeper than {MAX_VALUE_DEPTH} levels") from None
        except json.JSONDecodeError as exc:
            raise ValueProblem(
                f'is not JSON text ({exc}); a string is given as JSON text too: "\\"text\\""'
            ) from None
        except ValueError as exc:  # NaN, Infinity
            raise ValueProblem(str(exc)) from None
    check_value(value)
    return value


def argument_form(value: Any) -> Any:
    """How normalised arguments hold a JSON value: a string as its JSON text, so that validating
    them again gives the same value; anything else as it is."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else value


JsonText = Annotated[
    JsonValue,
    BeforeValidator(json_argument),
    PlainSerializer(argument_form),
    WithJsonSchema({"type": "string"}, mode="validation"),
]
"""A JSON value offered to the model as JSON text (a strict schema's string), held decoded."""


def _parse(text: str) -> Any:
    return json.loads(text, parse_constant=_no_constant)


def value_bytes(text: str) -> int:
    return len(text.encode())


def entry_bytes(key: str, text: str) -> int:
    """What one entry adds to its namespace's JSON object: ``"key":value``."""
    return len(json.dumps(key, ensure_ascii=False).encode()) + 1 + len(text.encode())


def store_bytes(keys: int, entries: int) -> int:
    """Size of a namespace's JSON object from its key count and summed ``entry_bytes``."""
    return 2 + entries + max(keys - 1, 0)


def digest(text: str | None) -> str | None:
    """What an approval binds a write to: the sha256 of the stored text, ``None`` for absent."""
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()


def _utf8(text: str, what: str) -> None:
    try:
        text.encode()
    except UnicodeEncodeError:
        raise ValueProblem(f"{what} contains an unpaired surrogate") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")

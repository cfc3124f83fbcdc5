"""The call commands' arguments, checked before anything connects.

A typo is a usage error (exit 2) whatever the state of the server. The exit codes and
``CommandError`` (``toolcalls.worker.exits``) can be imported from here too.
"""

from __future__ import annotations

import argparse
import getpass
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toolcalls.worker.exits import (
    EXIT_FAILED as EXIT_FAILED,
    EXIT_OK as EXIT_OK,
    EXIT_USAGE as EXIT_USAGE,
    CommandError as CommandError,
)
from toolcalls.worker.sections import check_rule_keys
from toolcalls.workflows.models.approval import (
    MAX_APPROVER_CHARS,
    MAX_REASON_CHARS,
    MAX_RESPONSE_CHARS,
    GrantScope,
    GrantTerms,
)
from toolcalls.workflows.models.call import CapabilityPolicy, Effect, ToolCallRequest
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.rules import policy
from toolcalls.workflows.rules.identities import InvalidIdentity, canonical_identity


def approval_timeout(value: str) -> timedelta | None:
    """``--approval-timeout``: positive seconds, or ``none`` to wait without a timer."""
    if value.strip().lower() == "none":
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive number of seconds or none")
    return timedelta(seconds=seconds)


def default_approver() -> str:
    """Who ``approve``/``deny``/``answer`` say decided, unless ``--by`` names someone: the local
    user, canonically (an unnamed approver when there is none, or it is not a valid name)."""
    try:
        return canonical_identity(getpass.getuser())
    except (KeyError, OSError, InvalidIdentity):  # no passwd entry, no LOGNAME: unnamed
        return ""


def json_object(text: str, command: str, source: str = "ARGS_JSON") -> dict[str, Any]:
    """Tool arguments given on the command line: a JSON object, or ``@FILE`` holding one."""
    if text.startswith("@"):
        # Arguments too long for a command line (a file's content, say) come from a file.
        source = f"{source} {text}"
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise CommandError(EXIT_USAGE, f"{command}: {source}: cannot read: {reason}") from None
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(EXIT_USAGE, f"{command}: {source} is not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        kind = type(arguments).__name__
        raise CommandError(EXIT_USAGE, f"{command}: {source} must be a JSON object, not {kind}")
    return arguments


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(value: str) -> timedelta:
    """``--remember``: a positive duration, ``90``, ``90s``, ``30m``, ``8h`` or ``7d``."""
    text = value.strip().lower()
    unit = _UNITS.get(text[-1:], 0)
    try:
        seconds = float(text[:-1] if unit else text) * (unit or 1)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a duration such as 90s, 30m or 8h")
    return timedelta(seconds=seconds)


def offset(value: str) -> int:
    """``watch --from``: an offset in a call's progress stream, 0 or more."""
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not an offset (a whole number, 0 or more)")
    return number


def decision_extras(args: argparse.Namespace) -> dict[str, Any]:
    """``approve``'s ``--edit`` and ``--remember`` as keyword arguments of ``approve``."""
    extras: dict[str, Any] = {}
    if getattr(args, "edit", None) is not None:
        extras["arguments"] = json_object(args.edit, args.command, "--edit")
    if getattr(args, "remember", None) is not None:
        extras["remember"] = GrantTerms(
            duration=args.remember,
            scope=args.scope or GrantScope.PARENT,
            any_arguments=args.any_arguments,
        )
    return extras


def build_request(args: argparse.Namespace) -> ToolCallRequest:
    """The request ``call`` starts, from its arguments; bad ones are usage errors."""
    arguments = json_object(args.arguments, "call")
    request_policy = parse_policy(args.policy) if args.policy is not None else None
    if args.require_approval:
        request_policy = requiring_approval(args.tool, request_policy)
    fields: dict[str, Any] = {"tool": args.tool, "arguments": arguments, "policy": request_policy}
    if hasattr(args, "approval_timeout"):  # absent unless given: the request's default applies
        fields["approval_timeout"] = args.approval_timeout
    principal = build_principal(
        getattr(args, "principal", None), getattr(args, "principal_attrs", []), "call"
    )
    if principal is not None:
        fields["principal"] = principal
    notify = getattr(args, "notify", None)
    if notify is not None:
        if not notify.strip() or len(notify) > 2_048:
            raise CommandError(EXIT_USAGE, "call: --notify: a webhook's name or URL (at most 2048)")
        fields["notify"] = notify
    return ToolCallRequest(**fields)


def build_principal(id: str | None, attrs: list[str], command: str) -> Principal | None:
    """``--as ID`` and ``--as-attr NAME=VALUE``: the principal, or a usage error naming the
    problem."""
    if id is None:
        if attrs:
            raise CommandError(EXIT_USAGE, f"{command}: --as-attr needs --as")
        return None
    attributes: dict[str, str] = {}
    for attr in attrs:
        name, equals, value = attr.partition("=")
        if not equals or not name:
            raise CommandError(EXIT_USAGE, f"{command}: --as-attr {attr!r}: use NAME=VALUE")
        attributes[name] = value
    try:
        return Principal(id=id, attributes=attributes)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        raise CommandError(
            EXIT_USAGE, f"{command}: --as: invalid principal: {where}: {first['msg']}"
        ) from None


def parse_policy(value: str) -> CapabilityPolicy:
    """``--policy``: inline JSON (it starts with ``{``) or the path of a JSON file."""
    if value.lstrip().startswith("{"):
        source, text = "--policy", value
    else:
        source = f"--policy {value}"
        try:
            text = Path(value).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise CommandError(EXIT_USAGE, f"call: {source}: cannot read: {reason}") from None
    try:
        parsed = CapabilityPolicy.model_validate_json(text)
        check_rule_keys(parsed.rules)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'policy'}: {err['msg']}"
            for err in exc.errors(include_url=False)
        )
        raise CommandError(EXIT_USAGE, f"call: {source}: {problems}") from None
    except ValueError as exc:
        raise CommandError(EXIT_USAGE, f"call: {source}: rules: {exc}") from None
    return parsed


def requiring_approval(tool: str, base: CapabilityPolicy | None) -> CapabilityPolicy:
    """``--require-approval``: every capability of ``tool``, and the tool itself, need a human.

    The ``tools`` entry covers tools without capabilities (``calculator``); with ``--policy`` the
    stricter of the two effects wins everywhere, so a ``deny`` stays a deny.
    """
    base = base or CapabilityPolicy()
    approval = Effect.REQUIRE_APPROVAL
    return CapabilityPolicy(
        rules={key: policy.strictest([effect, approval]) for key, effect in base.rules.items()},
        tools={**base.tools, tool: policy.strictest([base.tools.get(tool, approval), approval])},
        default_effect=policy.strictest([base.default_effect, approval]),
    )


def check_decision_args(args: argparse.Namespace) -> str | None:
    """What is wrong with ``approve``/``deny``/``answer``/``grants revoke`` arguments; fills in
    ``--by``'s default and makes the name canonical (``Alice`` decides as ``alice``)."""
    if args.by is None:
        args.by = default_approver()
    if len(args.by) > MAX_APPROVER_CHARS:
        return f"--by: at most {MAX_APPROVER_CHARS} characters"
    try:
        args.by = canonical_identity(args.by)
    except InvalidIdentity as exc:
        return f"--by: {exc}"
    if getattr(args, "reason", None) is not None and len(args.reason) > MAX_REASON_CHARS:
        return f"--reason: at most {MAX_REASON_CHARS} characters"
    if args.command == "answer" and (args.text is None) == (not args.decline):
        return "give either TEXT or --decline"
    if args.command == "respond":
        if not args.text.strip():
            return "TEXT: a response cannot be blank"
        if len(args.text) > MAX_RESPONSE_CHARS:
            return f"TEXT: at most {MAX_RESPONSE_CHARS} characters"
    terms = args.command == "approve" and (args.scope is not None or args.any_arguments)
    if terms and args.remember is None:
        return "--scope and --any-arguments go with --remember"
    return None

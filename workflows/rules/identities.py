"""Approver identities: one spelling per person, wherever a name is compared or recorded.

Pure: no temporalio, no clock, no I/O. A name a front asserts (``--by``, the inbox's login form or
its proxy's header, the MCP user, a decision's ``approver``) is compared and recorded in its
canonical form: Unicode NFKC, case folded, trimmed, and each run of spaces inside made one space.
So ``Alice``, ``alice `` and ``alice`` in full-width letters are all ``alice``, and the two-person
rule counts them once. A name holding an invisible character is refused (``InvalidIdentity``) rather
than cleaned: a control or format character (U+200B ZERO WIDTH SPACE, a bidirectional override),
a line or paragraph separator, a private-use, surrogate or unassigned code point, or another
default-ignorable one (a variation selector, a Hangul filler). Such a name looks like another
person's while being a different string.

Names in the configuration (``[approvers]`` members, ``[[inbox.users]]``, ``[mcp] user``) must be
written canonically already (``canonical_name``): a file that says ``Alice`` is refused with the
spelling to use, so what an operator reads is what the workflow compares.
"""

from __future__ import annotations

import unicodedata

from toolcalls.workflows.models.approval import MAX_APPROVER_CHARS

_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Control, format, surrogate, private-use and unassigned code points; line and paragraph
separators."""
_INVISIBLE_RANGES = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors
    (0x2800, 0x2800),  # braille pattern blank
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # half-width Hangul filler
    (0xE0100, 0xE01EF),  # variation selectors supplement
)
"""Default-ignorable code points (and the braille blank) outside those categories: they render
as nothing."""


class InvalidIdentity(ValueError):
    """A name that cannot identify a person; the message (one line) names the problem."""


def _invisible(text: str) -> str | None:
    for char in text:
        point = ord(char)
        if unicodedata.category(char) in _INVISIBLE_CATEGORIES or any(
            low <= point <= high for low, high in _INVISIBLE_RANGES
        ):
            return char
    return None


def canonical_identity(name: str) -> str:
    """The canonical form of ``name``; ``""`` (an unnamed approver) for a blank one.

    Raises:
        InvalidIdentity: ``name`` holds an invisible character, or is longer than
            ``MAX_APPROVER_CHARS`` once canonical.
    """
    char = _invisible(name)
    if char is not None:
        what = unicodedata.name(char, "unnamed")
        raise InvalidIdentity(
            f"{name!r}: a name cannot hold the invisible character U+{ord(char):04X} ({what})"
        )
    text = unicodedata.normalize("NFKC", name)
    # Case folding can leave text that NFKC changes again (and NFKC can fold into spaces).
    text = unicodedata.normalize("NFKC", text.casefold())
    text = " ".join(text.split())
    if len(text) > MAX_APPROVER_CHARS:
        raise InvalidIdentity(f"{name!r}: a name is at most {MAX_APPROVER_CHARS} characters")
    return text


def canonical_name(name: str, where: str = "name") -> str:
    """``name`` unchanged if it is a canonical, non-blank identity (a name in the configuration).

    Raises:
        ValueError: naming ``where`` and, for a name written otherwise, the spelling to use.
    """
    try:
        canonical = canonical_identity(name)
    except InvalidIdentity as exc:
        raise ValueError(f"{where}: {exc}") from None
    if not canonical:
        raise ValueError(f"{where}: {name!r}: a name is 1-{MAX_APPROVER_CHARS} characters")
    if canonical != name:
        raise ValueError(
            f"{where}: {name!r}: names are compared canonically (NFKC, case folded, trimmed); "
            f"write {canonical!r}"
        )
    return name


def same_identity(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name the same person (an invalid name names no one)."""
    try:
        return canonical_identity(a) == canonical_identity(b)
    except InvalidIdentity:
        return False

"""Which names the file and document tools accept: one lexical rule, two strengths.

**Every path** a tool is given, read or write, must be free in each component of characters that
make a name mean something else to a reader, to the tools' own output or to another system:

- control characters (C0 U+0000-U+001F, DEL U+007F, C1 U+0080-U+009F): a newline splits a line of
  a listing or a log, an escape sequence rewrites a terminal, and none of them shows;
- Unicode format characters (general category Cf): bidirectional controls (U+061C, U+200E,
  U+200F, U+202A-U+202E, U+2066-U+2069) reorder what a reader sees, so ``invoice\\u202etxt.exe``
  reads as ``invoiceexe.txt``; zero-width characters (U+200B-U+200D, U+2060), U+FEFF, the soft
  hyphen and tag characters are invisible, so two different names read the same;
- line and paragraph separators (U+2028, U+2029), which many renderers show as line breaks;
- the backslash: the path separator on Windows (``a\\b`` is a file in a directory there and one
  name here) and the escape character of JSON, shells, globs and regular expressions.

Names in the filesystem that break this rule are never shown: a listing skips them (and does not
enter such a directory), since no tool would open what it named and the raw name could break or
reorder the result around it.

**A name a tool creates** (the new entry of ``create_file``) must also be one Windows and macOS
can hold as it is, so that a tree the model writes checks out elsewhere: none of ``:*?"<>|``, not
a device name Windows reserves (``CON``, ``NUL.txt``, ``COM1``, ...), no trailing dot or space
(Windows drops them, so ``a.`` and ``a`` collide), and in Unicode normalization form C (macOS
compares names in a normalized form, so a decomposed ``café`` collides with a composed one, and
the two read the same). Existing names are not held to this: they are ordinary on POSIX systems
(``:`` in Maildir and timestamp names, ``?`` in saved web pages, decomposed names copied from a
Mac) and reading them is unambiguous.

Categories are those of the interpreter's Unicode database; a character it does not know yet is
not refused.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

_REFUSED_CATEGORIES = {
    "Cc": "a control character",
    "Cf": "an invisible format character",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
WINDOWS_FORBIDDEN = ':*?"<>|'
"""Printable characters Windows refuses in a name (besides ``/`` and the backslash)."""
WINDOWS_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL"}
    | {f"{port}{digit}" for port in ("COM", "LPT") for digit in "0123456789\u00b9\u00b2\u00b3"}
)
"""Names Windows reserves for devices, with or without an extension."""


def _plain(text: str) -> bool:
    # isprintable() is False for every Cc, Cf, Zl and Zp character (and for some it allows), so
    # the common name takes one C-level scan.
    return text.isprintable() and "\\" not in text


def refused_character(name: str) -> str | None:
    """Why ``name`` (one component, or a whole path) breaks the rule for every path, or ``None``."""
    if _plain(name):
        return None
    for char in name:
        if char == "\\":
            return "contains a backslash (the path separator on Windows)"
        what = _REFUSED_CATEGORIES.get(unicodedata.category(char))
        if what is not None:
            return f"contains {what} (U+{ord(char):04X})"
    return None


def unportable_new_name(name: str) -> str | None:
    """Why ``name``, a name a tool would create, could not be held as it is on Windows or macOS."""
    for char in name:
        if char in WINDOWS_FORBIDDEN:
            return f"the new name has {char!r}, which Windows does not allow in a name"
    if name.split(".", 1)[0].rstrip(" ").upper() in WINDOWS_DEVICES:
        return f"the new name {name!r} is a device name Windows reserves"
    if name.endswith((".", " ")):
        end = "dot" if name.endswith(".") else "space"
        return f"the new name ends with a {end}, which Windows drops"
    if not unicodedata.is_normalized("NFC", name):
        composed = unicodedata.normalize("NFC", name)
        return f"the new name is not in Unicode normalization form C; write it as {composed!r}"
    return None


def shown(text: str) -> str:
    """``text`` with every character the rule refuses escaped (``\\x0a``, ``\\u202e``, ``\\\\``).

    For messages that name a refused path: they then show what it holds, and cannot be broken or
    reordered by it.
    """
    if _plain(text):
        return text
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif unicodedata.category(char) in _REFUSED_CATEGORIES:
            code = ord(char)
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
        else:
            out.append(char)
    return "".join(out)


def portable_root(root: Path) -> Path:
    """A pydantic validator for a configured root, which every path inside it starts with."""
    refused = refused_character(str(root))
    if refused is not None:
        raise ValueError(f"{shown(str(root))} {refused}, so no path inside it would be accepted")
    return root

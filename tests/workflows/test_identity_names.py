"""Canonical approver names on their own (``toolcalls.workflows.rules.identities``), and the
``[approvers]`` section, which must write names canonically."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from toolcalls.workflows.rules.approvers import ApproversSettings, resolve
from toolcalls.workflows.rules.identities import (
    InvalidIdentity,
    canonical_identity,
    canonical_name,
    same_identity,
)


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("alice", "alice"),
        ("Alice", "alice"),
        ("alice ", "alice"),
        ("  ALICE", "alice"),
        ("\uff41\uff4c\uff49\uff43\uff45", "alice"),  # full-width letters
        ("alice\u00a0", "alice"),  # no-break space
        ("Alice  Smith", "alice smith"),
        ("Alice\u3000Smith", "alice smith"),  # ideographic space
        ("Stra\u00dfe", "strasse"),
        ("\u212bngstr\u00f6m", "\u00e5ngstr\u00f6m"),  # angstrom sign: the letter
        ("alice@Example.COM", "alice@example.com"),
        ("", ""),
        ("   ", ""),
    ],
)
def test_spellings_of_one_name_are_one_name(name: str, canonical: str) -> None:
    assert canonical_identity(name) == canonical
    assert canonical_identity(canonical) == canonical


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("alice\u200b", "U+200B (ZERO WIDTH SPACE)"),
        ("\u200dalice", "U+200D (ZERO WIDTH JOINER)"),
        ("ali\u00adce", "U+00AD (SOFT HYPHEN)"),
        ("alice\u202e", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("\ufeffalice", "U+FEFF (ZERO WIDTH NO-BREAK SPACE)"),
        ("alice\n", "U+000A (unnamed)"),
        ("alice\x00", "U+0000 (unnamed)"),
        ("alice\u2028", "U+2028 (LINE SEPARATOR)"),
        ("alice\ufe0f", "U+FE0F (VARIATION SELECTOR-16)"),
        ("alice\u3164", "U+3164 (HANGUL FILLER)"),
        ("alice\ue000", "U+E000 (unnamed)"),
        ("alice\U000e0041", "U+E0041 (TAG LATIN CAPITAL LETTER A)"),
    ],
)
def test_a_name_with_an_invisible_character_is_refused(name: str, what: str) -> None:
    with pytest.raises(InvalidIdentity) as raised:
        canonical_identity(name)
    message = str(raised.value)
    assert message == f"{name!r}: a name cannot hold the invisible character {what}"
    assert "\n" not in message
    assert not same_identity(name, "alice")


def test_a_name_too_long_once_canonical_is_refused() -> None:
    assert canonical_identity("a" * 200 + "   ") == "a" * 200
    with pytest.raises(InvalidIdentity, match="a name is at most 200 characters"):
        canonical_identity("a" * 201)
    # One ligature is eighteen letters once canonical.
    with pytest.raises(InvalidIdentity, match="at most 200"):
        canonical_identity("\ufdfa" * 12)


def test_same_identity() -> None:
    assert same_identity("Alice ", "\uff41lice")
    assert not same_identity("alice", "bob")


def test_a_configured_name_must_be_canonical() -> None:
    assert canonical_name("alice") == "alice"
    with pytest.raises(ValueError, match=r"^ops: 'Alice': names are compared canonically") as e:
        canonical_name("Alice", "ops")
    assert str(e.value).endswith("write 'alice'")
    with pytest.raises(ValueError, match=r"^name: '': a name is 1-200 characters$"):
        canonical_name("")
    with pytest.raises(ValueError, match="invisible character U\\+200B"):
        canonical_name("alice\u200b")


def _approvers_error(section: dict[str, object]) -> str:
    with pytest.raises(ValidationError) as raised:
        ApproversSettings.model_validate(section)
    return str(raised.value)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"groups": {"ops": ["Alice"]}}, "group ops: 'Alice': names are compared canonically"),
        ({"groups": {"ops": ["bob "]}}, "write 'bob'"),
        ({"groups": {"ops": ["alice\u200b"]}}, "invisible character U+200B"),
        (
            {"rules": {"filesystem.write": {"approvers": ["\uff41lice"]}}},
            "rule filesystem.write: '\uff41lice': names are compared canonically",
        ),
        (
            {
                "rules": {
                    "filesystem.write": {
                        "approvers": ["alice"],
                        "escalate_after_seconds": 5,
                        "escalate_to": ["Carol"],
                    }
                }
            },
            "write 'carol'",
        ),
    ],
)
def test_approvers_refuse_names_not_written_canonically(
    section: dict[str, object], message: str
) -> None:
    assert message in _approvers_error(section)


def test_approvers_keep_groups_as_named_and_names_canonical() -> None:
    settings = ApproversSettings.model_validate(
        {
            "groups": {"Ops": ["alice", "bob"]},
            "rules": {"filesystem.write": {"approvers": ["Ops", "carol"], "min_approvals": 2}},
        }
    )
    rule = resolve(settings, "write_file", ["filesystem.write"])
    assert rule is not None
    assert rule.approvers == ["alice", "bob", "carol"]
    assert rule.shown == ["Ops", "carol"]

"""What a composed message may hold, checked when the call is planned, and the message built."""

from __future__ import annotations

import email
import hashlib
from datetime import UTC, datetime
from email import policy
from typing import Any

import pytest

from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.activities.email.compose import build_message, message_id_domain, message_id_for
from toolcalls.activities.email.family import EMAIL_TOOLS
from toolcalls.workflows.models.call import ErrorCode, PlanInput

GOOD: dict[str, Any] = {"to": ["bob@example.org"], "subject": "Hello", "body": "Hi Bob"}
CATALOG = Catalog(EMAIL_TOOLS, CatalogSettings(enabled=[spec.name for spec in EMAIL_TOOLS]))


def plan(tool: str, **changes: Any) -> tuple[ErrorCode | None, list[str], str]:
    outcome = CATALOG.plan(
        PlanInput(tool=tool, arguments={**GOOD, **changes}), default_ceiling(), frozenset()
    )
    if outcome.error is None:
        return None, [], ""
    return outcome.error.code, outcome.error.fixable_args, outcome.error.message


@pytest.mark.parametrize(
    ("changes", "argument", "says"),
    [
        ({"subject": "Hi\r\nBcc: victim@example.com"}, "subject", "line breaks"),
        ({"subject": "Hi\nBcc: victim@example.com"}, "subject", "line breaks"),
        ({"subject": "Hi\u2028there"}, "subject", "line breaks"),
        ({"subject": "Hi\x00"}, "subject", "control"),
        ({"subject": "   "}, "subject", "blank"),
        ({"subject": "x" * 1001}, "subject", "1000"),
        ({"to": ["a@example.com>\r\nRCPT TO:<b@example.org"]}, "to", "bare ASCII address"),
        ({"to": ["Bob <bob@example.org>"]}, "to", "bare ASCII address"),
        ({"to": ["jörg@example.de"]}, "to", "bare ASCII address"),
        ({"to": ['"quoted"@example.org']}, "to", "bare ASCII address"),
        ({"to": ["bob@localhost"]}, "to", "bare ASCII address"),
        ({"to": ["bob@example.org", "BOB@example.org"]}, "to", "listed twice"),
        ({"to": []}, "to", "at least 1"),
        ({"to": [f"u{n}@example.org" for n in range(51)]}, "to", "at most 50"),
        ({"body": " \n\t "}, "body", "blank"),
        ({"body": "line\rsmuggled"}, "body", "carriage return"),
        ({"body": "bell\x07"}, "body", "control character"),
        ({"body": "x" * 200_001}, "body", "200000"),
        ({"cc": ["carol@example.net"]}, "cc", "Extra inputs"),
        ({"attachments": []}, "attachments", "Extra inputs"),
    ],
)
def test_a_malformed_message_is_refused_at_plan(
    changes: dict[str, Any], argument: str, says: str
) -> None:
    for tool in ("send_email", "create_email_draft"):
        code, fixable, message = plan(tool, **changes)
        assert code is ErrorCode.INVALID_ARGUMENTS, (tool, changes)
        assert fixable == [argument]
        assert says in message


def test_what_a_message_may_hold() -> None:
    assert plan("send_email")[0] is None
    assert (
        plan("send_email", subject="Grüße, 你好 \u2013 ok", body="Tabs\tand\r\nCRLF\nlines")[0]
        is None
    )
    assert plan("send_email", to=[f"u{n}@example.org" for n in range(50)])[0] is None
    assert plan("send_email", to=["first.last+tag@mail.example.co.uk"])[0] is None


def test_the_message_id_is_derived_from_the_idempotency_key() -> None:
    key = "wf-1:call-7"
    digest = hashlib.sha256(key.encode()).hexdigest()[:40]
    assert message_id_for(key, "example.org") == f"<{digest}.toolcalls@example.org>"
    assert message_id_for(key, "example.org") == message_id_for(key, "example.org")
    assert message_id_for("wf-1:call-8", "example.org") != message_id_for(key, "example.org")
    assert message_id_domain("Me@Example.ORG") == "example.org"
    assert message_id_domain(None) == "toolcalls.invalid"


def test_the_built_message_is_plain_text_with_encoded_headers_and_no_injection() -> None:
    message = build_message(
        sender="me@example.org",
        to=["bob@example.org", "carol@example.net"],
        subject="Grüße aus München",
        body="Zeile eins\r\nZeile zwei \u2013 ü\n.\nEnde",
        message_id="<abc.toolcalls@example.org>",
        date=datetime(2026, 12, 1, 9, 30, tzinfo=UTC),
    )
    raw = message.as_bytes()
    assert raw.isascii()
    assert b"Subject: =?utf-8?" in raw
    assert b"\r\n" in raw
    assert b"\n" not in raw.replace(b"\r\n", b"")
    parsed = email.message_from_bytes(raw, policy=policy.default)
    assert parsed["Subject"] == "Grüße aus München"
    assert parsed["To"] == "bob@example.org, carol@example.net"
    assert parsed["Date"] == "Tue, 01 Dec 2026 09:30:00 +0000"
    assert parsed.get_content_type() == "text/plain"
    assert (
        parsed.get_content().replace("\r\n", "\n") == "Zeile eins\nZeile zwei \u2013 ü\n.\nEnde\n"
    )
    assert [k for k, _ in parsed.items()].count("Bcc") == 0

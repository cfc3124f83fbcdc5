"""Header fields the approver never saw: encoded words refused at plan, and the serialized
message checked against the preview before anything is written."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.activities.email.messages import ENCODED_WORD_SUBJECT as ATTACK
from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.activities.email.backend import MailNotAsPreviewed
from toolcalls.activities.email.compose import (
    MIME_FIELDS,
    build_message,
    check_as_previewed,
    composed,
    previewed_fields,
    serialized_fields,
)
from toolcalls.activities.email.family import EMAIL_TOOLS
from toolcalls.activities.email.outlook import graph_fields
from toolcalls.workflows.models.call import ErrorCode, PlanInput

REFUSAL = "encoded-word syntax (=?...?=) is not allowed; give the text as it should read"
GOOD: dict[str, Any] = {"to": ["ok@example.com"], "subject": "Quarterly report", "body": "Hi"}
CATALOG = Catalog(EMAIL_TOOLS, CatalogSettings(enabled=[spec.name for spec in EMAIL_TOOLS]))
SENDER = "me@example.org"
MESSAGE_ID = "<0123456789abcdef.toolcalls@example.org>"


def plan(tool: str, **changes: Any) -> tuple[ErrorCode | None, list[str], str]:
    outcome = CATALOG.plan(
        PlanInput(tool=tool, arguments={**GOOD, **changes}), default_ceiling(), frozenset()
    )
    if outcome.error is None:
        return None, [], ""
    return outcome.error.code, outcome.error.fixable_args, outcome.error.message


@pytest.mark.parametrize(
    ("changes", "argument"),
    [
        ({"subject": ATTACK}, "subject"),
        ({"subject": "Report =?UTF-8?B?UmVwbHktVG86IGFAZXZpbC5leGFtcGxl?= due"}, "subject"),
        ({"subject": "=?iso-8859-1*en?Q?Gr=FC=DFe?="}, "subject"),
        ({"to": ["=?utf-8?q?Eve?= <eve@example.org>"]}, "to"),
        ({"to": ["ok@example.com", "=?utf-8?q?x=0D=0ABcc:_v@evil.example?=@example.com"]}, "to"),
    ],
)
def test_encoded_words_are_refused_at_plan_for_send_and_draft(
    changes: dict[str, Any], argument: str
) -> None:
    for tool in ("send_email", "create_email_draft"):
        code, fixable, message = plan(tool, **changes)
        assert code is ErrorCode.INVALID_ARGUMENTS, (tool, changes)
        assert fixable == [argument]
        assert REFUSAL in message
        assert "\n" not in message


def test_the_reported_subject_is_refused_with_a_one_line_message_naming_the_field() -> None:
    for tool in ("send_email", "create_email_draft"):
        code, _, message = plan(tool, subject=ATTACK)
        assert code is ErrorCode.INVALID_ARGUMENTS
        assert message == f"{tool}: invalid arguments: subject: {REFUSAL}"


def test_the_check_refuses_fields_the_preview_did_not_show() -> None:
    # The plan refuses this subject now; built directly, it shows what the check stops.
    raw = build_message(
        sender=SENDER,
        to=["ok@example.com"],
        subject=ATTACK,
        body="Hi",
        message_id=MESSAGE_ID,
        date=None,
    ).as_bytes()
    previewed = previewed_fields(
        sender=SENDER, to=["ok@example.com"], subject=ATTACK, message_id=MESSAGE_ID
    )
    with pytest.raises(MailNotAsPreviewed) as caught:
        check_as_previewed(serialized_fields(raw), previewed, also=MIME_FIELDS)
    said = str(caught.value)
    for problem in (
        "reply-to not in the preview",
        "bcc not in the preview",
        "content-type repeated",
        "subject differs",
    ):
        assert problem in said
    assert said.endswith("nothing was written")
    with pytest.raises(MailNotAsPreviewed):
        composed(
            sender=SENDER,
            to=["ok@example.com"],
            subject=ATTACK,
            body="Hi",
            message_id=MESSAGE_ID,
            date=None,
        )


def test_the_check_passes_the_message_as_previewed_and_nothing_else() -> None:
    date = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    to = [f"user{n}@example.org" for n in range(50)]
    subject = ("Grüße — 報告 " * 90)[:1000]  # folded over many encoded words
    body = "Hallo\n" * 500
    raw = composed(
        sender=SENDER, to=to, subject=subject, body=body, message_id=MESSAGE_ID, date=date
    )
    sent = serialized_fields(raw)
    previewed = previewed_fields(sender=SENDER, to=to, subject=subject, message_id=MESSAGE_ID)
    also = MIME_FIELDS | {"date": frozenset({"Sun, 01 Mar 2026 09:30:00 +0000"})}
    check_as_previewed(sent, previewed, also=also)
    for changed, problem in (
        ([*sent, ("Reply-To", "attacker@evil.example")], "reply-to not in the preview"),
        ([*sent, ("Subject", subject)], "subject repeated"),
        ([f for f in sent if f[0] != "Message-ID"], "message-id missing"),
        ([(n, "victim@evil.example" if n == "To" else v) for n, v in sent], "to differs"),
        ([(n, "text/html" if n == "Content-Type" else v) for n, v in sent], "content-type differs"),
    ):
        with pytest.raises(MailNotAsPreviewed, match=problem):
            check_as_previewed(changed, previewed, also=also)


@pytest.mark.parametrize(
    "subject",
    [
        " Hello",
        "報cbäa報ca報c報a報報a報 aabäbaccc 報報報報ä報äa報報 c報bb報a b報ccc äccc報",
        "Is x =? y; a?=b",
    ],
)
def test_whitespace_the_generator_moves_at_a_fold_does_not_stop_a_send(subject: str) -> None:
    # Python's folder drops a leading space and some spaces between encoded words.
    composed(
        sender=SENDER,
        to=["ok@example.com"],
        subject=subject,
        body="Hi",
        message_id=MESSAGE_ID,
        date=None,
    )


def test_graph_properties_the_preview_did_not_show_are_refused() -> None:
    message: dict[str, Any] = {
        "subject": "Quarterly report",
        "body": {"contentType": "Text", "content": "Hi"},
        "toRecipients": [{"emailAddress": {"address": "ok@example.com"}}],
        "internetMessageId": MESSAGE_ID,
        "from": {"emailAddress": {"address": SENDER}},
    }
    previewed = previewed_fields(
        sender=SENDER, to=["ok@example.com"], subject="Quarterly report", message_id=MESSAGE_ID
    )
    text = {"body": frozenset({"Text"})}
    check_as_previewed(graph_fields(message), previewed, also=text)
    replying = {**message, "replyTo": [{"emailAddress": {"address": "attacker@evil.example"}}]}
    with pytest.raises(MailNotAsPreviewed, match="replyto not in the preview"):
        check_as_previewed(graph_fields(replying), previewed, also=text)
    html = {**message, "body": {"contentType": "HTML", "content": "<b>Hi</b>"}}
    with pytest.raises(MailNotAsPreviewed, match="body differs"):
        check_as_previewed(graph_fields(html), previewed, also=text)

"""The Gmail backend against responses in the Gmail API's documented formats."""

from __future__ import annotations

import base64
import email
from datetime import timedelta
from email import policy

import httpx
import pytest
from google.protobuf.json_format import MessageToJson
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.activities.email.messages import ENCODED_WORD_SUBJECT as ATTACK
from tests.activities.email.services import (
    REMOTE_TEXT,
    TOKEN,
    TOKEN_ENV,
    Routes,
    backend_tools,
    body_json,
    gmail_part,
)
from tests.activities.email.support import CALL, call, code_of, details, failure
from tests.support.harness import make_config, run_call
from tests.support.tools import ALL_FAMILIES, ALL_TOOL_NAMES
from toolcalls.activities.email.compose import message_id_for
from toolcalls.activities.email.models import SendEmailArgs
from toolcalls.activities.email.tools import EmailTools
from toolcalls.worker.run import build_worker
from toolcalls.workflows.models.call import CallStatus, ErrorCode

USER = "/gmail/v1/users/me"
MESSAGE = {"to": ["bob@example.org"], "subject": "Grüße", "body": "Hello Bob"}


def metadata(message_id: str, subject: str) -> dict[str, object]:
    return {
        "id": message_id,
        "threadId": f"t{message_id}",
        "labelIds": ["INBOX", "UNREAD"],
        "snippet": "…",
        "payload": {
            "mimeType": "text/plain",
            "headers": [
                {"name": "From", "value": "Alice <alice@example.com>"},
                {"name": "Subject", "value": subject},
                {"name": "Message-ID", "value": f"<{message_id}@mail.example.com>"},
            ],
        },
    }


async def test_a_page_lists_ids_with_their_headers_and_a_token_for_the_same_query() -> None:
    routes = Routes()
    routes.on(
        "GET",
        f"{USER}/messages",
        lambda r: httpx.Response(
            200,
            json={
                "messages": [{"id": "18a1", "threadId": "t1"}, {"id": "18a0", "threadId": "t0"}],
                "nextPageToken": "0934812",
                "resultSizeEstimate": 7,
            }
            if "pageToken" not in r.url.params
            else {"messages": [{"id": "17ff", "threadId": "t9"}], "resultSizeEstimate": 7},
        ),
    )
    for message_id, subject in (("18a1", "newest"), ("18a0", "older"), ("17ff", "oldest")):
        routes.on("GET", f"{USER}/messages/{message_id}", metadata(message_id, subject))
    mail = backend_tools("gmail", routes)
    first = await call(
        mail, "list_email_messages", {"query": "is:unread newer_than:7d", "max_results": 2}
    )
    assert [(i["id"], i["subject"], i["message_id"]) for i in first.items] == [
        ("18a1", "newest", "<18a1@mail.example.com>"),
        ("18a0", "older", "<18a0@mail.example.com>"),
    ]
    assert first.items[0]["from"] == "Alice <alice@example.com>"
    listing = routes.requests[0]
    assert listing.url.params["q"] == "is:unread newer_than:7d"
    assert listing.url.params["maxResults"] == "2"
    assert listing.headers["authorization"] == f"Bearer {TOKEN}"
    assert routes.requests[1].url.params.get_list("metadataHeaders") == [
        "From",
        "To",
        "Cc",
        "Date",
        "Subject",
        "Message-ID",
    ]
    assert routes.requests[1].url.params["format"] == "metadata"

    second = await call(
        mail,
        "list_email_messages",
        {"query": "is:unread newer_than:7d", "max_results": 2, "page_token": first.next_page_token},
    )
    assert [i["id"] for i in second.items] == ["17ff"]
    assert second.next_page_token is None
    assert routes.requests[3].url.params["pageToken"] == "0934812"

    error = await failure(
        mail,
        "list_email_messages",
        {"query": "other", "max_results": 2, "page_token": first.next_page_token},
    )
    assert code_of(error) is ErrorCode.INVALID_ARGUMENTS
    assert details(error)["fixable_args"] == ["page_token"]


async def test_a_read_decodes_nested_parts_and_never_fetches_an_attachment() -> None:
    payload = gmail_part(
        "multipart/mixed",
        parts=[
            gmail_part(
                "multipart/alternative",
                parts=[
                    gmail_part(
                        "text/plain", "Schöne Grüße".encode("iso-8859-1"), charset="iso-8859-1"
                    ),
                    gmail_part(
                        "text/html", b"<p>Sch&ouml;ne Gr&uuml;&szlig;e</p>", charset="utf-8"
                    ),
                ],
            ),
            gmail_part("application/pdf", b"x" * 5000, filename="a.pdf", attachment_id="ANGjdJ8"),
        ],
    )
    payload["headers"] += [
        {"name": "From", "value": "=?utf-8?q?J=C3=B6rg?= <joerg@example.de>"},
        {"name": "Subject", "value": "Grüße"},
        {"name": "Message-ID", "value": "<g-1@example.de>"},
    ]
    routes = Routes()
    routes.on(
        "GET",
        f"{USER}/messages/18a1",
        {
            "id": "18a1",
            "threadId": "t1",
            "snippet": "Sch&ouml;ne Gr&uuml;&szlig;e &amp; more",
            "sizeEstimate": 9000,
            "payload": payload,
        },
    )
    routes.on(
        "GET",
        f"{USER}/messages/html1",
        {"id": "html1", "snippet": "", "payload": gmail_part("text/html", b"<b>HTML-ONLY</b>")},
    )
    mail = backend_tools("gmail", routes)
    read = await call(mail, "read_email", {"message_id": "18a1"})
    assert read.body == "Schöne Grüße"
    assert read.headers["from"] == "Jörg <joerg@example.de>"
    assert read.headers["message_id"] == "<g-1@example.de>"
    assert read.snippet == "Schöne Grüße & more"
    assert (read.has_attachments, read.html_body_omitted) == (True, False)
    assert routes.requests[0].url.params["format"] == "full"
    html = await call(mail, "read_email", {"message_id": "html1"})
    assert (html.body, html.html_body_omitted) == ("", True)
    assert all("attachments" not in path for path in routes.paths())
    assert all(r.method == "GET" for r in routes.requests)  # nothing marks it read


async def test_service_errors_redirects_and_oversized_answers() -> None:
    routes = Routes()
    routes.on("GET", f"{USER}/messages/gone", {"error": {"code": 404, "message": REMOTE_TEXT}}, 404)
    routes.on("GET", f"{USER}/messages/auth", {"error": {"code": 401, "message": REMOTE_TEXT}}, 401)
    routes.on(
        "GET",
        f"{USER}/messages/busy",
        lambda _: httpx.Response(
            429, headers={"Retry-After": "7"}, json={"error": {"message": REMOTE_TEXT}}
        ),
    )
    routes.on(
        "GET",
        f"{USER}/messages/moved",
        lambda _: httpx.Response(302, headers={"Location": "https://evil.example/steal"}),
    )
    routes.on(
        "GET",
        f"{USER}/messages/huge",
        lambda _: httpx.Response(200, json={"id": "huge", "snippet": "x" * (3 * 1024 * 1024)}),
    )
    mail = backend_tools("gmail", routes)
    gone = await failure(mail, "read_email", {"message_id": "gone"})
    assert (code_of(gone), details(gone)["fixable_args"]) == (
        ErrorCode.INVALID_ARGUMENTS,
        ["message_id"],
    )
    auth = await failure(mail, "read_email", {"message_id": "auth"})
    assert code_of(auth) is ErrorCode.CONFIGURATION_ERROR
    busy = await failure(mail, "read_email", {"message_id": "busy"})
    assert code_of(busy) is ErrorCode.EXECUTION_FAILED
    assert busy.non_retryable is False
    assert busy.next_retry_delay == timedelta(seconds=7)
    moved = await failure(mail, "read_email", {"message_id": "moved"})
    assert code_of(moved) is ErrorCode.EXECUTION_FAILED
    assert "redirects are not followed" in moved.message
    huge = await failure(mail, "read_email", {"message_id": "huge"})
    assert code_of(huge) is ErrorCode.OUTPUT_TOO_LARGE
    for error in (gone, auth, busy, moved, huge):
        assert REMOTE_TEXT not in error.message
        assert REMOTE_TEXT not in str(error.details)
        assert TOKEN not in error.message
    assert "evil.example" not in " ".join(str(r.url) for r in routes.requests)


async def test_drafts_and_sends_carry_the_raw_message_with_its_derived_message_id() -> None:
    routes = Routes()
    routes.on(
        "POST",
        f"{USER}/drafts",
        {"id": "r-5531", "message": {"id": "18b2", "threadId": "t7", "labelIds": ["DRAFT"]}},
    )
    routes.on(
        "POST", f"{USER}/messages/send", {"id": "18b3", "threadId": "t8", "labelIds": ["SENT"]}
    )
    mail = backend_tools("gmail", routes, sender="me@example.org")
    drafted = await call(mail, "create_email_draft", MESSAGE)
    sent = await call(mail, "send_email", MESSAGE)
    expected = message_id_for(CALL.idempotency_key, "example.org")
    assert drafted.model_dump(exclude_none=True) == {
        "status": "drafted",
        "message_id": expected,
        "draft_id": "r-5531",
        "id": "18b2",
        "thread_id": "t7",
    }
    assert sent.model_dump(exclude_none=True) == {
        "status": "accepted",
        "message_id": expected,
        "id": "18b3",
        "thread_id": "t8",
    }
    raw_draft = body_json(routes.requests[0])["message"]["raw"]
    raw_sent = body_json(routes.requests[1])["raw"]
    for raw in (raw_draft, raw_sent):
        message = email.message_from_bytes(base64.urlsafe_b64decode(raw), policy=policy.default)
        assert message["Message-ID"] == expected
        assert message["From"] == "me@example.org"
        assert message["To"] == "bob@example.org"
        assert message["Subject"] == "Grüße"
        assert message.get_content().strip() == "Hello Bob"


async def test_a_send_the_service_answers_with_an_error_is_uncertain_and_names_its_message() -> (
    None
):
    routes = Routes()
    routes.on("POST", f"{USER}/messages/send", {"error": {"message": REMOTE_TEXT}}, 503)
    mail = backend_tools("gmail", routes, sender="me@example.org")
    error = await failure(mail, "send_email", MESSAGE)
    assert code_of(error) is ErrorCode.UNCERTAIN
    assert details(error)["output"] == {
        "message_id": message_id_for(CALL.idempotency_key, "example.org"),
        "status_code": 503,
    }
    assert len(routes.requests) == 1  # one attempt


async def test_through_the_workflow_the_token_is_nowhere_in_history(
    client: Client, task_queue: str
) -> None:
    routes = Routes()
    routes.on("GET", f"{USER}/messages", {"messages": [{"id": "18a1", "threadId": "t1"}]})
    routes.on("GET", f"{USER}/messages/18a1", metadata("18a1", "hello"))
    routes.on("POST", f"{USER}/messages/send", {"id": "18b3", "threadId": "t8"})
    tools = backend_tools("gmail", routes, sender="me@example.org")
    config = make_config(
        task_queue,
        tools=[*ALL_TOOL_NAMES, "list_email_messages", "send_email"],
        email={"backend": "gmail", "token_env": TOKEN_ENV, "sender": "me@example.org"},
        ceiling={"default_effect": "allow"},
    )
    worker = build_worker(client, config, families=ALL_FAMILIES, instances={EmailTools: tools})
    async with worker:
        listed = await run_call(client, task_queue, "list_email_messages", {})
        sent = await run_call(client, task_queue, "send_email", MESSAGE)
    assert listed.status is CallStatus.COMPLETED, listed.error
    assert sent.status is CallStatus.COMPLETED, sent.error
    assert sent.output["id"] == "18b3"
    assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in routes.requests)
    for result in (listed, sent):
        history = await client.get_workflow_handle(result.workflow_id).fetch_history()
        assert TOKEN not in "".join(MessageToJson(event) for event in history.events)


async def test_a_message_whose_headers_differ_from_the_preview_is_never_posted() -> None:
    # Arguments the plan would refuse, given straight to the activity.
    args = SendEmailArgs.model_construct(to=["ok@example.com"], subject=ATTACK, body="Hi")
    routes = Routes()
    routes.on("POST", f"{USER}/messages/send", {"id": "18b3", "threadId": "t8"})
    mail = backend_tools("gmail", routes, sender="me@example.org")
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(mail.send_email, args, CALL)
    assert code_of(caught.value) is ErrorCode.EXECUTION_FAILED
    assert "content-type repeated" in caught.value.message
    assert routes.requests == []

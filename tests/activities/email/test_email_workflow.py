"""Every email tool through a real ``ToolCallWorkflow``, allowed and approved, against Dovecot and
aiosmtpd; the password found nowhere in any call's history."""

from __future__ import annotations

import asyncio
import email
from email import policy
from pathlib import Path
from typing import Any

import pytest
import trustme
from google.protobuf.json_format import MessageToJson
from temporalio.client import Client

from tests.activities.email import messages
from tests.activities.email.dovecot import Account, Dovecot
from tests.activities.email.smtpd import Sink, SMTPServer, smtp_server
from tests.activities.email.support import PASSWORD_ENV
from tests.support.harness import (
    Handle,
    decision,
    make_config,
    pending_approval,
    run_call,
    running_worker,
    start_call,
)
from tests.support.tools import ALL_TOOL_NAMES
from toolcalls.activities.email.compose import message_id_for
from toolcalls.worker.config import Config
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    ToolCallResult,
)

EMAIL_TOOLS = ["list_email_messages", "read_email", "create_email_draft", "send_email"]
MESSAGE = {"to": ["bob@example.org"], "subject": "Lunch?", "body": "Noon at the usual place."}
ASK_READS = CapabilityPolicy(rules={"email.read": Effect.REQUIRE_APPROVAL})


@pytest.fixture
def smtp(mail_ca: trustme.CA, account: Account) -> Any:
    """The submission server of the account: same login and password as its IMAP server."""
    sink = Sink(refuse={"nobody@example.org"}, username=account.username, password=account.password)
    with smtp_server(mail_ca, "starttls", sink) as server:
        yield server


def email_config(
    task_queue: str,
    dovecot: Dovecot,
    account: Account,
    smtp: SMTPServer,
    ca_file: Path,
    **sections: Any,
) -> Config:
    return make_config(
        task_queue,
        tools=[*ALL_TOOL_NAMES, *EMAIL_TOOLS],
        email={
            "backend": "imap",
            "username": account.username,
            "password_env": PASSWORD_ENV,
            "imap_host": "127.0.0.1",
            "imap_port": dovecot.port,
            "smtp_host": "127.0.0.1",
            "smtp_port": smtp.port,
            "smtp_starttls": True,
            "sender": "me@example.org",
            "drafts_mailbox": "Drafts",
            "ca_file": str(ca_file),
        },
        **sections,
    )


async def history_text(client: Client, result: ToolCallResult) -> str:
    history = await client.get_workflow_handle(result.workflow_id).fetch_history()
    return "".join(MessageToJson(event) for event in history.events)


@pytest.fixture
def worker_secret(monkeypatch: pytest.MonkeyPatch, account: Account) -> str:
    """The worker reads one password from its environment, for IMAP and SMTP alike."""
    monkeypatch.setenv(PASSWORD_ENV, account.password)
    return account.password


async def test_every_tool_runs_when_allowed_and_the_password_stays_out_of_history(
    client: Client,
    task_queue: str,
    dovecot: Dovecot,
    account: Account,
    smtp: SMTPServer,
    ca_file: Path,
    worker_secret: str,
) -> None:
    dovecot.append(account, messages.PLAIN)
    unread = dovecot.flags(account)
    config = email_config(
        task_queue, dovecot, account, smtp, ca_file, ceiling={"default_effect": "allow"}
    )
    async with running_worker(client, config):
        listed = await run_call(client, task_queue, "list_email_messages", {"query": "numbers"})
        assert listed.status is CallStatus.COMPLETED, listed.error
        [item] = listed.output["items"]
        read = await run_call(client, task_queue, "read_email", {"message_id": item["id"]})
        drafted = await run_call(client, task_queue, "create_email_draft", MESSAGE)
        sent = await run_call(
            client,
            task_queue,
            "send_email",
            {**MESSAGE, "to": ["bob@example.org", "nobody@example.org"]},
        )
    results = [listed, read, drafted, sent]
    assert [r.status for r in results] == [CallStatus.COMPLETED] * 4, [r.error for r in results]
    assert [r.approval for r in results] == [None] * 4
    assert read.output["body"] == "The numbers are in.\nSee you Monday."
    assert read.output["headers"]["message_id"] == "<plain-1@example.com>"
    assert dovecot.flags(account) == unread

    draft_id = message_id_for(f"{drafted.workflow_id}:{drafted.call_id}", "example.org")
    assert drafted.output == {
        "status": "drafted",
        "message_id": draft_id,
        "mailbox": "Drafts",
        "existing": None,
        "id": None,
        "draft_id": None,
        "thread_id": None,
        "service": None,
    }
    [(flags, raw)] = dovecot.messages(account, "Drafts")
    assert "\\Draft" in flags
    assert email.message_from_bytes(raw)["Message-ID"] == draft_id

    sent_id = message_id_for(f"{sent.workflow_id}:{sent.call_id}", "example.org")
    assert sent.output["status"] == "partially_accepted"
    assert sent.output["message_id"] == sent_id
    assert sent.output["accepted"] == ["bob@example.org"]
    assert sent.output["refused"] == [{"address": "nobody@example.org", "code": 550}]
    [received] = smtp.sink.received
    assert email.message_from_bytes(received.content)["Message-ID"] == sent_id

    for result in results:
        assert worker_secret not in await history_text(client, result)
        assert worker_secret not in result.model_dump_json()


async def test_every_tool_runs_once_approved_and_a_write_s_preview_is_the_exact_message(
    client: Client,
    task_queue: str,
    dovecot: Dovecot,
    account: Account,
    smtp: SMTPServer,
    ca_file: Path,
    worker_secret: str,
) -> None:
    dovecot.append(account, messages.PLAIN)
    body = "Hi Bob,\r\n\r\nthe draft: é and ß stay as they are.\n-- \nme"
    async with running_worker(client, email_config(task_queue, dovecot, account, smtp, ca_file)):
        listed = await approved(
            await start_call(client, task_queue, "list_email_messages", {}, policy=ASK_READS)
        )
        message_id = listed.output["items"][0]["id"]
        read = await approved(
            await start_call(
                client, task_queue, "read_email", {"message_id": message_id}, policy=ASK_READS
            )
        )
        handle = await start_call(client, task_queue, "send_email", {**MESSAGE, "body": body})
        pending = await pending_approval(handle)
        sent = await approved(handle)
        draft_handle = await start_call(client, task_queue, "create_email_draft", MESSAGE)
        draft_pending = await pending_approval(draft_handle)
        drafted = await approved(draft_handle)

    assert [r.status for r in (listed, read, sent, drafted)] == [CallStatus.COMPLETED] * 4
    assert all(r.approval is not None for r in (listed, read, sent, drafted))
    expected = message_id_for(f"{sent.workflow_id}:{sent.call_id}", "example.org")
    assert pending.capabilities == ["email.send"]
    [shown] = pending.preview
    assert shown.kind == "email"
    assert shown.text == (
        "From: me@example.org\nTo: bob@example.org\nSubject: Lunch?\n"
        f"Message-ID: {expected}\n\nHi Bob,\n\nthe draft: é and ß stay as they are.\n-- \nme"
    )
    assert shown.data is not None
    assert (shown.data["message_id"], shown.data["from"]) == (expected, "me@example.org")
    assert sent.output["message_id"] == expected
    assert sent.output["status"] == "accepted"
    [received] = smtp.sink.received
    delivered = email.message_from_bytes(received.content, policy=policy.default)
    assert delivered["Message-ID"] == expected
    assert delivered.get_content().replace("\r\n", "\n") == body.replace("\r\n", "\n") + "\n"
    assert draft_pending.capabilities == ["email.write"]
    assert draft_pending.preview[0].data is not None
    assert draft_pending.preview[0].data["mailbox"] == "Drafts"
    assert drafted.output["message_id"] == draft_pending.preview[0].data["message_id"]
    assert len(dovecot.messages(account, "Drafts")) == 1
    for result in (listed, read, sent, drafted):
        assert worker_secret not in await history_text(client, result)


async def approved(handle: Handle) -> ToolCallResult:
    pending = await pending_approval(handle)
    await handle.execute_update(ToolCallWorkflow.decide, decision(pending))
    return await asyncio.wait_for(handle.result(), 60)


async def test_a_malformed_message_ends_at_plan_before_anyone_is_asked(
    client: Client,
    task_queue: str,
    dovecot: Dovecot,
    account: Account,
    smtp: SMTPServer,
    ca_file: Path,
    worker_secret: str,
) -> None:
    cases = [
        {**MESSAGE, "subject": "Hi\r\nBcc: victim@example.com"},
        {**MESSAGE, "to": ["a@example.com>\r\nRCPT TO:<b@example.org"]},
        {**MESSAGE, "to": ["Bob <bob@example.org>"]},
        {**MESSAGE, "to": []},
        {**MESSAGE, "body": "   \n"},
    ]
    async with running_worker(client, email_config(task_queue, dovecot, account, smtp, ca_file)):
        results = [await run_call(client, task_queue, "send_email", case) for case in cases]
    for result in results:
        assert result.status is CallStatus.FAILED
        assert result.error is not None
        assert result.error.code is ErrorCode.INVALID_ARGUMENTS
        assert result.approval is None
        assert not any(event.kind.startswith("approval") for event in result.events)
    assert [r.error.fixable_args for r in results if r.error] == [
        ["subject"],
        ["to"],
        ["to"],
        ["to"],
        ["body"],
    ]
    assert smtp.sink.received == []
    assert smtp.sink.logins == []

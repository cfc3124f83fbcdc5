"""Drafts appended to a real Dovecot, and what the IMAP backend reports when it cannot work."""

from __future__ import annotations

import asyncio
import email
from email import policy
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.activities.email import messages
from tests.activities.email.dovecot import Account, Dovecot
from tests.activities.email.messages import ENCODED_WORD_SUBJECT as ATTACK
from tests.activities.email.proxy import HeldProxy
from tests.activities.email.support import (
    CALL,
    PASSWORD_ENV,
    call,
    code_of,
    failure,
    imap_settings,
    tools_for,
)
from tests.worker.support import free_port
from toolcalls.activities.base import CallContext
from toolcalls.activities.email.compose import message_id_for
from toolcalls.activities.email.models import CreateEmailDraftArgs
from toolcalls.workflows.models.call import ErrorCode

DRAFT = {
    "to": ["bob@example.org", "carol@example.net"],
    "subject": "Grüße",
    "body": "Hi,\nsee you.",
}


async def test_a_draft_lands_in_the_drafts_folder_with_the_draft_flag(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    settings = imap_settings(dovecot, account, ca_file, sender="me@example.org")
    mail = tools_for(settings, {PASSWORD_ENV: account.password})
    result = await call(mail, "create_email_draft", DRAFT)
    expected_id = message_id_for(CALL.idempotency_key, "example.org")
    assert result.model_dump(exclude_none=True) == {
        "status": "drafted",
        "mailbox": "Drafts",
        "message_id": expected_id,
    }
    [(flags, raw)] = dovecot.messages(account, "Drafts")
    assert "\\Draft" in flags
    assert "\\Seen" not in flags
    draft = email.message_from_bytes(raw, policy=policy.default)
    assert draft["Message-ID"] == expected_id
    assert draft["From"] == "me@example.org"
    assert draft["To"] == "bob@example.org, carol@example.net"
    assert draft["Subject"] == "Grüße"
    assert draft.get_content().replace("\r\n", "\n") == "Hi,\nsee you.\n"
    assert dovecot.messages(account, "INBOX") == []


async def test_a_draft_already_in_the_folder_under_the_calls_message_id_is_reported(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    settings = imap_settings(dovecot, account, ca_file, sender="me@example.org")
    mail = tools_for(settings, {PASSWORD_ENV: account.password})
    first = await call(mail, "create_email_draft", DRAFT)
    # Another message whose Message-ID only contains this one's text is not a match.
    expected_id = message_id_for(CALL.idempotency_key, "example.org")
    other = f"<x{expected_id[1:-1]}x>"
    dovecot.append(account, messages.simple("Other", message_id=other), "Drafts")

    again = await call(mail, "create_email_draft", DRAFT)

    assert first.existing is None
    assert again.model_dump(exclude_none=True) == {
        "status": "drafted",
        "mailbox": "Drafts",
        "message_id": expected_id,
        "existing": True,
    }
    drafts = dovecot.messages(account, "Drafts")
    found = [email.message_from_bytes(raw)["Message-ID"] for _, raw in drafts]
    assert sorted(found) == sorted([expected_id, other])


async def test_a_draft_whose_headers_differ_from_the_preview_is_never_appended(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    # Arguments the plan would refuse, given straight to the activity.
    args = CreateEmailDraftArgs.model_construct(to=["ok@example.com"], subject=ATTACK, body="Hi")
    settings = imap_settings(dovecot, account, ca_file, sender="me@example.org")
    mail = tools_for(settings, {PASSWORD_ENV: account.password})
    with pytest.raises(ApplicationError) as caught:
        await ActivityEnvironment().run(mail.create_email_draft, args, CALL)
    assert code_of(caught.value) is ErrorCode.EXECUTION_FAILED
    assert "bcc not in the preview" in caught.value.message
    assert dovecot.messages(account, "Drafts") == []


async def test_the_sender_defaults_to_an_address_like_username(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    mail = tools_for(imap_settings(dovecot, account, ca_file), {PASSWORD_ENV: account.password})
    result = await call(mail, "create_email_draft", DRAFT)
    assert result.message_id == message_id_for(CALL.idempotency_key, "example.org")
    [(_, raw)] = dovecot.messages(account, "Drafts")
    assert email.message_from_bytes(raw)["From"] == account.username


async def test_a_drafts_folder_that_does_not_exist_is_never_created(
    dovecot: Dovecot, ca_file: Path
) -> None:
    account = dovecot.add_account()  # no Drafts folder
    settings = imap_settings(dovecot, account, ca_file)
    mail = tools_for(settings, {PASSWORD_ENV: account.password})
    error = await failure(mail, "create_email_draft", DRAFT)
    assert code_of(error) is ErrorCode.CONFIGURATION_ERROR
    assert "email.drafts_mailbox: Drafts does not exist" in error.message
    with dovecot.session(account) as imap:
        _, folders = imap.list()
    assert [line for line in folders if b"Drafts" in (line or b"")] == []


async def test_a_refused_login_names_the_setting_never_the_password(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    dovecot.append(account, messages.PLAIN)
    wrong = "not-the-password-5b1e"
    mail = tools_for(imap_settings(dovecot, account, ca_file), {PASSWORD_ENV: wrong})
    error = await failure(mail, "list_email_messages")
    assert code_of(error) is ErrorCode.CONFIGURATION_ERROR
    assert "refused the login" in error.message
    assert wrong not in error.message
    assert wrong not in str(error.details)
    missing = tools_for(imap_settings(dovecot, account, ca_file), {})
    error = await failure(missing, "list_email_messages")
    assert code_of(error) is ErrorCode.CONFIGURATION_ERROR
    assert f"email.password_env: environment variable {PASSWORD_ENV}" in error.message


async def test_a_password_file_is_read_again_for_every_operation(
    dovecot: Dovecot, account: Account, ca_file: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "password"
    secret.write_text("stale-password\n", encoding="utf-8")
    settings = imap_settings(dovecot, account, ca_file, password_env=None, password_file=secret)
    mail = tools_for(settings, {})
    assert code_of(await failure(mail, "list_email_messages")) is ErrorCode.CONFIGURATION_ERROR
    secret.write_text(account.password + "\n", encoding="utf-8")
    assert (await call(mail, "list_email_messages")).items == []


async def test_a_certificate_that_does_not_verify_is_the_deployment_s_to_fix(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    environ = {PASSWORD_ENV: account.password}
    untrusted = tools_for(imap_settings(dovecot, account, ca_file, ca_file=None), environ)
    error = await failure(untrusted, "list_email_messages")
    assert code_of(error) is ErrorCode.CONFIGURATION_ERROR
    assert "does not verify" in error.message
    assert "email.ca_file" in error.message
    # The certificate names 127.0.0.1 only: the same server under another name is refused.
    renamed = tools_for(imap_settings(dovecot, account, ca_file, imap_host="localhost"), environ)
    error = await failure(renamed, "list_email_messages")
    assert code_of(error) is ErrorCode.CONFIGURATION_ERROR
    assert "does not verify" in error.message


async def test_a_server_that_cannot_be_reached_is_a_retryable_outage(
    account: Account, dovecot: Dovecot, ca_file: Path
) -> None:
    closed = free_port()
    mail = tools_for(
        imap_settings(dovecot, account, ca_file, imap_port=closed), {PASSWORD_ENV: account.password}
    )
    error = await failure(mail, "read_email", {"message_id": "imap.0123456789abcdef.1.1"})
    assert code_of(error) is ErrorCode.NETWORK_UNAVAILABLE
    assert error.non_retryable is False
    assert "connection refused" in error.message
    draft = await failure(mail, "create_email_draft", DRAFT)
    assert code_of(draft) is ErrorCode.NETWORK_UNAVAILABLE  # certainly nothing was written


async def test_a_draft_cancelled_while_connecting_is_never_appended(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    """The connection's thread finishes setting up after the cancellation; it stops before the
    login, so nothing reaches the mailbox."""
    async with HeldProxy(dovecot.port) as proxy:
        settings = imap_settings(dovecot, account, ca_file, imap_port=proxy.port)
        mail = tools_for(settings, {PASSWORD_ENV: account.password})
        env = ActivityEnvironment()
        running = asyncio.create_task(call(mail, "create_email_draft", DRAFT, env=env))
        await asyncio.wait_for(proxy.accepted.wait(), 10)  # the thread waits for the greeting
        env.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(running, 10)
        logins = dovecot.log().count(f"Login: user=<{account.username}>")
        proxy.release.set()
        await asyncio.sleep(1.5)  # the thread has all the time it needs to log in and append
    assert dovecot.log().count(f"Login: user=<{account.username}>") == logins  # it never did
    assert dovecot.messages(account, "Drafts") == []


async def test_a_draft_whose_server_never_answers_times_out_without_doubt(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    """The deadline ended the operation before the draft could leave: timed out, not uncertain."""
    async with HeldProxy(dovecot.port) as proxy:
        settings = imap_settings(dovecot, account, ca_file, imap_port=proxy.port, timeout_seconds=1)
        mail = tools_for(settings, {PASSWORD_ENV: account.password})
        error = await failure(mail, "create_email_draft", DRAFT)
    assert code_of(error) is ErrorCode.TIMED_OUT
    assert "no answer within 1 s" in error.message
    assert dovecot.messages(account, "Drafts") == []


async def test_each_call_s_draft_has_the_message_id_of_its_own_key(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    mail = tools_for(imap_settings(dovecot, account, ca_file), {PASSWORD_ENV: account.password})
    other = CallContext("wf-email", "call-2", "wf-email:call-2", None, None)
    first = await call(mail, "create_email_draft", DRAFT)
    second = await call(mail, "create_email_draft", DRAFT, context=other)
    assert first.message_id != second.message_id
    ids = sorted(
        str(email.message_from_bytes(raw)["Message-ID"])
        for _, raw in dovecot.messages(account, "Drafts")
    )
    assert ids == sorted([first.message_id, second.message_id])

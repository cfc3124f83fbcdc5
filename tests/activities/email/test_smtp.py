"""Sending through a real SMTP server (aiosmtpd on loopback): TLS first, once, and what acceptance
means."""

from __future__ import annotations

import dataclasses
import email
import threading
from email import policy
from pathlib import Path
from typing import Any

import pytest
import trustme
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.activities.email.messages import ENCODED_WORD_SUBJECT as ATTACK
from tests.activities.email.smtpd import PASSWORD, PRIVATE_TEXT, USERNAME, Mode, Sink, smtp_server
from tests.activities.email.support import (
    CALL,
    PASSWORD_ENV,
    call,
    code_of,
    details,
    failure,
    tools_for,
)
from toolcalls.activities.email.compose import message_id_for
from toolcalls.activities.email.models import SendEmailArgs
from toolcalls.activities.email.settings import EmailSettings
from toolcalls.activities.email.tools import EmailTools
from toolcalls.workflows.models.call import ErrorCode

MESSAGE: dict[str, Any] = {
    "to": ["bob@example.org", "carol@example.net"],
    "subject": "Plan für Montag",
    "body": "Hello,\n\n.\nA line with a lone dot stays a line.\nBye",
}
EXPECTED_ID = message_id_for(CALL.idempotency_key, "example.org")


def sending(
    port: int, ca_file: Path | None, password: str = PASSWORD, **changes: Any
) -> EmailTools:
    values: dict[str, Any] = {
        "backend": "imap",
        "username": USERNAME,
        "password_env": PASSWORD_ENV,
        "imap_host": "imap.invalid",  # never contacted by a send
        "smtp_host": "127.0.0.1",
        "smtp_port": port,
        "ca_file": ca_file,
        "timeout_seconds": 20,
    }
    values.update(changes)
    return tools_for(EmailSettings.model_validate(values), {PASSWORD_ENV: password})


@pytest.mark.parametrize("mode", ["tls", "starttls"])
async def test_a_message_is_submitted_once_over_tls(
    mail_ca: trustme.CA, ca_file: Path, mode: Mode
) -> None:
    with smtp_server(mail_ca, mode) as server:
        mail = sending(server.port, ca_file, smtp_starttls=mode == "starttls")
        result = await call(mail, "send_email", MESSAGE)
    assert result.model_dump(exclude_none=True) == {
        "status": "accepted",
        "message_id": EXPECTED_ID,
        "accepted": ["bob@example.org", "carol@example.net"],
        "refused": [],
    }
    [received] = server.sink.received
    assert server.sink.logins == [(USERNAME, True)]
    assert received.mail_from == USERNAME
    assert received.rcpt_tos == MESSAGE["to"]
    sent = email.message_from_bytes(received.content, policy=policy.default)
    assert sent["Message-ID"] == EXPECTED_ID
    assert sent["From"] == USERNAME
    assert sent["To"] == "bob@example.org, carol@example.net"
    assert sent["Subject"] == "Plan für Montag"
    assert sent.get_content().replace("\r\n", "\n") == MESSAGE["body"] + "\n"


async def test_one_refused_recipient_is_a_partial_acceptance_and_nothing_is_resent(
    mail_ca: trustme.CA, ca_file: Path
) -> None:
    sink = Sink(refuse={"carol@example.net"})
    with smtp_server(mail_ca, "tls", sink) as server:
        result = await call(sending(server.port, ca_file), "send_email", MESSAGE)
    assert result.model_dump(exclude_none=True) == {
        "status": "partially_accepted",
        "message_id": EXPECTED_ID,
        "accepted": ["bob@example.org"],
        "refused": [{"address": "carol@example.net", "code": 550}],
    }
    assert PRIVATE_TEXT not in result.model_dump_json()
    assert sink.rcpts == ["bob@example.org", "carol@example.net"]
    [received] = sink.received
    assert received.rcpt_tos == ["bob@example.org"]


async def test_every_recipient_refused_is_a_failed_call_with_the_refusals(
    mail_ca: trustme.CA, ca_file: Path
) -> None:
    sink = Sink(refuse=set(MESSAGE["to"]))
    with smtp_server(mail_ca, "tls", sink) as server:
        error = await failure(sending(server.port, ca_file), "send_email", MESSAGE)
    assert code_of(error) is ErrorCode.EXECUTION_FAILED
    assert details(error)["output"] == {
        "status": "rejected",
        "message_id": EXPECTED_ID,
        "accepted": [],
        "refused": [
            {"address": "bob@example.org", "code": 550},
            {"address": "carol@example.net", "code": 550},
        ],
    }
    assert PRIVATE_TEXT not in error.message
    assert PRIVATE_TEXT not in str(error.details)
    assert sink.received == []


async def test_a_server_without_starttls_gets_no_password_and_no_message(
    mail_ca: trustme.CA, ca_file: Path
) -> None:
    with smtp_server(mail_ca, "plain") as server:
        error = await failure(
            sending(server.port, ca_file, smtp_starttls=True), "send_email", MESSAGE
        )
        implicit = await failure(sending(server.port, ca_file), "send_email", MESSAGE)
    assert code_of(error) is ErrorCode.CONFIGURATION_ERROR
    assert "does not offer STARTTLS" in error.message
    # Implicit TLS against a plaintext server: the handshake fails, nothing else is said.
    assert code_of(implicit) is ErrorCode.NETWORK_UNAVAILABLE
    assert server.sink.logins == []
    assert server.sink.rcpts == []
    assert server.sink.received == []


async def test_a_refused_login_or_an_untrusted_certificate_sends_nothing(
    mail_ca: trustme.CA, ca_file: Path
) -> None:
    with smtp_server(mail_ca, "starttls") as server:
        wrong = sending(server.port, ca_file, "wrong-password-81c2", smtp_starttls=True)
        refused = await failure(wrong, "send_email", MESSAGE)
        untrusted = await failure(
            sending(server.port, None, smtp_starttls=True), "send_email", MESSAGE
        )
    assert code_of(refused) is ErrorCode.CONFIGURATION_ERROR
    assert "refused the login" in refused.message
    assert "wrong-password-81c2" not in refused.message
    assert code_of(untrusted) is ErrorCode.CONFIGURATION_ERROR
    assert "does not verify" in untrusted.message
    # The wrong password was tried (once per mechanism the server offers), over TLS only.
    assert set(server.sink.logins) == {(USERNAME, True)}
    assert server.sink.received == []


async def test_a_connection_lost_after_the_data_is_uncertain_and_names_the_message(
    mail_ca: trustme.CA, ca_file: Path
) -> None:
    class Dropping(Sink):
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            await super().handle_DATA(server, session, envelope)
            server.transport.close()  # accepted and stored, but the answer never arrives
            return "250 never sent"

    sink = Dropping()
    with smtp_server(mail_ca, "tls", sink) as server:
        error = await failure(sending(server.port, ca_file), "send_email", MESSAGE)
    assert code_of(error) is ErrorCode.UNCERTAIN
    assert details(error)["output"] == {"message_id": EXPECTED_ID}
    assert EXPECTED_ID in error.message
    assert len(sink.received) == 1


async def test_a_message_over_max_message_bytes_is_refused_before_connecting(
    mail_ca: trustme.CA, ca_file: Path
) -> None:
    with smtp_server(mail_ca, "tls") as server:
        mail = sending(server.port, ca_file, max_message_bytes=16_384)
        error = await failure(mail, "send_email", {**MESSAGE, "body": "x" * 20_000})
    assert code_of(error) is ErrorCode.INVALID_ARGUMENTS
    assert details(error)["fixable_args"] == ["body"]
    assert server.sink.logins == []
    assert server.sink.received == []


async def test_a_server_that_holds_the_message_past_the_deadline_leaves_the_send_uncertain(
    mail_ca: trustme.CA, ca_file: Path
) -> None:
    sink = Sink(hold=threading.Event())
    with smtp_server(mail_ca, "tls", sink) as server:
        error = await failure(
            sending(server.port, ca_file, timeout_seconds=1), "send_email", MESSAGE
        )
        sink.hold.set()  # type: ignore[union-attr]
    assert code_of(error) is ErrorCode.UNCERTAIN
    assert details(error)["output"] == {"message_id": EXPECTED_ID}
    assert len(sink.received) == 1


async def test_settings_changed_since_the_approval_stop_the_send(
    mail_ca: trustme.CA, ca_file: Path
) -> None:
    with smtp_server(mail_ca, "tls") as server:
        approved = sending(server.port, ca_file, sender="me@example.org")
        args = SendEmailArgs.model_validate(MESSAGE)
        prepared = await ActivityEnvironment().run(approved.prepare_send_email, args, CALL)
        changed = sending(server.port, ca_file, sender="other@example.net")
        held = dataclasses.replace(CALL, precondition=prepared.precondition)
        error = await failure(changed, "send_email", MESSAGE, context=held)
        same = await call(approved, "send_email", MESSAGE, context=held)
    assert code_of(error) is ErrorCode.PRECONDITION_FAILED
    assert "nothing was sent" in error.message
    assert same.status == "accepted"
    assert len(server.sink.received) == 1


async def test_a_plain_non_ascii_subject_arrives_decoded_with_exactly_the_expected_headers(
    mail_ca: trustme.CA, ca_file: Path
) -> None:
    with smtp_server(mail_ca, "tls") as server:
        mail = sending(server.port, ca_file)
        result = await call(mail, "send_email", {**MESSAGE, "subject": "Grüße — 報告"})
    assert result.status == "accepted"
    [received] = server.sink.received
    head = received.content.partition(b"\r\n\r\n")[0]
    assert head.isascii()
    sent = email.message_from_bytes(received.content, policy=policy.default)
    assert sent.keys() == [
        "From",
        "To",
        "Subject",
        "Date",
        "Message-ID",
        "Content-Type",
        "Content-Transfer-Encoding",
        "MIME-Version",
    ]
    assert sent["Subject"] == "Grüße — 報告"
    assert sent["To"] == "bob@example.org, carol@example.net"
    assert sent["Content-Type"] == 'text/plain; charset="utf-8"'


async def test_a_message_whose_headers_differ_from_the_preview_is_never_submitted(
    mail_ca: trustme.CA, ca_file: Path
) -> None:
    # Arguments the plan would refuse, given straight to the activity.
    args = SendEmailArgs.model_construct(to=["ok@example.com"], subject=ATTACK, body="Hi")
    with smtp_server(mail_ca, "tls") as server:
        mail = sending(server.port, ca_file)
        with pytest.raises(ApplicationError) as caught:
            await ActivityEnvironment().run(mail.send_email, args, CALL)
    assert code_of(caught.value) is ErrorCode.EXECUTION_FAILED
    assert "reply-to not in the preview" in caught.value.message
    assert "nothing was written" in caught.value.message
    assert server.sink.logins == []
    assert server.sink.received == []

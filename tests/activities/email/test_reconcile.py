"""Reconciling an uncertain send: the worker is killed while the SMTP server holds the message,
the server then accepts it and files it in the account's Sent folder (as Gmail, Outlook and many
providers do with submitted mail); ``reconcile`` finds it there by its Message-ID, records the
answer, and the message is never sent again."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trustme
from temporalio.client import Client

from tests.activities.email.crash import (
    LOST_AFTER,
    email_section,
    host_config,
    lose_host_during_send,
)
from tests.activities.email.dovecot import Account, Dovecot
from tests.activities.email.smtpd import Sink, smtp_server
from tests.activities.email.support import PASSWORD_ENV
from tests.support.harness import make_config, run_call, running_worker, start_call
from tests.support.tools import ALL_TOOL_NAMES
from tests.worker.support import Spawned, command, hermetic_env, one_line
from toolcalls.activities.email.compose import message_id_for
from toolcalls.workflows.call.reconcile import ToolCallReconcileWorkflow
from toolcalls.workflows.models.call import CallStatus
from toolcalls.workflows.models.reconcile import LookupInput, ReconcileRequest, Settled
from toolcalls.workflows.reach.client import NotReconcilable, ToolCallClient


@dataclass
class FilingSink(Sink):
    """Takes the message and, once released, files it in the account's Sent folder, whether or
    not its client is still connected (the server has accepted it)."""

    dovecot: Dovecot | None = None
    account: Account | None = None

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        content: bytes = envelope.content
        threading.Thread(target=self._file, args=(content,), daemon=True).start()
        return await super().handle_DATA(server, session, envelope)

    def _file(self, content: bytes) -> None:
        assert self.hold is not None
        assert self.dovecot is not None
        assert self.account is not None
        if self.hold.wait(120):
            self.dovecot.append(self.account, content, "Sent")


async def test_a_send_lost_with_its_worker_is_found_in_sent_and_the_answer_recorded(
    client: Client,
    task_queue: str,
    tmp_path: Path,
    mail_ca: trustme.CA,
    ca_file: Path,
    dovecot: Dovecot,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    account = dovecot.add_account("Sent")
    monkeypatch.setenv(PASSWORD_ENV, account.password)  # for the workers of this process
    host_queue = f"{task_queue}-host"
    sink = FilingSink(
        hold=threading.Event(),
        username=account.username,
        password=account.password,
        dovecot=dovecot,
        account=account,
    )
    shared = {
        "tools": [*ALL_TOOL_NAMES, "send_email"],
        "state_dir": str(tmp_path / "state"),
        "activities": {
            "task_queues": {"send_email": host_queue},
            "timeouts": {"send_email": LOST_AFTER},
        },
        "ceiling": {"default_effect": "allow"},
    }
    address = client.service_client.config.target_host
    calls = ToolCallClient(client, task_queue=task_queue)
    with smtp_server(mail_ca, "tls", sink) as server:
        section = email_section(
            server.port,
            ca_file,
            username=account.username,
            imap_port=dovecot.port,
            sent_mailbox="Sent",
        )
        host = Spawned(
            [
                sys.executable,
                *("-m", "toolcalls.worker", "--config"),
                str(host_config(tmp_path, task_queue, host_queue, section)),
                *("--address", address),
            ],
            hermetic_env(tmp_path, **{PASSWORD_ENV: account.password}),
            cwd=tmp_path,
        )
        host_worker = make_config(
            task_queue,
            **shared,
            email=section,
            worker={"queue": host_queue, "serve_workflows": False},
        )
        try:
            await asyncio.to_thread(host.wait_for_line, "polling task queue", 60)
            config = make_config(task_queue, **shared, email=section)
            async with running_worker(client, config):
                handle = await start_call(
                    client,
                    task_queue,
                    "send_email",
                    {"to": ["bob@example.org"], "subject": "Once", "body": "Only once."},
                )
                await lose_host_during_send(host, sink, handle)
                result = await asyncio.wait_for(handle.result(), 30)
                assert result.status is CallStatus.UNCERTAIN

                async with running_worker(client, host_worker):
                    # Still held: not in Sent yet, so the call stays uncertain.
                    before = await calls.reconcile(result.workflow_id)
                    cli_before = await command(
                        tmp_path,
                        address,
                        *("reconcile", result.workflow_id, "--task-queue", task_queue),
                    )
                    sink.hold.set()  # type: ignore[union-attr]
                    await _filed(dovecot, account)
                    after = await calls.reconcile(result.workflow_id)
                    again = await calls.reconcile(result.workflow_id)
                    view = await calls.status(result.workflow_id)
                    shown = await command(
                        tmp_path, address, "show", result.workflow_id, "--task-queue", task_queue
                    )
                    cli = await command(
                        tmp_path,
                        address,
                        "reconcile",
                        result.workflow_id,
                        "--json",
                        "--task-queue",
                        task_queue,
                    )
        finally:
            host.kill()

    expected = message_id_for(f"{result.workflow_id}:{result.call_id}", "example.org")
    assert result.output == {"tool": "send_email", "message_id": expected}
    assert before.outcome is Settled.NOT_FOUND
    assert before.checked == (
        f"searched imap folder Sent (imap) for Message-ID {expected}: not there"
    )
    assert before.evidence is None
    assert after.outcome is Settled.FOUND
    assert after.evidence == {"message_id": expected, "mailbox": "Sent", "uid": 1}
    assert again == after  # recorded: returned as it is, not looked up again
    assert view.state.result == result  # the call's own result is unchanged
    assert view.reconciliation == after
    assert cli_before.code == 1, cli_before.stderr
    assert "outcome: not found: still uncertain" in cli_before.stdout
    assert shown.code == 0, shown.stderr
    assert "reconciliation:\n" in shown.stdout
    assert "found: the effect happened" in shown.stdout
    assert cli.code == 0, cli.stderr
    assert json.loads(cli.stdout)["outcome"] == "found"
    # The write never ran again: one message reached the server.
    assert len(sink.received) == 1
    assert sink.received[0].message["Message-ID"] == expected


async def _filed(dovecot: Dovecot, account: Account) -> None:
    for _ in range(200):
        if await asyncio.to_thread(dovecot.messages, account, "Sent"):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the accepted message was never filed in Sent")


async def test_only_an_uncertain_call_can_be_reconciled(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    calls = ToolCallClient(client, task_queue=task_queue)
    async with running_worker(client, make_config(task_queue)):
        done = await run_call(client, task_queue, "calculator", {"expression": "1+1"})
    assert done.status is CallStatus.COMPLETED
    with pytest.raises(NotReconcilable) as caught:
        await calls.reconcile(done.workflow_id)
    assert str(caught.value) == (
        f"{done.workflow_id} ended completed: only an uncertain call can be reconciled"
    )
    address = client.service_client.config.target_host
    cli = await command(tmp_path, address, "reconcile", done.workflow_id)
    assert cli.code == 1
    assert one_line(cli.stderr) == (
        f"toolcalls: reconcile: {done.workflow_id} ended completed: only an uncertain call can "
        "be reconciled"
    )
    view = await calls.status(done.workflow_id)
    assert view.reconciliation is None


async def test_an_imap_send_without_a_sent_folder_is_unchecked_naming_the_setting(
    client: Client, task_queue: str, tmp_path: Path, ca_file: Path, dovecot: Dovecot
) -> None:
    account = dovecot.add_account()
    key = "wf-lost:call-1"
    section = email_section(
        2525, ca_file, username=account.username, imap_port=dovecot.port
    )  # no sent_mailbox
    config = make_config(
        task_queue,
        tools=[*ALL_TOOL_NAMES, "send_email"],
        state_dir=str(tmp_path / "state"),
        email=section,
        ceiling={"default_effect": "allow"},
    )
    request = ReconcileRequest(
        lookup=LookupInput(
            workflow_id="wf-lost",
            call_id="call-1",
            tool="send_email",
            idempotency_key=key,
            output={"tool": "send_email", "message_id": message_id_for(key, "example.org")},
        ),
        task_queue=task_queue,
    )
    async with running_worker(client, config):
        answer = await client.execute_workflow(
            ToolCallReconcileWorkflow.run,
            request,
            id=f"wf-lost-{task_queue}/reconcile",
            task_queue=task_queue,
        )
    assert answer.outcome is Settled.UNCHECKED
    assert answer.checked == (
        "send_email: email.sent_mailbox: looking for a sent message needs the folder the server "
        "files sent mail in"
    )
    assert answer.evidence is None

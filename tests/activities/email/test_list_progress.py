"""``list_email_messages`` publishes the messages it has scanned while a listing runs.

IMAP: a real Dovecot mailbox of 250 messages, reached through a slow link (every piece the server
sends arrives late), listed through a real ``ToolCallWorkflow``: a reader following the call sees
growing ``messages`` counts, one per batch of headers at most, of the page's total, and the result
is the page the same listing gives without progress; ``toolcalls watch`` and an MCP progress
message show the counts. Gmail and Outlook (HTTP transport mocked):
the counts each reports page by page, and a backend without ``on_progress`` still lists.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from tests.activities.email import messages
from tests.activities.email.custom_backend import MemoryMail
from tests.activities.email.dovecot import Account, Dovecot, quoted
from tests.activities.email.proxy import SlowLink
from tests.activities.email.services import Routes, backend_for
from tests.activities.email.support import (
    PASSWORD_ENV,
    call,
    dump,
    imap_settings,
    tools_for,
)
from tests.activities.email.test_gmail import USER, metadata
from tests.activities.email.test_outlook import ME, graph_message
from tests.support.harness import make_config, running_worker, start_call
from tests.support.tools import ALL_TOOL_NAMES
from tests.worker.support import command
from toolcalls.activities.email.imap import IMAPEmail
from toolcalls.activities.email.imap_search import HEADER_BATCH
from toolcalls.activities.email.settings import EmailSettings
from toolcalls.activities.email.tools import EmailTools
from toolcalls.activities.progress import PUBLISH_INTERVAL
from toolcalls.worker.mcp.follow import output_text
from toolcalls.workflows.models.call import CallStatus, ToolCallResult
from toolcalls.workflows.models.progress import ProgressItem, ProgressKind
from toolcalls.workflows.reach.follow import follow

MAILBOX, PAGE = 250, 100
DELAY = 0.4
"""Seconds each piece from the server is held: four header batches span several ticks."""


def fill(dovecot: Dovecot, account: Account, count: int) -> None:
    """``count`` messages in INBOX, appended in one session."""
    with dovecot.session(account) as imap:
        for n in range(count):
            status, data = imap.append(quoted("INBOX"), None, None, messages.simple(f"message {n}"))
            assert status == "OK", data


def list_config(task_queue: str, account: Account, port: int, ca_file: Path) -> Any:
    return make_config(
        task_queue,
        tools=[*ALL_TOOL_NAMES, "list_email_messages"],
        ceiling={"default_effect": "allow"},
        email={
            "backend": "imap",
            "username": account.username,
            "password_env": PASSWORD_ENV,
            "imap_host": "127.0.0.1",
            "imap_port": port,
            "ca_file": str(ca_file),
        },
    )


async def test_a_slow_imap_listing_shows_the_messages_it_has_scanned(
    client: Client,
    task_queue: str,
    dovecot: Dovecot,
    account: Account,
    ca_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    fill(dovecot, account, MAILBOX)
    monkeypatch.setenv(PASSWORD_ENV, account.password)
    environ = {PASSWORD_ENV: account.password}
    async with SlowLink(dovecot.port, DELAY) as link:
        async with running_worker(client, list_config(task_queue, account, link.port, ca_file)):
            handle = await start_call(
                client, task_queue, "list_email_messages", {"max_results": PAGE}
            )
            events = [event async for event in follow(client, handle.id)]
        # The same listing with nowhere to publish (outside a call), through the same link.
        slow = imap_settings(dovecot, account, ca_file, imap_port=link.port)
        mail = tools_for(slow, environ)
        expected = await call(mail, "list_email_messages", {"max_results": PAGE})
    async with running_worker(client, list_config(task_queue, account, dovecot.port, ca_file)):
        quick = await start_call(client, task_queue, "list_email_messages", {"max_results": PAGE})
        fast = await quick.result()
    direct = imap_settings(dovecot, account, ca_file)
    unhurried = await call(tools_for(direct, environ), "list_email_messages", {"max_results": PAGE})

    result = events[-1]
    assert isinstance(result, ToolCallResult)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output == dump(expected)  # the stream sits beside an unchanged result
    subjects = [item["subject"] for item in result.output["items"]]
    assert subjects == [f"message {n}" for n in range(MAILBOX - 1, MAILBOX - 1 - PAGE, -1)]
    assert result.output["next_page_token"] is not None

    items = [event for event in events[:-1] if isinstance(event, ProgressItem)]
    assert len(items) == len(events) - 1  # no gap, nothing but items
    assert {item.kind for item in items} == {ProgressKind.MESSAGES}
    counts = [item.done or 0 for item in items]
    # The header batches span several ticks: at least two counts, one a batch at most.
    assert 2 <= len(counts) <= PAGE // HEADER_BATCH
    assert counts == sorted(set(counts))  # increasing
    assert all(0 < done <= PAGE and done % HEADER_BATCH == 0 for done in counts)
    assert {item.total for item in items} == {PAGE}
    assert [item.offset for item in items] == list(range(len(items)))

    # Every reader shows the counts: watch (from history, the call having ended), MCP.
    address = client.service_client.config.target_host
    watched = await command(tmp_path, address, "watch", handle.id)
    assert watched.code == 0, watched.stderr
    assert watched.stdout == ""
    assert watched.stderr.splitlines() == [
        *(f"[messages {done}/{PAGE}]" for done in counts),
        f"toolcalls: call {handle.id}: completed",
    ]
    assert output_text(items[0]) == f"{counts[0]} of {PAGE} messages"

    # The same listing over a fast link ends before the first tick: no signal, same page. (On a
    # machine too busy for the listing to end within the tick, a batch is due; then only the
    # page is checked.)
    assert fast.status is CallStatus.COMPLETED
    assert fast.output == dump(unhurried)
    history = await quick.fetch_history()
    signaled = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    scheduled, ended = (
        event.event_time.ToDatetime()
        for event in history.events
        if event.event_type
        in (
            EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
            EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
        )
    )
    if (ended - scheduled).total_seconds() < PUBLISH_INTERVAL:
        assert signaled not in [event.event_type for event in history.events]


async def test_imap_reports_each_batch_of_headers_it_fetched(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    fill(dovecot, account, 60)
    backend = IMAPEmail(imap_settings(dovecot, account, ca_file), {PASSWORD_ENV: account.password})
    reported: list[tuple[int, int | None]] = []
    page = await backend.list_messages(
        query="", max_results=60, page_token=None, on_progress=lambda *n: reported.append(n)
    )
    assert len(page["items"]) == 60
    assert reported == [(25, 60), (50, 60), (60, 60)]  # on the event loop, in order
    reported.clear()
    nothing = await backend.list_messages(
        query="absent", max_results=60, page_token=None, on_progress=lambda *n: reported.append(n)
    )
    assert nothing["items"] == []
    assert reported == []  # no header to fetch, nothing scanned


async def test_the_count_reaches_the_heartbeat(
    dovecot: Dovecot, account: Account, ca_file: Path
) -> None:
    fill(dovecot, account, 60)
    beats: list[dict[str, Any]] = []
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=0.3))
    env.on_heartbeat = lambda *details: beats.append(details[0])
    async with SlowLink(dovecot.port, DELAY) as link:
        settings = imap_settings(dovecot, account, ca_file, imap_port=link.port)
        mail = tools_for(settings, {PASSWORD_ENV: account.password})
        listed = await call(mail, "list_email_messages", {"max_results": 60}, env=env)
    assert len(listed.items) == 60
    counts = [beat["messages"] for beat in beats if "messages" in beat]
    assert beats[0] == {"tool": "list_email_messages"}  # nothing scanned yet
    assert counts
    assert counts == sorted(counts)
    assert set(counts) <= {25, 50, 60}


async def test_gmail_counts_each_message_whose_headers_arrived() -> None:
    routes = Routes()
    ids = [f"18a{n}" for n in range(5)]
    routes.on(
        "GET", f"{USER}/messages", {"messages": [{"id": i} for i in ids], "nextPageToken": "9"}
    )
    for message_id in ids:
        routes.on("GET", f"{USER}/messages/{message_id}", metadata(message_id, message_id))
    backend = backend_for("gmail", routes)
    reported: list[tuple[int, int | None]] = []
    page = await backend.list_messages(
        query="", max_results=5, page_token=None, on_progress=lambda *n: reported.append(n)
    )
    assert [item["id"] for item in page["items"]] == ids
    assert reported == [(n, 5) for n in range(6)]  # the page's ids read, then one per message


async def test_outlook_counts_each_page_it_read() -> None:
    routes = Routes()
    routes.on(
        "GET", f"{ME}/messages", {"value": [graph_message(f"AAMk{n}", f"m{n}") for n in range(3)]}
    )
    backend = backend_for("outlook", routes)
    reported: list[tuple[int, int | None]] = []
    page = await backend.list_messages(
        query="", max_results=3, page_token=None, on_progress=lambda *n: reported.append(n)
    )
    assert len(page["items"]) == 3
    assert reported == [(3, 3)]


async def test_a_backend_without_on_progress_lists_as_before() -> None:
    settings = EmailSettings.model_validate(
        {"backend": "tests.activities.email.custom_backend:MemoryMail", "options": {"owner": "a"}}
    )
    mail = EmailTools(settings, MemoryMail("a"))
    result = await call(mail, "list_email_messages", {"query": "again"})
    assert [item["id"] for item in result.items] == ["m2"]

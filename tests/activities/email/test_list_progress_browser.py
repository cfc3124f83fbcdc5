"""An email listing's ``messages`` count on its inbox page, in a real browser (headless Chromium).

A slow IMAP listing (Dovecot behind a slow link) publishes its counts; once it has ended, its call
page in the inbox shows the last one, read from the call's history.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import BrowserContext, expect
from temporalio.client import Client

from tests.activities.email.dovecot import Account, Dovecot
from tests.activities.email.proxy import SlowLink
from tests.activities.email.support import PASSWORD_ENV
from tests.activities.email.test_list_progress import DELAY, PAGE, fill, list_config
from tests.support.harness import running_worker, start_call
from tests.worker.inbox import test_browser
from tests.worker.inbox.support import call_path
from tests.worker.inbox.test_browser import Served, log_in, new_page
from toolcalls.workflows.models.call import CallStatus
from toolcalls.workflows.models.progress import ProgressItem, ProgressKind
from toolcalls.workflows.reach.follow import follow

browser, served, context = test_browser.browser, test_browser.served, test_browser.context
"""The browser tests' fixtures: Chromium, an inbox process with its worker, a browser context."""


async def test_the_call_page_shows_the_messages_scanned(
    client: Client,
    task_queue: str,
    dovecot: Dovecot,
    account: Account,
    ca_file: Path,
    monkeypatch: pytest.MonkeyPatch,
    served: Served,
    context: BrowserContext,
) -> None:
    fill(dovecot, account, PAGE)
    monkeypatch.setenv(PASSWORD_ENV, account.password)
    async with (
        SlowLink(dovecot.port, DELAY) as link,
        running_worker(client, list_config(task_queue, account, link.port, ca_file)),
    ):
        handle = await start_call(client, task_queue, "list_email_messages", {"max_results": PAGE})
        result = await handle.result()
    assert result.status is CallStatus.COMPLETED, result.error
    counts = [
        event
        async for event in follow(client, handle.id)
        if isinstance(event, ProgressItem) and event.kind is ProgressKind.MESSAGES
    ]
    assert counts

    page = await new_page(context)
    await log_in(page, served, "alice", call_path(handle.id))
    await expect(page.locator("section.progress[data-ended]")).to_be_attached()
    last = counts[-1]
    await expect(page.locator("section.progress .counts")).to_have_text(
        f"messages: {last.done} of {PAGE}"
    )
    await expect(page.locator("section.progress .empty")).to_be_hidden()

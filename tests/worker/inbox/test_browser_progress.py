"""A running command's output on its inbox page, in a real browser (headless Chromium, Playwright).

The lines appear while the command runs, without the page reloading; after a reload the page
shows them again from the start and goes on.
"""

from __future__ import annotations

import asyncio

from playwright.async_api import BrowserContext, expect
from temporalio.client import Client, WorkflowExecutionStatus

from tests.support.harness import decision, start_call, wait_for
from tests.support.processes import SYSTEM_PATH
from tests.worker.inbox import test_browser
from tests.worker.inbox.support import call_path
from tests.worker.inbox.test_browser import Served, log_in, new_page
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, Phase

browser, served, context = test_browser.browser, test_browser.served, test_browser.context
"""The browser tests' fixtures: Chromium, an inbox process with its worker, a browser context."""

LINES = 400
SCRIPT = f"i=0; while [ $i -lt {LINES} ]; do echo line $i; i=$((i+1)); sleep 0.02; done"
"""About ten seconds of output, a line at a time."""


async def test_the_output_appears_live_and_comes_back_after_a_reload(
    client: Client, served: Served, context: BrowserContext
) -> None:
    handle = await start_call(
        client,
        served.task_queue,
        "execute_command",
        {
            "argv": ["/bin/sh", "-c", SCRIPT],
            "cwd": str(served.root),
            "env": [f"PATH={SYSTEM_PATH}"],
        },
    )
    state = await wait_for(handle, lambda s: s.phase in (Phase.AWAITING_APPROVAL, Phase.RUNNING))
    if state.pending_approval is not None:
        await handle.execute_update(ToolCallWorkflow.decide, decision(state.pending_approval))
    await wait_for(handle, lambda s: s.phase is Phase.RUNNING)

    page = await new_page(context)
    await log_in(page, served, "alice", call_path(handle.id))
    await page.evaluate("window.stayed = true")  # gone if the page reloads
    lines = page.locator("section.progress .line.stdout")
    await expect(lines.first).to_have_text("line 0")
    seen = await lines.count()
    await expect(lines.nth(seen + 20)).to_be_attached()  # more came, the page unchanged
    assert await page.evaluate("window.stayed === true")
    assert (await handle.describe()).status is WorkflowExecutionStatus.RUNNING

    await page.reload()
    await expect(lines.first).to_have_text("line 0")  # from the start again
    before = await lines.count()
    await expect(lines.nth(before + 20)).to_be_attached()  # and on
    result = await asyncio.wait_for(handle.result(), 60)
    assert result.status is CallStatus.COMPLETED

    # The whole output, from history, in order. The call's end also reloads the page, at a moment
    # of its own: these expectations retry across that navigation.
    await expect(page.locator("section.progress[data-ended]")).to_be_attached()
    await expect(lines).to_have_text([f"line {n}" for n in range(LINES)])

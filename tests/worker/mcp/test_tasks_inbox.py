"""A task waiting for an approval is handed to a person through the inbox: it survives a restart of
the MCP server and of the worker, the client's "accept" of the link decides nothing, and the
approval given in the inbox (headless Chromium driven by Playwright, at the URL the elicitation
named) ends the task with the call's result."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from playwright.async_api import async_playwright, expect
from temporalio.client import Client

from tests.support.harness import running_worker
from tests.worker.inbox.support import PASSWORDS, users_toml
from tests.worker.mcp.raw import Raw
from tests.worker.mcp.support import Deployment
from tests.worker.mcp.test_tasks import serve, status_is
from tests.worker.support import Spawn, free_port
from toolcalls.worker.config import load_config
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import CallStatus, Phase
from toolcalls.workflows.reach.client import ToolCallClient

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
SET = ("set_value", {"key": "colour", "value": '"blue"'})


@asynccontextmanager
async def worker_for(client: Client, deployment: Deployment) -> AsyncIterator[None]:
    """A worker for the deployment, seen polling before the block starts."""
    async with running_worker(client, load_config(deployment.path)):
        calls = ToolCallClient(client, task_queue=deployment.task_queue)
        for _ in range(300):
            if await calls.worker_serving(deployment.task_queue):
                break
            await asyncio.sleep(0.1)
        yield


async def test_a_waiting_task_survives_restarts_and_is_approved_in_the_inbox(
    spawn: Spawn, tmp_path: Path, address: str, deployment: Deployment, client: Client
) -> None:
    assert os.access(CHROMIUM, os.X_OK), f"{CHROMIUM} is missing: apt-get install -y chromium"
    inbox = f"http://127.0.0.1:{free_port()}"
    deployment.write(
        f'inbox_url = "{inbox}/"',
        extra=f'[inbox]\nlisten = "{inbox.removeprefix("http://")}"\npoll_seconds = 1\n\n'
        + users_toml(),
    )
    spawn("inbox", "--config", str(deployment.path), "--address", address).wait_for_line("inbox at")
    calls = ToolCallClient(client, task_queue=deployment.task_queue)
    async with worker_for(client, deployment):
        url, server = serve(spawn, tmp_path, address, deployment)
        raw = Raw(url)
        created = await raw.call(*SET)
        assert created["resultType"] == "task"
        task_id = created["taskId"]
        workflow_id = created["_meta"]["toolcalls/workflow_id"]
        page_url = f"{inbox}/calls/{workflow_id}"
        handed = await raw.until(task_id, status_is("input_required"), what="input_required")
        [(key, request)] = handed["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        assert request["params"]["mode"] == "url"
        assert request["params"]["url"] == page_url
        assert "opening the link decides nothing" in request["params"]["message"]
        assert handed["statusMessage"] == (
            f"waiting for approval by anyone; decide at {page_url} or: "
            f"toolcalls approve {workflow_id}"
        )
        # The client's "accept" of the link is not an approval: the call still waits.
        await raw.update(task_id, {key: {"action": "accept"}})
        after = await raw.get(task_id)
        assert after["status"] == "working"
        assert "inputRequests" not in after
        assert after["statusMessage"] == handed["statusMessage"]
        state = (await calls.status(workflow_id)).state
        assert state.phase is Phase.AWAITING_APPROVAL
        assert state.pending_approval is not None
        assert state.pending_approval.approved_by == []
        # A restarted server opens the same task id (the key is the deployment's), and asks afresh.
        server.kill()
        url, server = serve(spawn, tmp_path, address, deployment)
        raw = Raw(url)
        again = await raw.get(task_id)
        assert again["status"] == "input_required"
        [(new_key, request)] = again["inputRequests"].items()
        assert new_key != key
        assert request["params"]["url"] == page_url
    # No worker: the task is read from the call's memo and history.
    stopped = await raw.get(task_id)
    assert stopped["status"] == "input_required"
    assert stopped["statusMessage"].endswith("; no toolcalls worker is serving it")
    async with worker_for(client, deployment):
        assert (await raw.get(task_id))["status"] == "input_required"
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = await browser.new_page()
            await page.goto(request["params"]["url"])
            await page.get_by_label("User name").fill("alice")
            await page.get_by_label("Password").fill(PASSWORDS["alice"])
            await page.get_by_role("button", name="Log in").click()
            await expect(page).to_have_url(page_url, timeout=30_000)
            await page.get_by_role("button", name="Approve", exact=True).click()
            await expect(page.locator(".call-head .status")).to_have_text(
                "completed", timeout=30_000
            )
            await browser.close()
        done = await raw.until(task_id, status_is("completed"), what="completed")
    result = done["result"]
    assert result["isError"] is False
    assert (result["structuredContent"]["key"], result["structuredContent"]["created"]) == (
        "colour",
        True,
    )
    recorded = await client.get_workflow_handle_for(ToolCallWorkflow.run, workflow_id).result()
    assert recorded.status is CallStatus.COMPLETED
    assert recorded.approval is not None
    assert recorded.approval.approver == "alice"

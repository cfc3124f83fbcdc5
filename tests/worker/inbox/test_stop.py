"""The Stop button of a call's page: shown and honoured only for the people the call's approver
rules allow, behind the page's CSRF token; through the app, and through ``toolcalls inbox`` over
real HTTP."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client, WorkflowExecutionStatus

from tests.support.harness import pending_approval, start_call, wait_for
from tests.support.processes import SYSTEM_PATH, eventually, process_state
from tests.worker.inbox.conftest import Deployment, Visit
from tests.worker.inbox.support import (
    PASSWORDS,
    buttons,
    call_path,
    form_for,
    forms,
    notice,
    users_toml,
)
from tests.worker.support import Spawn, free_port, write_config
from toolcalls.workflows.models.call import CallStatus, ErrorCode, Phase
from toolcalls.workflows.reach.client import ToolCallClient

GRANDCHILD = "(sleep 100 & echo $! > {pid}; wait) & echo started; wait"


def command(deployment: Deployment, pid_file: Path) -> dict[str, Any]:
    return {
        "argv": ["sh", "-c", GRANDCHILD.format(pid=pid_file)],
        "cwd": str(deployment.path.parent / "work"),
        "env": [f"PATH={SYSTEM_PATH}"],
    }


async def login(browser: httpx.AsyncClient, name: str) -> None:
    page = await browser.get("/login")
    token = forms(page.text)[-1].fields["csrf"]
    data = {"username": name, "password": PASSWORDS[name], "csrf": token}
    assert (await browser.post("/login", data=data)).status_code == 303


def alive(pid: int) -> bool:
    return process_state(pid) not in (None, "Z", "X")


async def test_stop_is_offered_and_honoured_only_for_the_approvers(
    client: Client, deployment: Deployment, worker: None, visit: Visit, calls: ToolCallClient
) -> None:
    pid_file = deployment.path.parent / "grandchild.pid"
    handle = await start_call(
        client, deployment.task_queue, "execute_command", command(deployment, pid_file)
    )
    await pending_approval(handle)
    await calls.approve(handle.id, approver="alice")
    await wait_for(handle, lambda state: state.phase is Phase.RUNNING)
    await eventually(lambda: pid_file.exists() and pid_file.read_text().strip() != "")
    grandchild = int(pid_file.read_text())
    alice, mallory = visit(), visit()
    await alice.login("alice")
    await mallory.login("mallory")

    page = await mallory.get(call_path(handle.id))
    assert page.status_code == 200
    assert "Stop" not in buttons(page.text)
    # alice's form with mallory's own valid token: refused before it reaches the call.
    stop = form_for((await alice.get(call_path(handle.id))).text, "stop")
    mallorys_token = forms(page.text)[0].fields["csrf"]
    forged = await mallory.http.post(
        call_path(handle.id), data={**stop.fields, "csrf": mallorys_token}
    )
    assert forged.status_code == 403
    assert "mallory may not stop this call: it needs alice, bob" in forged.text
    # alice's form without a token, or with alice's token sent by mallory: refused too.
    for token in ("", stop.fields["csrf"]):
        refused = await mallory.http.post(call_path(handle.id), data={**stop.fields, "csrf": token})
        assert refused.status_code == 403
    assert alive(grandchild)
    assert (await handle.describe()).status is WorkflowExecutionStatus.RUNNING

    sent = await alice.act(call_path(handle.id), "stop", reason="wrong folder")
    stopped_at = time.monotonic()
    assert sent.status_code == 303
    assert sent.headers["location"].endswith("?done=stopped")
    while alive(grandchild):
        assert time.monotonic() - stopped_at < 1.0, "the group outlived the stop by 1 s"
        await asyncio.sleep(0.02)
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.UNCERTAIN
    assert result.error is not None
    assert result.error.code is ErrorCode.UNCERTAIN
    assert result.output["canceled"] is True
    shown = await alice.get(sent.headers["location"])
    assert notice(shown.text).startswith("Stop requested")
    assert "Stop" not in buttons(shown.text)
    again = await alice.http.post(call_path(handle.id), data=stop.fields)
    assert again.status_code == 409
    assert "Nothing was done: the call has ended." in again.text


async def test_stop_through_toolcalls_inbox_over_http(
    tmp_path: Path,
    client: Client,
    task_queue: str,
    spawn: Spawn,
    address: str,
    worker: None,
    deployment: Deployment,
) -> None:
    port = free_port()
    # The inbox process reads the deployment's approver rules from its own file.
    config = write_config(
        tmp_path,
        f'task_queue = "{deployment.task_queue}"\ntools = ["calculator"]\n'
        '[approvers.groups]\nsecurity = ["carol"]\n'
        '[approvers.rules.calculator]\napprovers = ["ops", "security"]\n'
        f'[inbox]\nlisten = "127.0.0.1:{port}"\n\n{users_toml()}',
        name="inbox.toml",
    )
    inbox = spawn("inbox", "--config", str(config), "--address", address)
    await asyncio.to_thread(inbox.wait_for_line, "inbox at", 60)
    handle = await start_call(
        client,
        deployment.task_queue,
        "calculator",
        {"expression": "6 * 7"},
        policy={"tools": {"calculator": "require_approval"}},
    )
    await pending_approval(handle)
    origin = f"http://127.0.0.1:{port}"
    async with (
        httpx.AsyncClient(base_url=origin, timeout=30) as browser,
        httpx.AsyncClient(base_url=origin, timeout=30) as other,
    ):
        await login(browser, "carol")
        await login(other, "mallory")
        assert "Stop" not in buttons((await other.get(call_path(handle.id))).text)
        page = await browser.get(call_path(handle.id))
        assert "Stop" in buttons(page.text)
        stop = form_for(page.text, "stop")
        sent = await browser.post(call_path(handle.id), data={**stop.fields, "reason": "not now"})
    assert sent.status_code == 303
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.CANCELED
    assert result.error is not None
    assert result.error.message == ("the call was canceled: stopped by carol in the inbox: not now")

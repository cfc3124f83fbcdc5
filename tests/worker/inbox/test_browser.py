"""The inbox in a real browser: headless Chromium (Debian's package) driven by Playwright, against
``toolcalls inbox`` as a real process and a real worker.

``make test`` installs Chromium when it is missing. Set ``TOOLCALLS_INBOX_SCREENSHOT=PATH`` to
have the approval test write its screenshot of a call's page there (the README's picture).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.support.harness import Handle, pending_approval, pending_question, start_call
from tests.worker.inbox.support import PASSWORDS, call_path, write_deployment
from tests.worker.support import TOOLCALLS, Spawned, free_port, hermetic_env
from toolcalls.worker.config import load_config
from toolcalls.worker.run import build_worker
from toolcalls.workflows.models.call import CallStatus, ErrorCode

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOT_ENV = "TOOLCALLS_INBOX_SCREENSHOT"
REPOSITORY = Path(__file__).resolve().parents[3]
WAIT_MS = 30_000

expect.set_options(timeout=WAIT_MS)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        raise RuntimeError(f"{CHROMIUM} is missing: apt-get install -y chromium (make test does)")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        await launched.close()


@dataclass(frozen=True)
class Served:
    """``toolcalls inbox`` listening at ``origin``, for a deployment a worker serves."""

    origin: str
    root: Path
    task_queue: str


@pytest.fixture(scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, env: WorkflowEnvironment
) -> AsyncIterator[Served]:
    """One inbox process and one worker for the module's tests (each makes calls of its own)."""
    tmp_path = tmp_path_factory.mktemp("inbox")
    task_queue = f"inbox-{uuid.uuid4()}"
    listen = f"127.0.0.1:{free_port()}"
    path = write_deployment(tmp_path, task_queue, listen=listen)
    address = env.client.service_client.config.target_host
    # The deployment names a calendar backend of the tests' own, which the inbox imports too.
    environ = hermetic_env(tmp_path, PYTHONPATH=str(REPOSITORY))
    inbox = Spawned(
        [TOOLCALLS, "inbox", "--config", str(path), "--address", address], environ, cwd=tmp_path
    )
    try:
        await asyncio.to_thread(inbox.wait_for_line, "inbox at", 60)
        async with build_worker(env.client, load_config(path)):
            yield Served(f"http://{listen}", tmp_path / "work", task_queue)
    finally:
        inbox.kill()


@pytest.fixture
async def context(browser: Browser) -> AsyncIterator[BrowserContext]:
    opened = await browser.new_context(viewport={"width": 1280, "height": 900})
    yield opened
    await opened.close()


async def log_in(page: Page, served: Served, name: str, path: str = "/") -> None:
    await page.goto(served.origin + path)
    await expect(page).to_have_url(f"{served.origin}/login?next={path.replace('/', '%2F')}")
    await page.get_by_label("User name").fill(name)
    await page.get_by_label("Password").fill(PASSWORDS[name])
    await page.get_by_role("button", name="Log in").click()
    await expect(page.locator(".who .user")).to_have_text(name)


async def new_page(context: BrowserContext) -> Page:
    page = await context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    page.dialogs = dialogs  # type: ignore[attr-defined]
    return page


async def file_call(client: Client, served: Served, name: str, content: str) -> Handle:
    handle = await start_call(
        client,
        served.task_queue,
        "create_file",
        {"path": str(served.root / name), "content": content},
    )
    await pending_approval(handle)
    return handle


async def result_of(handle: Handle) -> Any:
    return await asyncio.wait_for(handle.result(), 30)


async def test_log_in_open_a_waiting_call_and_approve_it(
    client: Client, served: Served, context: BrowserContext, tmp_path: Path
) -> None:
    (served.root / "service.toml").write_text(
        'name = "billing"\nreplicas = 2\ntimeout_seconds = 30\nlog_level = "info"\n'
    )
    handle = await start_call(
        client,
        served.task_queue,
        "edit_file",
        {
            "path": str(served.root / "service.toml"),
            "old_text": "replicas = 2\ntimeout_seconds = 30",
            "new_text": "replicas = 4\ntimeout_seconds = 45",
        },
    )
    await pending_approval(handle)
    page = await new_page(context)
    await log_in(page, served, "alice")
    # The list finds the call (visibility, no worker asked); the page reloads until it does.
    row = page.locator("tr", has_text=handle.id)
    await expect(row).to_contain_text("filesystem.write")
    await expect(row).to_contain_text("you may decide")
    await row.get_by_role("link", name="edit_file").click()
    await expect(page).to_have_url(served.origin + call_path(handle.id))
    await expect(page.locator(".d-add", has_text="+replicas = 4")).to_be_visible()
    await expect(page.locator(".d-del", has_text="-replicas = 2")).to_be_visible()
    shot = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path / "inbox-call.png")
    assert len(await page.screenshot(path=str(shot), full_page=True)) > 10_000
    await page.get_by_role("button", name="Approve", exact=True).click()
    await expect(page.locator(".call-head .status")).to_have_text("completed")
    await expect(page.locator(".decisions")).to_contain_text("approved by alice")
    result = await result_of(handle)
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.approval.approver == "alice"
    assert "replicas = 4" in (served.root / "service.toml").read_text()
    assert page.dialogs == []  # type: ignore[attr-defined]


async def test_deny_with_a_reason(client: Client, served: Served, context: BrowserContext) -> None:
    handle = await file_call(client, served, "denied.txt", "no\n")
    page = await new_page(context)
    await log_in(page, served, "bob", call_path(handle.id))
    await expect(page).to_have_url(served.origin + call_path(handle.id))
    await page.get_by_label("Reason", exact=True).fill("wrong directory")
    await page.get_by_role("button", name="Deny", exact=True).click()
    await expect(page.locator(".call-head .status")).to_have_text("denied")
    result = await result_of(handle)
    assert result.error is not None
    assert result.error.code is ErrorCode.APPROVAL_DENIED
    assert result.approval is not None
    assert (result.approval.approver, result.approval.reason) == ("bob", "wrong directory")
    assert not (served.root / "denied.txt").exists()


async def test_answer_a_question(client: Client, served: Served, context: BrowserContext) -> None:
    handle = await start_call(
        client,
        served.task_queue,
        "ask_user",
        {"question": "Ship it on Friday?", "options": ["yes", "no, Monday"]},
    )
    await pending_question(handle)
    page = await new_page(context)
    await log_in(page, served, "carol", call_path(handle.id))
    await expect(page.locator(".question blockquote")).to_have_text("Ship it on Friday?")
    # Choosing an option sends nothing: the person confirms the choice with the button.
    choice = page.get_by_role("radio", name="no, Monday")
    await choice.check()
    await expect(choice).to_be_checked()
    await expect(page.locator(".call-head .status")).to_have_text("awaiting answer")
    assert (await pending_question(handle)).question == "Ship it on Friday?"
    await page.get_by_role("button", name="Send this answer").click()
    await expect(page.locator(".call-head .status")).to_have_text("completed")
    result = await result_of(handle)
    assert result.output["answer"] == "no, Monday"


async def test_declining_is_a_button_like_the_others(
    client: Client, served: Served, context: BrowserContext
) -> None:
    handle = await start_call(
        client, served.task_queue, "ask_user", {"question": "Rename the repo?", "options": ["yes"]}
    )
    await pending_question(handle)
    page = await new_page(context)
    await log_in(page, served, "carol", call_path(handle.id))
    decline = page.get_by_role("button", name="Decline to answer")
    await expect(decline).to_be_visible()
    looks = await decline.evaluate(
        "b => { const s = getComputedStyle(b); return [s.textDecorationLine, s.borderTopStyle,"
        " s.paddingTop]; }"
    )
    assert looks[0] == "none"  # not underlined like a link
    assert looks[1] == "solid"  # bordered like every button
    assert looks[2] != "0px"
    await decline.click()
    await expect(page.locator(".call-head .status")).to_have_text("completed")
    assert (await result_of(handle)).output["status"] == "declined"


async def test_edit_then_approve(client: Client, served: Served, context: BrowserContext) -> None:
    handle = await file_call(client, served, "greeting.txt", "helo\n")
    page = await new_page(context)
    await log_in(page, served, "alice", call_path(handle.id))
    await page.get_by_role("link", name="Edit the arguments").click()
    edited = f'{{"path": "{served.root / "greeting.txt"}", "content": "hello\\n"}}'
    await page.get_by_label("Edited arguments (JSON)").fill(edited)
    await page.get_by_role("button", name="Preview the edit").click()
    await expect(page.locator(".banner.notice")).to_contain_text("this is the new preview")
    await expect(page.locator(".d-add", has_text="+hello")).to_be_visible()
    await expect(page.locator(".d-add", has_text="+helo")).to_have_count(0)
    await page.get_by_role("button", name="Approve", exact=True).click()
    await expect(page.locator(".call-head .status")).to_have_text("completed")
    result = await result_of(handle)
    assert [edit.by for edit in result.edits] == ["alice"]
    assert (served.root / "greeting.txt").read_text() == "hello\n"


async def test_outside_the_group_no_buttons_and_a_forged_post_is_refused(
    client: Client, served: Served, browser: Browser, context: BrowserContext
) -> None:
    handle = await file_call(client, served, "ops-only.txt", "x\n")
    alice = await new_page(context)
    await log_in(alice, served, "alice", call_path(handle.id))
    fields = await alice.locator("form.approve input").evaluate_all(
        "inputs => Object.fromEntries(inputs.map(i => [i.name, i.value]))"
    )
    other = await browser.new_context()
    try:
        mallory = await new_page(other)
        await log_in(mallory, served, "mallory", call_path(handle.id))
        await expect(mallory.locator(".banner.notice")).to_contain_text(
            "You may not decide this call: it needs ops."
        )
        await expect(mallory.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
        await expect(mallory.get_by_role("button", name="Deny", exact=True)).to_have_count(0)
        own_token = await mallory.locator("form[action='/logout'] input[name=csrf]").input_value()
        forged = await mallory.request.post(
            served.origin + call_path(handle.id), form={**fields, "csrf": own_token}
        )
        assert forged.status == 403
        assert "mallory may not decide this call" in await forged.text()
    finally:
        await other.close()
    assert (await pending_approval(handle)).approved_by == []


async def test_a_post_without_the_csrf_token_is_refused(
    client: Client, served: Served, context: BrowserContext
) -> None:
    handle = await file_call(client, served, "csrf.txt", "x\n")
    page = await new_page(context)
    await log_in(page, served, "alice", call_path(handle.id))
    fields = await page.locator("form.approve input").evaluate_all(
        "inputs => Object.fromEntries(inputs.map(i => [i.name, i.value]))"
    )
    del fields["csrf"]
    refused = await page.request.post(served.origin + call_path(handle.id), form=fields)
    assert refused.status == 403
    assert "CSRF token" in await refused.text()
    assert (await pending_approval(handle)).approved_by == []


async def test_logged_out_nothing_is_visible(
    client: Client, served: Served, context: BrowserContext
) -> None:
    handle = await file_call(client, served, "private-plans.txt", "the plan\n")
    page = await new_page(context)
    await page.goto(served.origin + call_path(handle.id))
    await expect(page).to_have_url(f"{served.origin}/login?next=%2Fcalls%2F{handle.id}")
    body = await page.locator("body").inner_text()
    assert "private-plans" not in body
    assert "create_file" not in body
    api = await page.request.get(f"{served.origin}/api/pending")
    assert api.status == 401


async def test_hostile_content_does_not_run(
    client: Client, served: Served, context: BrowserContext
) -> None:
    hostile = '<script>window.pwned = 1; alert("pwned")</script><img src=x onerror="alert(2)">'
    handle = await file_call(client, served, "hostile.html", hostile)
    page = await new_page(context)
    await log_in(page, served, "alice", call_path(handle.id))
    await expect(page.locator(".d-add", has_text="<script>window.pwned")).to_be_visible()
    await page.wait_for_timeout(500)
    assert await page.evaluate("typeof window.pwned") == "undefined"
    assert await page.locator("img").count() == 0
    assert page.dialogs == []  # type: ignore[attr-defined]

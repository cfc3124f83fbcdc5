"""The inbox read by someone who is not an engineer: why a call waits in words, who asked (an MCP
client and its user), short ids, the digest out of the way, a 404 inside the inbox's frame, and
each run of a reused workflow id its own page."""

from __future__ import annotations

import asyncio
import re
import uuid
from datetime import timedelta

from temporalio.client import Client
from temporalio.common import WorkflowIDReusePolicy

from tests.support.harness import pending_approval
from tests.worker.inbox.conftest import Deployment, Visit
from tests.worker.inbox.support import call_path, listed
from toolcalls.worker.inbox.words import asked_by, reason, short_id
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    CallStatus,
    CapabilityPolicy,
    Effect,
    ToolCallRequest,
)
from toolcalls.workflows.models.principal import Principal
from toolcalls.workflows.reach.client import ToolCallClient

NEEDS_APPROVAL = CapabilityPolicy(tools={"calculator": Effect.REQUIRE_APPROVAL})
HOSTILE_CLIENT = '<script>alert("client")</script>Desk'


def _summary_row(page: str, label: str) -> str:
    match = re.search(rf"<tr><th>{re.escape(label)}</th><td[^>]*>(.*?)</td></tr>", page, re.S)
    assert match, f"no {label} row"
    return match.group(1)


def test_reasons_in_words_with_the_rule_kept() -> None:
    said = reason("tool:calculator: require_approval (deployment rule tool:calculator)")
    assert said.text == (
        "calculator needs an approval: the deployment's rule for this tool asks for one."
    )
    assert said.rule == "tool:calculator: require_approval (deployment rule tool:calculator)"
    assert reason("filesystem.write: require_approval (request rule filesystem.*)").text == (
        "It uses filesystem.write, which needs an approval: the caller's rule for filesystem.* "
        "asks for one."
    )
    assert reason("git.write: require_approval (deployment rule git.write)").text == (
        "It uses git.write, which needs an approval: the deployment's rule for this capability "
        "asks for one."
    )
    assert reason("git.write: require_approval (deployment rule default)").text == (
        "It uses git.write, which needs an approval: the deployment's default rule asks for one."
    )
    assert reason("shell.execute: require_approval (deployment)").text == (
        "It uses shell.execute, which needs an approval: the deployment's policy asks for one."
    )
    assert reason("something a tool of our own said").text == "something a tool of our own said"


def test_who_asked_and_short_ids() -> None:
    mcp = {"front": "mcp", "mcp_client": "Claude Desktop", "mcp_user": "alice"}
    assert asked_by(None, mcp) == "MCP client Claude Desktop as alice"
    assert asked_by(None, {"front": "mcp"}) == "an MCP client (no user named)"
    assert asked_by("parent-1", {}) == "parent-1"
    assert asked_by(None, {}) == "-"
    digest = "0123456789abcdef" * 4
    assert short_id(f"mcp-key-{digest}") == "mcp-key-01234567…"
    assert short_id(f"mcp-{digest}") == "mcp-01234567…"
    assert short_id("call-3f2a") == "call-3f2a"
    assert short_id(f"mcp-{digest.upper()}") == f"mcp-{digest.upper()}"


async def test_a_call_page_says_why_in_words_and_keeps_the_digest_in_a_detail(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    handle = await client.start_workflow(
        ToolCallWorkflow.run,
        ToolCallRequest(
            tool="calculator", arguments={"expression": "1 + 1"}, policy=NEEDS_APPROVAL
        ),
        id=f"call-{uuid.uuid4()}",
        task_queue=deployment.task_queue,
    )
    pending = await pending_approval(handle)
    assert pending.reasons == ["tool:calculator: require_approval (request rule tool:calculator)"]
    alice = visit()
    await alice.login("alice")
    page = (await alice.get(call_path(handle.id))).text
    why = _summary_row(page, "why")
    assert (
        "<p>calculator needs an approval: the caller&#39;s rule for this tool asks for one.</p>"
        in (why)
    )
    rule = re.search(r"<details class=\"rules\"><summary>.*?</summary>(.*?)</details>", why, re.S)
    assert rule is not None
    assert rule.group(1) == (
        "<code>tool:calculator: require_approval (request rule tool:calculator)</code>"
    )
    summary = page.split('<table class="fields summary">')[1].split("</table>")[0]
    assert pending.digest not in summary
    assert "<th>digest</th>" not in summary
    digest = re.search(r'<details class="digest">(.*?)</details>', page, re.S)
    assert digest is not None
    assert f"<code>{pending.digest}</code>" in digest.group(1)


async def test_an_mcp_call_names_its_client_and_user_and_shows_a_short_id(
    client: Client, deployment: Deployment, worker: None, visit: Visit, calls: ToolCallClient
) -> None:
    workflow_id = "mcp-key-" + uuid.uuid4().hex * 2
    metadata = {"front": "mcp", "mcp_client": HOSTILE_CLIENT, "mcp_user": "alice"}
    request = ToolCallRequest(
        tool="calculator",
        arguments={"expression": "2 + 2"},
        policy=NEEDS_APPROVAL,
        metadata=metadata,
    )
    started = await calls.start_or_join(request, workflow_id=workflow_id)
    await pending_approval(started.handle)
    assert (await listed(calls, workflow_id)).metadata == metadata
    alice = visit()
    await alice.login("alice")
    shown = "MCP client &lt;script&gt;alert(&#34;client&#34;)&lt;/script&gt;Desk as alice"
    short = f"mcp-key-{workflow_id[8:16]}…"
    listing = (await alice.get("/")).text
    row = next(row for row in listing.split("<tr")[1:] if workflow_id in row)
    assert f"<td>{shown}</td>" in row
    assert (
        f'<details class="id"><summary title="the workflow id, shortened">{short}'
        f'</summary><span class="full-id">{workflow_id}</span></details>'
    ) in row
    assert '<script>alert("client")' not in listing
    page = (await alice.get(call_path(workflow_id))).text
    assert f"<tr><th>asked by</th><td>{shown}</td></tr>" in page
    assert f"<title>calculator · {short} · toolcalls</title>" in page
    assert f'<span class="full-id">{workflow_id}</span>' in page
    assert '<script>alert("client")' not in page


async def test_a_missing_page_keeps_the_frame_of_who_is_signed_in(visit: Visit) -> None:
    alice = visit()
    await alice.login("alice")
    for path in ("/calls/no-such-call", "/no-such-page"):
        page = await alice.get(path)
        assert page.status_code == 404
        assert "<h1>Not found</h1>" in page.text
        assert '<a href="/recent"' in page.text  # the navigation
        assert '<span class="user">alice</span>' in page.text
        assert "Back to the waiting calls" in page.text
        assert 'href="/login"' not in page.text
    nobody = visit()
    page = await nobody.get("/no-such-page")
    assert page.status_code == 404
    assert "<h1>Not found</h1>" in page.text
    assert '<a href="/login">Log in</a>' in page.text
    assert "<nav>" not in page.text


async def test_each_run_of_a_reused_workflow_id_links_to_its_own_page(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    workflow_id = f"reused-{uuid.uuid4()}"
    bob = visit()
    await bob.login("bob")
    runs = []
    for note in ("first run", "second run"):
        handle = await client.start_workflow(
            ToolCallWorkflow.run,
            ToolCallRequest(
                tool="calculator",
                arguments={"expression": "3 + 4"},
                policy=NEEDS_APPROVAL,
                approval_timeout=timedelta(minutes=5),
            ),
            id=workflow_id,
            task_queue=deployment.task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        )
        await pending_approval(handle)
        await bob.act(call_path(workflow_id), "approve", reason=note)
        result = await asyncio.wait_for(handle.result(), 30)
        assert result.status is CallStatus.COMPLETED
        assert handle.result_run_id is not None
        runs.append((handle.result_run_id, note))
    links: list[str] = []
    for _ in range(100):
        recent = (await bob.get("/recent")).text
        links = re.findall(
            rf'<a href="(/calls/{re.escape(workflow_id)}[^"]*)">calculator</a>', recent
        )
        if len(links) == 2:
            break
        await asyncio.sleep(0.2)
    assert sorted(links) == sorted(f"{call_path(workflow_id)}?run={run}" for run, _ in runs)
    for run, note in runs:
        page = await bob.get(f"{call_path(workflow_id)}?run={run}")
        assert page.status_code == 200
        assert f"<q>{note}</q>" in page.text
        other = next(n for r, n in runs if r != run)
        assert f"<q>{other}</q>" not in page.text
        assert "data-watch" not in page.text  # a run that has ended does not change
    missing = await bob.get(f"{call_path(workflow_id)}?run={uuid.uuid4()}")
    assert missing.status_code == 404
    assert "<h1>Not found</h1>" in missing.text


async def test_a_call_page_says_whom_the_call_acts_for(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    handle = await client.start_workflow(
        ToolCallWorkflow.run,
        ToolCallRequest(
            tool="calculator",
            arguments={"expression": "2 + 2"},
            policy=NEEDS_APPROVAL,
            principal=Principal(id="<b>mallory</b>", attributes={"tenant": "acme"}),
        ),
        id=f"call-{uuid.uuid4()}",
        task_queue=deployment.task_queue,
    )
    pending = await pending_approval(handle)
    assert pending.principal is not None
    alice = visit()
    await alice.login("alice")
    page = (await alice.get(call_path(handle.id))).text
    assert _summary_row(page, "acts for") == "&lt;b&gt;mallory&lt;/b&gt;"
    await handle.cancel()

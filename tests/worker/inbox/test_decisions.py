"""Deciding through the inbox over HTTP, against a real worker: approve, deny, answer, edit,
remember; the identity recorded is the signed-in user's, and the workflow's refusals are shown."""

from __future__ import annotations

import asyncio
import dataclasses
import html
import re
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.worker import Worker

from tests.support.harness import (
    history_types,
    make_config,
    pending_approval,
    pending_question,
    running_worker,
    start_call,
)
from tests.support.inline import app_worker, listed as inline_listed, start_parent
from tests.support.parents import AgentParent, ParentInput
from tests.support.payloads import ZlibCodec
from tests.worker.inbox.conftest import Deployment, Visit
from tests.worker.inbox.support import (
    buttons,
    call_path,
    error,
    form_for,
    forms,
    listed,
    notice,
)
from toolcalls.worker.plugin import sandbox_runner
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.approval import GrantScope
from toolcalls.workflows.models.call import (
    WORKFLOW_NAME,
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    ToolCallRequest,
)
from toolcalls.workflows.models.grant import Grant
from toolcalls.workflows.reach.client import ToolCallClient


@workflow.defn(name=WORKFLOW_NAME, sandboxed=False)
class ImpostorWorkflow:
    """Another shape under the call workflow's name: its result is no ``ToolCallResult``."""

    @workflow.run
    async def run(self) -> dict[str, str]:
        return {"error_type": "not a call"}


NEEDS_APPROVAL = CapabilityPolicy(tools={"calculator": Effect.REQUIRE_APPROVAL})


def workspace(deployment: Deployment) -> Path:
    return deployment.path.parent / "work"


async def test_approving_runs_the_call_as_the_signed_in_user(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    target = workspace(deployment) / "notes.txt"
    handle = await start_call(
        client, deployment.task_queue, "create_file", {"path": str(target), "content": "hello\n"}
    )
    await pending_approval(handle)
    alice = visit()
    await alice.login("alice")
    page = await alice.get(call_path(handle.id))
    assert {"Approve", "Deny"} <= set(buttons(page.text))
    # A form field naming someone else changes nothing: the session names the approver.
    sent = await alice.act(call_path(handle.id), "approve", approver="mallory", reason="fine")
    assert sent.status_code == 303
    assert sent.headers["location"] == f"{call_path(handle.id)}?done=approved"
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert (result.approval.approver, result.approval.reason) == ("alice", "fine")
    assert target.read_text() == "hello\n"
    shown = await alice.get(sent.headers["location"])
    assert notice(shown.text) == "Approved."
    assert "approved</strong> by alice" in shown.text


async def test_a_denial_records_the_reason_and_the_user(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    handle = await start_call(
        client, deployment.task_queue, "calculator", {"expression": "6 * 7"}, policy=NEEDS_APPROVAL
    )
    await pending_approval(handle)
    carol = visit()  # an approver through [approvers.groups], not an inbox group
    await carol.login("carol")
    sent = await carol.act(call_path(handle.id), "deny", reason="not today")
    assert sent.headers["location"].endswith("?done=denied")
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.APPROVAL_DENIED
    assert result.approval is not None
    assert (result.approval.approver, result.approval.reason) == ("carol", "not today")


async def test_answering_a_question_with_an_option_or_declining(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    question = {"question": "Which format?", "options": ["JSON", "CSV"]}
    first = await start_call(client, deployment.task_queue, "ask_user", question)
    second = await start_call(client, deployment.task_queue, "ask_user", question)
    await pending_question(first)
    await pending_question(second)
    mallory = visit()  # anyone signed in may answer: questions have no approver rules
    await mallory.login("mallory")
    stale = await mallory.act(call_path(first.id), "answer", answer="x", request_id="old")
    assert stale.status_code == 409
    assert error(stale.text) == "Nothing was done: question old is no longer pending."
    page = await mallory.get(call_path(first.id))
    assert "Which format?" in page.text
    # The options are a choice confirmed with a button, not buttons that answer at once.
    [choose] = [f for f in forms(page.text) if f.choices]
    assert choose.choices == [("answer", "JSON"), ("answer", "CSV")]
    assert [label for label, _, _ in choose.buttons] == ["Send this answer"]
    assert {"Answer", "Decline to answer"} <= set(buttons(page.text))
    assert not {"JSON", "CSV"} & set(buttons(page.text))
    sent = await mallory.act(call_path(first.id), "answer", choice="CSV")
    assert sent.headers["location"].endswith("?done=answered")
    declined = await mallory.act(call_path(second.id), "decline")
    assert declined.headers["location"].endswith("?done=declined")
    answered = await asyncio.wait_for(first.result(), 30)
    assert answered.output == {
        "request_id": answered.output["request_id"],
        "status": "answered",
        "answer": "CSV",
    }
    assert [e.message for e in answered.events if e.kind.value == "question_answered"] == [
        "by mallory"
    ]
    assert (await asyncio.wait_for(second.result(), 30)).output["status"] == "declined"


async def test_edit_shows_the_new_preview_and_approving_runs_it(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    target = workspace(deployment) / "edited.txt"
    handle = await start_call(
        client, deployment.task_queue, "create_file", {"path": str(target), "content": "draft\n"}
    )
    first = await pending_approval(handle)
    bob = visit()
    await bob.login("bob")
    editing = await bob.get(f"{call_path(handle.id)}?edit=1")
    assert "edit" in [form.fields.get("action") for form in forms(editing.text)]
    sent = await bob.act(
        f"{call_path(handle.id)}?edit=1",
        "edit",
        arguments=f'{{"path": "{target}", "content": "final\\n"}}',
    )
    assert sent.headers["location"].endswith("?done=edited")
    page = await bob.get(sent.headers["location"])
    assert notice(page.text).startswith("Edited: this is the new preview.")
    assert '<div class="d-add">+final</div>' in page.text
    assert "+draft" not in page.text
    approve = form_for(page.text, "approve")
    assert approve.fields["request_id"] != first.request_id
    assert (await bob.act(call_path(handle.id), "approve")).status_code == 303
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert target.read_text() == "final\n"
    assert [edit.by for edit in result.edits] == ["bob"]


async def test_the_workflows_reasons_for_refusing_are_shown(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    target = workspace(deployment) / "refused.txt"
    handle = await start_call(
        client, deployment.task_queue, "create_file", {"path": str(target), "content": "x\n"}
    )
    await pending_approval(handle)
    alice = visit()
    await alice.login("alice")
    path = call_path(handle.id)
    # Arguments the plan refuses: the edit is refused with the plan's message, the text kept.
    edit = await alice.act(f"{path}?edit=1", "edit", arguments='{"path": "relative.txt"}')
    assert edit.status_code == 409
    assert error(edit.text).startswith("The call refused the edit: ")
    assert "content" in error(edit.text)
    assert "relative.txt" in edit.text
    bad_json = await alice.act(f"{path}?edit=1", "edit", arguments="{not json")
    assert bad_json.status_code == 400
    assert error(bad_json.text).startswith("The arguments are not a JSON object")
    # A grant for the parent workflow, for a call no parent made: the validator's reason.
    parent = await alice.act(path, "remember", duration="3600", scope=GrantScope.PARENT.value)
    assert parent.status_code == 409
    assert error(parent.text) == (
        "The call refused the decision: a grant for the parent workflow needs a call made by one"
    )
    # A request that is no longer pending: nothing is sent.
    stale = await alice.act(path, "approve", request_id="not-the-request")
    assert stale.status_code == 409
    assert "is no longer pending" in error(stale.text)
    state = await pending_approval(handle)
    assert state.approved_by == []


async def test_an_edit_outside_the_roots_is_refused_and_the_original_still_runs(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    target = workspace(deployment) / "kept.txt"
    outside = deployment.path.parent / "outside.txt"
    handle = await start_call(
        client, deployment.task_queue, "create_file", {"path": str(target), "content": "kept\n"}
    )
    first = await pending_approval(handle)
    bob = visit()
    await bob.login("bob")
    path = call_path(handle.id)
    # The tool's preview refuses the path: the reason, on the edit form with the text kept.
    text = f'{{"path": "{outside}", "content": "edited\\n"}}'
    edit = await bob.act(f"{path}?edit=1", "edit", arguments=text)
    assert edit.status_code == 409
    assert error(edit.text) == (
        f"The call refused the edit: create_file: {outside}: not inside a configured root"
    )
    kept = re.search(r'<textarea name="arguments"[^>]*>(.*?)</textarea>', edit.text, re.S)
    assert kept is not None
    assert html.unescape(kept.group(1)) == text
    # The original request is still the one to decide, and approving it writes the file.
    page = await bob.get(path)
    assert form_for(page.text, "approve").fields["request_id"] == first.request_id
    assert (await bob.act(path, "approve")).status_code == 303
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.COMPLETED
    assert target.read_text() == "kept\n"
    assert not outside.exists()
    assert result.edits == []
    assert [e.kind.value for e in result.events].count("edit_refused") == 1


async def test_approve_and_remember_creates_a_grant(
    client: Client, deployment: Deployment, worker: None, visit: Visit, calls: ToolCallClient
) -> None:
    handle = await start_call(
        client, deployment.task_queue, "calculator", {"expression": "1 + 1"}, policy=NEEDS_APPROVAL
    )
    await pending_approval(handle)
    alice = visit()
    await alice.login("alice")
    page = await alice.get(call_path(handle.id))
    remember = form_for(page.text, "remember")
    assert "Approve and remember" in [label for label, _, _ in remember.buttons]
    assert {"duration", "scope", "any_arguments"} <= set(remember.inputs)
    assert f'<option value="{GrantScope.PARENT.value}">' not in page.text  # no parent here
    sent = await alice.act(
        call_path(handle.id), "remember", duration="3600", scope=GrantScope.DEPLOYMENT.value
    )
    assert sent.headers["location"].endswith("?done=remembered")
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.approval is not None
    assert result.approval.grant_id is not None
    grants: list[Grant] = []
    for _ in range(100):
        grants = [g for g in await calls.grants() if g.grant_id == result.approval.grant_id]
        if grants:
            break
        await asyncio.sleep(0.2)
    [grant] = grants
    assert (grant.approver, grant.scope) == ("alice", GrantScope.DEPLOYMENT)


async def test_the_list_and_recent_decisions(
    client: Client, deployment: Deployment, worker: None, visit: Visit, calls: ToolCallClient
) -> None:
    handle = await start_call(
        client, deployment.task_queue, "calculator", {"expression": "2 + 3"}, policy=NEEDS_APPROVAL
    )
    await pending_approval(handle)
    await listed(calls, handle.id)
    bob, mallory = visit(), visit()
    await bob.login("bob")
    await mallory.login("mallory")
    listing = await bob.get("/?tool=calculator")
    assert handle.id in listing.text
    assert "you may decide" in _row(listing.text, handle.id)
    assert "ops, security" in _row(listing.text, handle.id)
    assert "you may decide" not in _row((await mallory.get("/")).text, handle.id)
    assert handle.id not in (await bob.get("/?tool=ask_user")).text
    assert handle.id not in (await bob.get("/?capability=filesystem.write")).text
    assert handle.id not in (await mallory.get("/?mine=1")).text
    before = (await bob.get("/api/pending")).json()["version"]
    await bob.act(call_path(handle.id), "approve")
    await asyncio.wait_for(handle.result(), 30)
    for _ in range(100):
        if (await bob.get("/api/pending")).json()["version"] != before:
            break
        await asyncio.sleep(0.2)
    else:
        raise AssertionError("the pending list's version never changed")
    recent = await bob.get("/recent")
    assert handle.id in recent.text
    assert "<strong>approved</strong> by bob" in _row(recent.text, handle.id)


async def test_recent_leaves_out_a_result_that_is_not_a_calls(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    queue = f"impostor-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[ImpostorWorkflow]):
        impostor = await client.execute_workflow(
            ImpostorWorkflow.run, id=f"impostor-{uuid.uuid4().hex[:8]}", task_queue=queue
        )
    assert impostor == {"error_type": "not a call"}
    # And one whose result is in an encoding the inbox's converter does not know (its client
    # compressed it with a codec of its own).
    compressing = Client(
        client.service_client,
        namespace=client.namespace,
        data_converter=dataclasses.replace(client.data_converter, payload_codec=ZlibCodec()),
    )
    async with Worker(compressing, task_queue=queue, workflows=[ImpostorWorkflow]):
        await compressing.execute_workflow(
            ImpostorWorkflow.run, id=f"compressed-{uuid.uuid4().hex[:8]}", task_queue=queue
        )
    handle = await start_call(
        client, deployment.task_queue, "calculator", {"expression": "2 + 3"}, policy=NEEDS_APPROVAL
    )
    await pending_approval(handle)
    bob = visit()
    await bob.login("bob")
    await bob.act(call_path(handle.id), "approve")
    await asyncio.wait_for(handle.result(), 30)
    recent = await bob.get("/recent")
    assert recent.status_code == 200
    assert "<strong>approved</strong> by bob" in _row(recent.text, handle.id)


async def test_the_list_orders_newest_or_expiring_first(
    client: Client, deployment: Deployment, worker: None, visit: Visit, calls: ToolCallClient
) -> None:
    soon = await start_call(
        client,
        deployment.task_queue,
        "calculator",
        {"expression": "1"},
        policy=NEEDS_APPROVAL,
        approval_timeout=timedelta(hours=1),
    )
    await pending_approval(soon)
    later = await start_call(
        client, deployment.task_queue, "calculator", {"expression": "2"}, policy=NEEDS_APPROVAL
    )
    await pending_approval(later)
    await listed(calls, soon.id)
    await listed(calls, later.id)
    alice = visit()
    await alice.login("alice")

    def order(page: str) -> list[str]:
        return [
            wid
            for wid in re.findall(r'<div class="id">([^<]+)</div>', page)
            if wid in (soon.id, later.id)
        ]

    assert order((await alice.get("/")).text) == [later.id, soon.id]
    assert order((await alice.get("/?sort=expiring")).text) == [soon.id, later.id]


async def test_a_childs_page_names_its_parent_and_offers_the_parents_grant(
    client: Client, deployment: Deployment, worker: None, visit: Visit, calls: ToolCallClient
) -> None:
    app_queue = f"app-{uuid.uuid4()}"
    request = ToolCallRequest(tool="calculator", arguments={"expression": "3 * 3"}, call_id="c1")
    app = Worker(
        client, task_queue=app_queue, workflows=[AgentParent], workflow_runner=sandbox_runner()
    )
    async with app:
        parent = await client.start_workflow(
            AgentParent.run,
            ParentInput(
                task_queue=deployment.task_queue, batches=[[request]], policy=NEEDS_APPROVAL
            ),
            id=f"parent-{uuid.uuid4()}",
            task_queue=app_queue,
        )
        child_id = f"{parent.id}/tools/c1"
        await pending_approval(client.get_workflow_handle_for(ToolCallWorkflow.run, child_id))
        await listed(calls, child_id)
        alice = visit()
        await alice.login("alice")
        assert f'<td class="id">{parent.id}</td>' in _row((await alice.get("/")).text, child_id)
        page = await alice.get(call_path(child_id))  # the id's slashes stay in the path
        assert f'<td class="id">{parent.id}</td>' in page.text
        assert f'<option value="{GrantScope.PARENT.value}">made by {parent.id}</option>' in (
            page.text
        )
        sent = await alice.act(
            call_path(child_id), "remember", duration="900", scope=GrantScope.PARENT.value
        )
        assert sent.headers["location"] == f"{call_path(child_id)}?done=remembered"
        output = await asyncio.wait_for(parent.result(), 60)
    [result] = output.results
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.approval.grant_id is not None


async def test_an_inline_call_is_listed_shown_and_approved_through_its_parent(
    client: Client, deployment: Deployment, worker: None, visit: Visit, calls: ToolCallClient
) -> None:
    request = ToolCallRequest(tool="calculator", arguments={"expression": "4 * 4"}, call_id="i1")
    async with app_worker(client) as app_queue:
        parent = await start_parent(
            client,
            app_queue,
            ParentInput(
                task_queue=deployment.task_queue,
                batches=[[request]],
                policy=NEEDS_APPROVAL,
                inline=True,
            ),
        )
        call_id = f"{parent.id}/tools/i1"
        assert (await inline_listed(calls, call_id)).inline
        alice = visit()
        await alice.login("alice")
        assert f'<td class="id">{parent.id}</td>' in _row((await alice.get("/")).text, call_id)
        page = await alice.get(call_path(call_id))
        assert page.status_code == 200
        assert "4 * 4" in page.text
        assert "remember" not in [f.fields.get("action") for f in forms(page.text)]  # no grants
        sent = await alice.act(call_path(call_id), "approve")
        assert sent.headers["location"] == f"{call_path(call_id)}?done=approved"
        output = await asyncio.wait_for(parent.result(), 60)
    [result] = output.results
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"expression": "4 * 4", "result": 16}
    assert result.approval is not None
    assert result.approval.approver == "alice"
    started = EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    assert started not in await history_types(parent)


def _row(html: str, workflow_id: str) -> str:
    """The table row of the page that mentions ``workflow_id``."""
    for row in html.split("<tr")[1:]:
        if workflow_id in row:
            return row
    raise AssertionError(f"no row for {workflow_id}")


async def test_without_a_worker_the_inbox_lists_shows_and_queues(
    client: Client, deployment: Deployment, visit: Visit, calls: ToolCallClient
) -> None:
    # No file tools: a second worker on their checkpoint store would be refused.
    tools = [name for name in deployment.config.tools if not name.endswith("_file")]
    config = deployment.config.model_copy(update={"tools": tools})
    async with build_worker(client, config):
        handle = await start_call(
            client,
            deployment.task_queue,
            "calculator",
            {"expression": "40 + 2"},
            policy=NEEDS_APPROVAL,
        )
        await pending_approval(handle)
    # No worker serves the call now: visibility, memo and history still show it. The stopped
    # worker's pollers look fresh to the server for a minute, so each page asks the call and
    # waits the client's probe timeout for the answer that cannot come: one second here.
    calls.probe_timeout = timedelta(seconds=1)
    await listed(calls, handle.id)
    alice = visit()
    await alice.login("alice")
    assert handle.id in (await alice.get("/")).text
    page = await alice.get(call_path(handle.id))
    assert "No worker is serving this call right now" in page.text
    assert "&#34;expression&#34;: &#34;40 + 2&#34;" in page.text
    assert "Editing needs a worker serving the call." in page.text
    sent = await alice.act(call_path(handle.id), "approve")
    assert sent.headers["location"].endswith("?done=queued")
    assert notice((await alice.get(sent.headers["location"])).text).startswith("Queued:")
    async with build_worker(client, config):
        result = await asyncio.wait_for(handle.result(), 60)
    assert result.status is CallStatus.COMPLETED
    assert result.output == {"expression": "40 + 2", "result": 42}
    assert result.approval is not None
    assert (result.approval.approver, result.approval.via) == ("alice", "signal")


async def test_reply_instead_answers_in_place_of_the_tool(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    handle = await start_call(
        client, deployment.task_queue, "calculator", {"expression": "6 * 7"}, policy=NEEDS_APPROVAL
    )
    await pending_approval(handle)
    path = call_path(handle.id)
    # The approver rules apply as for a denial: mallory is offered nothing and refused.
    mallory = visit()
    await mallory.login("mallory")
    hers = await mallory.get(path)
    assert "Reply instead" not in buttons(hers.text)
    bob = visit()
    await bob.login("bob")
    page = await bob.get(path)
    assert "Reply instead" in buttons(page.text)
    reply = form_for(page.text, "respond")
    forged = await mallory.http.post(
        path, data={**reply.fields, "csrf": forms(hers.text)[0].fields["csrf"], "response": "x"}
    )
    assert forged.status_code == 403
    assert "mallory may not decide this call" in forged.text
    blank = await bob.act(path, "respond", response="  ")
    assert blank.status_code == 400
    assert error(blank.text) == "Write the reply the model reads, or deny the call."
    sent = await bob.act(path, "respond", response="It is 42; no need to compute it.")
    assert sent.status_code == 303
    assert sent.headers["location"].endswith("?done=responded")
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is CallStatus.DENIED
    assert result.error is not None
    assert result.error.code is ErrorCode.RESPONDED
    assert result.response == "It is 42; no need to compute it."
    assert result.output is None  # the calculator never ran
    assert result.approval is not None
    assert result.approval.approver == "bob"
    shown = await bob.get(sent.headers["location"])
    assert notice(shown.text).startswith("Replied: the model reads your reply")
    assert "replied instead</strong> by bob" in shown.text
    assert "It is 42; no need to compute it." in html.unescape(shown.text)


async def test_reply_instead_is_not_offered_where_the_deployment_forbids_it(
    client: Client, deployment: Deployment, visit: Visit
) -> None:
    config = make_config(deployment.task_queue, approvers={"respond": False})
    async with running_worker(client, config):
        handle = await start_call(
            client,
            deployment.task_queue,
            "calculator",
            {"expression": "6 * 7"},
            policy=NEEDS_APPROVAL,
        )
        await pending_approval(handle)
        alice = visit()
        await alice.login("alice")
        path = call_path(handle.id)
        page = await alice.get(path)
        assert {"Approve", "Deny"} <= set(buttons(page.text))
        assert "Reply instead" not in buttons(page.text)
        # A made-up form is refused by the workflow, and the call still waits.
        deny = form_for(page.text, "deny")
        forged = await alice.http.post(
            path, data={**deny.fields, "action": "respond", "response": "It is 42."}
        )
        assert forged.status_code == 409
        assert error(forged.text) == (
            "The call refused the decision: this deployment does not allow answering a call in "
            "place of the tool"
        )
        assert (await pending_approval(handle)).respond is False
        await handle.cancel()

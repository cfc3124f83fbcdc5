"""Slack interactive approvals against a real dev server, worker and HTTP exchange: the worker
posts a waiting call, a signed click decides it through the validated update, and every click
that must not decide (bad signature, old, replayed, unmapped, not an approver, twice, stale)
decides nothing."""

from __future__ import annotations

import asyncio
import time

import httpx
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from tests.support.harness import Handle, history_types, pending_approval, start_call
from tests.worker.chat.conftest import ENVIRON, Deployment, Interactions
from tests.worker.chat.support import (
    CHANNEL,
    UNMAPPED,
    USERS,
    FakeSlack,
    click,
    form_body,
    has_buttons,
    labels,
    signed_headers,
    submission,
    text_of,
)
from tests.worker.inbox.support import fast_hash
from tests.worker.support import free_port
from toolcalls.worker.chat.slack.blocks import APPROVE, DENY, REPLY
from toolcalls.worker.config import load_config
from toolcalls.worker.inbox.serve import plan, serve
from toolcalls.workflows.call.tool_call import ToolCallWorkflow
from toolcalls.workflows.models.call import (
    CallStatus,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    EventKind,
)
from toolcalls.workflows.reach.client import ToolCallClient

NEEDS_APPROVAL = CapabilityPolicy(tools={"calculator": Effect.REQUIRE_APPROVAL})
DECIDED = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
}


async def waiting_calculator(client: Client, task_queue: str) -> Handle:
    handle = await start_call(
        client, task_queue, "calculator", {"expression": "6 * 7"}, policy=NEEDS_APPROVAL
    )
    await pending_approval(handle)
    return handle


async def assert_nothing_decided(handle: Handle) -> None:
    """Still waiting, with no approval recorded and no update or signal in its history."""
    request = await pending_approval(handle)
    assert request.approved_by == []
    assert not DECIDED & set(await history_types(handle))


async def test_a_signed_click_approves_and_the_message_says_who(
    client: Client,
    deployment: Deployment,
    worker: None,
    slack: FakeSlack,
    interactions: Interactions,
) -> None:
    handle = await waiting_calculator(client, deployment.task_queue)
    message = await slack.wait_for("chat.postMessage")
    assert message["channel"] == CHANNEL
    shown = text_of(message)
    assert "calculator" in shown
    assert "6 * 7" in shown
    assert "ops" in shown
    assert f"https://inbox.example.com/calls/{handle.id}" in shown
    assert labels(message) == ["Approve", "Deny", "Reply instead"]

    response = await interactions.send(click(message, "1.000001", APPROVE, USERS["alice"]))
    assert response.status_code == 200

    result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert result.approval is not None
    assert result.approval.approver == "alice"
    update = slack.sent("chat.update")[-1]
    assert (update["channel"], update["ts"]) == (CHANNEL, "1.000001")
    assert "Approved by alice" in text_of(update)
    assert not has_buttons(update)
    assert slack.sent("chat.postEphemeral") == []


async def test_deny_and_reply_decide_as_the_mapped_user(
    client: Client,
    deployment: Deployment,
    worker: None,
    slack: FakeSlack,
    interactions: Interactions,
) -> None:
    denied = await waiting_calculator(client, deployment.task_queue)
    message = await slack.wait_for("chat.postMessage")
    await interactions.send(click(message, "1.000001", DENY, USERS["bob"]))
    result = await denied.result()
    assert result.status is CallStatus.DENIED
    assert result.approval is not None
    assert result.approval.approver == "bob"
    assert "Denied by bob" in text_of(slack.sent("chat.update")[-1])

    replied = await waiting_calculator(client, deployment.task_queue)
    message = await slack.wait_for("chat.postMessage", 2)
    await interactions.send(click(message, "1.000002", REPLY, USERS["alice"]))
    opened = slack.sent("views.open")[-1]
    assert opened["trigger_id"].startswith("13345224609.")
    # A blank reply keeps the form open with its error; nothing is decided.
    blank = await interactions.send(submission(opened["view"], USERS["alice"], "  "))
    assert blank.json()["response_action"] == "errors"
    await assert_nothing_decided(replied)
    done = await interactions.send(submission(opened["view"], USERS["alice"], "It is 42."))
    assert done.status_code == 200
    assert done.content == b""
    result = await replied.result()
    assert result.error is not None
    assert result.error.code is ErrorCode.RESPONDED
    assert result.response == "It is 42."
    update = slack.sent("chat.update")[-1]
    assert update["ts"] == "1.000002"
    assert "Answered by alice" in text_of(update)


async def test_bad_signature_old_timestamp_and_replay_are_refused(
    client: Client,
    deployment: Deployment,
    worker: None,
    slack: FakeSlack,
    interactions: Interactions,
) -> None:
    handle = await waiting_calculator(client, deployment.task_queue)
    message = await slack.wait_for("chat.postMessage")
    body = form_body(click(message, "1.000001", APPROVE, USERS["alice"]))

    wrong = await interactions.post(body, signed_headers(body, secret="not the signing secret"))
    assert (wrong.status_code, wrong.text) == (401, "slack: the request's signature does not match")
    # Signed, then changed on the way: alice's click made into bob's.
    tampered = await interactions.post(body.replace(b"U0ALICE", b"U0BOB__"), signed_headers(body))
    assert tampered.status_code == 401
    unsigned = await interactions.post(body, {"Content-Type": "application/x-www-form-urlencoded"})
    assert unsigned.status_code == 401

    old = await interactions.post(body, signed_headers(body, timestamp=int(time.time()) - 301))
    assert old.status_code == 401
    assert old.text == "slack: the request's timestamp is more than five minutes away"

    huge = b"payload=" + b"x" * 1_100_000
    assert (await interactions.post(huge, signed_headers(huge))).status_code == 413
    not_a_form = b'{"type": "block_actions"}'
    malformed = await interactions.post(not_a_form, signed_headers(not_a_form))
    assert (malformed.status_code, malformed.text) == (
        400,
        "slack: the body is not a form with one payload",
    )

    foreign = form_body(click(message, "1.000001", APPROVE, USERS["alice"], team="T0OTHER"))
    from_elsewhere = await interactions.post(foreign, signed_headers(foreign))
    assert from_elsewhere.status_code == 403
    assert from_elsewhere.text == "slack: the request is not from workspace T0EXAMPLE"
    await assert_nothing_decided(handle)
    assert slack.sent("chat.update") == []
    assert slack.sent("chat.postEphemeral") == []

    # Signed a minute ago: inside the window, the first delivery is taken, the same one again
    # is a replay.
    bobs = form_body(click(message, "1.000001", APPROVE, USERS["bob"]))
    headers = signed_headers(bobs, timestamp=int(time.time()) - 60)
    first = await interactions.post(bobs, headers)
    await interactions.endpoint.idle()
    assert first.status_code == 200
    again = await interactions.post(bobs, headers)
    assert again.status_code == 401
    assert again.text == "slack: the request was already taken (a replay)"
    result = await handle.result()
    assert result.approval is not None
    assert result.approval.approver == "bob"
    assert len(slack.sent("chat.update")) == 1


async def test_unmapped_users_and_users_outside_the_group_decide_nothing(
    client: Client,
    deployment: Deployment,
    worker: None,
    slack: FakeSlack,
    interactions: Interactions,
) -> None:
    handle = await waiting_calculator(client, deployment.task_queue)
    message = await slack.wait_for("chat.postMessage")

    stranger = await interactions.send(click(message, "1.000001", APPROVE, UNMAPPED))
    assert stranger.status_code == 200
    told = slack.sent("chat.postEphemeral")[-1]
    assert (told["channel"], told["user"]) == (CHANNEL, UNMAPPED)
    assert told["text"].startswith(f"Nothing was done: your Slack user ({UNMAPPED}) is not an")

    await interactions.send(click(message, "1.000001", APPROVE, USERS["mallory"]))
    told = slack.sent("chat.postEphemeral")[-1]
    assert told["user"] == USERS["mallory"]
    assert told["text"] == "Nothing was done: mallory may not decide this call: it needs ops."

    await assert_nothing_decided(handle)
    assert slack.sent("chat.update") == []


async def test_the_two_person_rule_holds_from_slack(
    client: Client,
    deployment: Deployment,
    worker: None,
    slack: FakeSlack,
    interactions: Interactions,
) -> None:
    target = deployment.path.parent / "work" / "two.txt"
    handle = await start_call(
        client, deployment.task_queue, "create_file", {"path": str(target), "content": "two\n"}
    )
    await pending_approval(handle)
    message = await slack.wait_for("chat.postMessage")
    assert "two" in text_of(message)  # the preview of the file it would create

    await interactions.send(click(message, "1.000001", APPROVE, USERS["alice"]))
    first = slack.sent("chat.update")[-1]
    assert "Approved by alice (1 of 2 approvals)" in text_of(first)
    assert has_buttons(first)
    assert (await pending_approval(handle)).approved_by == ["alice"]

    await interactions.send(click(message, "1.000001", APPROVE, USERS["alice"]))
    told = slack.sent("chat.postEphemeral")[-1]
    assert told["text"] == (
        "Nothing was done: alice already approved this call: it needs another approver."
    )
    assert (await pending_approval(handle)).approved_by == ["alice"]
    assert not target.exists()

    await interactions.send(click(first, "1.000001", APPROVE, USERS["bob"]))
    result = await handle.result()
    assert result.status is CallStatus.COMPLETED
    assert sorted(record.approver for record in result.approvals) == ["alice", "bob"]
    assert target.read_text() == "two\n"


async def test_a_stale_button_answers_with_the_current_state(
    client: Client,
    deployment: Deployment,
    worker: None,
    slack: FakeSlack,
    calls: ToolCallClient,
    interactions: Interactions,
) -> None:
    decided = await waiting_calculator(client, deployment.task_queue)
    message = await slack.wait_for("chat.postMessage")
    await calls.deny(decided.id, approver="bob", reason="elsewhere")
    await decided.result()
    await interactions.send(click(message, "1.000001", APPROVE, USERS["alice"]))
    update = slack.sent("chat.update")[-1]
    assert "the call has ended: denied (approval_denied), decided by bob" in text_of(update)
    assert not has_buttons(update)
    told = slack.sent("chat.postEphemeral")[-1]
    assert told["text"].startswith("Nothing was done: the call has ended: denied")
    ended = await decided.result()
    assert ended.approval is not None
    assert ended.approval.approver == "bob"

    edited = await waiting_calculator(client, deployment.task_queue)
    message = await slack.wait_for("chat.postMessage", 2)
    new = await calls.propose_edit(edited.id, {"expression": "6 * 8"}, editor="bob")
    await interactions.send(click(message, "1.000002", APPROVE, USERS["alice"]))
    update = slack.sent("chat.update")[-1]
    assert "6 * 8" in text_of(update)
    assert "was edited" in text_of(update)
    assert new.request_id in str(update["blocks"][-1])  # fresh buttons, for the new request
    assert "edited" in slack.sent("chat.postEphemeral")[-1]["text"]
    assert (await pending_approval(edited)).request_id == new.request_id
    assert (await pending_approval(edited)).approved_by == []
    # The refreshed message's buttons decide the edited request.
    await interactions.send(click(update, "1.000002", APPROVE, USERS["alice"]))
    result = await edited.result()
    assert result.status is CallStatus.COMPLETED
    assert result.output["result"] == 48


async def test_a_channel_slack_refuses_is_an_event_and_the_call_still_waits(
    client: Client, deployment: Deployment, worker: None, slack: FakeSlack
) -> None:
    slack.fail["chat.postMessage"] = "not_in_channel"
    handle = await waiting_calculator(client, deployment.task_queue)
    loop_until = time.monotonic() + 20
    while True:
        state = await handle.query(ToolCallWorkflow.status)
        failed = [e for e in state.events if e.kind is EventKind.NOTIFICATION_FAILED]
        if failed or time.monotonic() > loop_until:
            break
        await asyncio.sleep(0.2)
    assert [e.message for e in failed] == [
        "waiting to slack: configuration_error: notify: slack: chat.postMessage: not_in_channel"
    ]
    # Only the deployment can mend it: tried once, not retried.
    assert len(slack.sent("chat.postMessage")) == 1
    assert (await pending_approval(handle)).approved_by == []


async def test_toolcalls_inbox_serves_the_endpoint_from_the_file(
    deployment: Deployment, calls: ToolCallClient
) -> None:
    """``toolcalls inbox``'s own serving path: the plan from the file and the environment, the
    endpoint on the inbox's port, its refusal of an unsigned request."""
    port = free_port()
    listen = f"127.0.0.1:{port}"
    users = '[[inbox.users]]\nname = "alice"\npassword_hash = "' + fast_hash("pw") + '"\n'
    deployment.path.write_text(deployment.path.read_text() + users)
    settled = plan(load_config(deployment.path), ENVIRON, listen=listen)
    stop = asyncio.Event()
    announced: list[str] = []
    serving = asyncio.ensure_future(serve(settled, calls, stop, announce=announced.append))
    while not announced:
        assert not serving.done(), serving
        await asyncio.sleep(0.05)
    assert announced[0].endswith(f"; Slack interactions at http://{listen}/slack/interactions")
    async with httpx.AsyncClient(base_url=f"http://{listen}") as http:
        body = b"payload=%7B%7D"
        unsigned = await http.post("/slack/interactions", content=body)
        signed = await http.post("/slack/interactions", content=body, headers=signed_headers(body))
    stop.set()
    await serving
    assert (unsigned.status_code, unsigned.text) == (401, "slack: the request is not signed")
    # Signed, so taken as far as the workspace check: ``{}`` names none.
    assert (signed.status_code, signed.text) == (
        403,
        "slack: the request is not from workspace T0EXAMPLE",
    )

"""Looking an uncertain write up by its Message-ID in Gmail (``rfc822msgid:``) and Graph
(``internetMessageId``), answered in each service's documented format at the transport seam."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Replayer

from tests.activities.email import custom_backend
from tests.activities.email.services import TOKEN_ENV, Routes, backend_tools
from tests.activities.email.support import CALL, code_of
from tests.support.harness import make_config, run_call
from tests.support.tools import ALL_FAMILIES, ALL_TOOL_NAMES
from toolcalls.activities.email.compose import message_id_for
from toolcalls.activities.email.tools import EmailTools
from toolcalls.worker.config import Config
from toolcalls.worker.plugin import ToolCallsPlugin
from toolcalls.worker.run import build_worker
from toolcalls.workflows.call.reconcile import ToolCallReconcileWorkflow
from toolcalls.workflows.models.call import CallStatus, ErrorCode
from toolcalls.workflows.models.reconcile import Lookup, LookupInput, ReconcileRequest, Settled
from toolcalls.workflows.reach.client import ToolCallClient

GMAIL = "/gmail/v1/users/me"
GRAPH = "/v1.0/me"


def lookup_input(tool: str, domain: str, message_id: str | None = None) -> LookupInput:
    recorded = message_id or message_id_for(CALL.idempotency_key, domain)
    return LookupInput(
        workflow_id=CALL.workflow_id,
        call_id=CALL.call_id,
        tool=tool,
        idempotency_key=CALL.idempotency_key,
        output={"tool": tool, "message_id": recorded},
    )


async def reconcile(mail: EmailTools, tool: str, call: LookupInput) -> Lookup:
    method = getattr(mail, f"reconcile_{tool}")
    result: Lookup = await ActivityEnvironment().run(method, call)
    return result


async def test_gmail_finds_a_sent_message_by_rfc822msgid() -> None:
    routes = Routes()
    listing: dict[str, Any] = {
        "messages": [{"id": "18c2f0a9b1d3e4f5", "threadId": "18c2f0a9b1d3e4f0"}],
        "resultSizeEstimate": 1,
    }
    routes.on("GET", f"{GMAIL}/messages", listing)
    mail = backend_tools("gmail", routes, sender="me@example.com")
    expected = message_id_for(CALL.idempotency_key, "example.com")

    found = await reconcile(mail, "send_email", lookup_input("send_email", "example.com"))

    assert found == Lookup(
        found=True,
        checked=f"searched gmail messages in:sent (gmail) for Message-ID {expected}",
        evidence={
            "message_id": expected,
            "id": "18c2f0a9b1d3e4f5",
            "thread_id": "18c2f0a9b1d3e4f0",
        },
    )
    [request] = routes.requests
    assert request.method == "GET"
    assert request.url.params["q"] == f"rfc822msgid:{expected[1:-1]} in:sent"


async def test_gmail_answers_not_found_with_what_was_searched() -> None:
    routes = Routes()
    routes.on("GET", f"{GMAIL}/messages", {"resultSizeEstimate": 0})
    mail = backend_tools("gmail", routes, sender="me@example.com")
    expected = message_id_for(CALL.idempotency_key, "example.com")

    found = await reconcile(
        mail, "create_email_draft", lookup_input("create_email_draft", "example.com")
    )

    assert found.found is False
    assert found.evidence is None
    assert found.checked == (
        f"searched gmail messages in:drafts (gmail) for Message-ID {expected}: not there"
    )
    assert routes.requests[0].url.params["q"] == f"rfc822msgid:{expected[1:-1]} in:drafts"


async def test_graph_filters_sent_items_on_internet_message_id() -> None:
    routes = Routes()
    expected = message_id_for(CALL.idempotency_key, "contoso.com")
    listing = {
        "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users('me')/messages",
        "value": [{"id": "AAMkAGI2TG93AAA=", "internetMessageId": expected}],
    }
    routes.on("GET", f"{GRAPH}/mailFolders/sentitems/messages", listing)
    mail = backend_tools("outlook", routes, sender="me@contoso.com")

    found = await reconcile(mail, "send_email", lookup_input("send_email", "contoso.com"))

    assert found == Lookup(
        found=True,
        checked=f"searched graph mail folder sentitems (outlook) for Message-ID {expected}",
        evidence={"message_id": expected, "id": "AAMkAGI2TG93AAA=", "folder": "sentitems"},
    )
    [request] = routes.requests
    assert request.url.params["$filter"] == f"internetMessageId eq '{expected}'"


async def test_graph_answers_not_found_for_an_empty_drafts_folder() -> None:
    routes = Routes()
    routes.on("GET", f"{GRAPH}/mailFolders/drafts/messages", {"value": []})
    mail = backend_tools("outlook", routes, sender="me@contoso.com")

    found = await reconcile(
        mail, "create_email_draft", lookup_input("create_email_draft", "contoso.com")
    )

    assert found.found is False
    assert found.checked.startswith("searched graph mail folder drafts (outlook) for Message-ID <")


async def test_a_graph_failure_is_the_lookups_error_not_an_answer() -> None:
    routes = Routes()
    error = {"error": {"code": "ErrorAccessDenied", "message": "Access is denied."}}
    routes.on("GET", f"{GRAPH}/mailFolders/sentitems/messages", error, 403)
    mail = backend_tools("outlook", routes, sender="me@contoso.com")

    with pytest.raises(ApplicationError) as caught:
        await reconcile(mail, "send_email", lookup_input("send_email", "contoso.com"))

    assert caught.value.message.startswith("send_email: ")
    assert "403" in caught.value.message


async def test_only_the_message_id_the_calls_key_gives_is_searched() -> None:
    routes = Routes()
    mail = backend_tools("gmail", routes, sender="me@example.com")
    foreign = lookup_input("send_email", "example.com", message_id="<someone-else@example.com>")

    with pytest.raises(ApplicationError) as caught:
        await reconcile(mail, "send_email", foreign)

    assert code_of(caught.value) is ErrorCode.INVALID_ARGUMENTS
    assert caught.value.message == (
        "send_email: the call recorded no Message-ID of its own to look for"
    )
    assert routes.requests == []


SENT_LOOKUP = {
    "gmail": ("POST", f"{GMAIL}/messages/send", f"{GMAIL}/messages"),
    "outlook": ("POST", f"{GRAPH}/sendMail", f"{GRAPH}/mailFolders/sentitems/messages"),
}


@pytest.mark.parametrize("kind", ["gmail", "outlook"])
async def test_a_send_the_service_left_uncertain_is_found_through_the_client(
    client: Client, task_queue: str, kind: str
) -> None:
    method, send, lookup_path = SENT_LOOKUP[kind]
    routes = Routes()
    unavailable = {"error": {"code": 503, "message": "The service is currently unavailable."}}
    routes.on(method, send, unavailable, 503)
    searched: list[str] = []

    def sent_items(request: httpx.Request) -> httpx.Response:
        # The message the 503 hid did go out: the service lists it under its Message-ID.
        wanted = request.url.params.get("q") or request.url.params["$filter"]
        searched.append(wanted)
        if kind == "gmail":
            return httpx.Response(200, json={"messages": [{"id": "18c3", "threadId": "18c3"}]})
        message_id = wanted.split("'")[1]
        return httpx.Response(
            200, json={"value": [{"id": "AAMkAD=", "internetMessageId": message_id}]}
        )

    routes.on("GET", lookup_path, sent_items)
    tools = backend_tools(kind, routes, sender="me@example.org")
    config = make_config(
        task_queue,
        tools=[*ALL_TOOL_NAMES, "send_email"],
        email={"backend": kind, "token_env": TOKEN_ENV, "sender": "me@example.org"},
        ceiling={"default_effect": "allow"},
    )
    calls = ToolCallClient(client, task_queue=task_queue)
    message = {"to": ["bob@example.org"], "subject": "Once", "body": "Only once."}
    async with build_worker(client, config, families=ALL_FAMILIES, instances={EmailTools: tools}):
        sent = await run_call(client, task_queue, "send_email", message)
        settled = await calls.reconcile(sent.workflow_id)

    expected = message_id_for(f"{sent.workflow_id}:{sent.call_id}", "example.org")
    assert sent.status is CallStatus.UNCERTAIN
    assert sent.output["message_id"] == expected
    assert settled.outcome is Settled.FOUND
    assert settled.evidence is not None
    assert settled.evidence["message_id"] == expected
    assert len(searched) == 1
    assert expected[1:-1] in searched[0]
    assert [r.url.path for r in routes.requests].count(send) == 1  # never sent again


@pytest.mark.parametrize("owner", ["ops", "failing"])
async def test_a_backend_of_the_deployments_own_is_looked_up_through_find_message(
    client: Client, task_queue: str, owner: str
) -> None:
    key = f"wf-custom-{owner}:call-1"
    message_id = message_id_for(key, "example.org")
    custom_backend.SENT.append({"to": ["b@example.org"], "subject": "s", "message_id": message_id})
    config = make_config(
        task_queue,
        tools=[*ALL_TOOL_NAMES, "send_email"],
        email={
            "backend": "tests.activities.email.custom_backend:MemoryMail",
            "options": {"owner": owner},
            "sender": "me@example.org",
        },
        ceiling={"default_effect": "allow"},
    )
    workflow_id, _, call_id = key.partition(":")
    request = ReconcileRequest(
        lookup=LookupInput(
            workflow_id=workflow_id,
            call_id=call_id,
            tool="send_email",
            idempotency_key=key,
            output={"tool": "send_email", "message_id": message_id},
        ),
        task_queue=task_queue,
    )
    async with build_worker(client, config, families=ALL_FAMILIES):
        handle = await client.start_workflow(
            ToolCallReconcileWorkflow.run,
            request,
            id=f"{workflow_id}-{task_queue}/reconcile",
            task_queue=task_queue,
        )
        answer = await handle.result()
    # The answer's history replays with the plugin's replayer: the workflow is deterministic.
    replayer = Replayer(workflows=[], plugins=[ToolCallsPlugin(Config())])
    replayed = await replayer.replay_workflow(
        await handle.fetch_history(), raise_on_replay_failure=False
    )
    assert replayed.replay_failure is None
    if owner == "failing":
        # A plain exception's text may hold what a service said: only its type is recorded.
        assert answer.outcome is Settled.UNCHECKED
        assert answer.checked == "the lookup failed (RuntimeError)"
        assert custom_backend.PRIVATE_TEXT not in answer.model_dump_json()
    else:
        assert answer.outcome is Settled.FOUND
        assert answer.evidence == {"message_id": message_id, "queue_id": "q-1", "folder": "sent"}
        assert answer.checked == (
            "searched the sent folder (tests.activities.email.custom_backend:MemoryMail) for "
            f"Message-ID {message_id}"
        )

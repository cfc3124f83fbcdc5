"""Looking an uncertain write up by its Message-ID in Gmail (``rfc822msgid:``) and Graph
(``internetMessageId``), answered in each service's documented format at the transport seam."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.activities.email.services import Routes, backend_tools
from tests.activities.email.support import CALL, code_of
from toolcalls.activities.email.compose import message_id_for
from toolcalls.activities.email.tools import EmailTools
from toolcalls.workflows.models.call import ErrorCode
from toolcalls.workflows.models.reconcile import Lookup, LookupInput

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

"""The Microsoft Graph backend against responses in Graph v1.0's documented formats."""

from __future__ import annotations

import httpx

from tests.activities.email.services import REMOTE_TEXT, TOKEN, Routes, backend_tools, body_json
from tests.activities.email.support import CALL, call, code_of, details, failure
from toolcalls.activities.email.compose import message_id_for
from toolcalls.workflows.models.call import ErrorCode

ME = "/v1.0/me"
GRAPH = "https://graph.microsoft.com"
MESSAGE = {"to": ["bob@example.org", "carol@example.net"], "subject": "Review", "body": "Ready."}


def graph_message(message_id: str, subject: str, **extra: object) -> dict[str, object]:
    return {
        "id": message_id,
        "subject": subject,
        "from": {"emailAddress": {"name": "Alice", "address": "alice@contoso.com"}},
        "toRecipients": [{"emailAddress": {"name": "Bob", "address": "bob@contoso.com"}}],
        "ccRecipients": [],
        "receivedDateTime": "2026-11-30T09:00:00Z",
        "internetMessageId": f"<{subject}@contoso.com>",
        **extra,
    }


def next_link(skip: int, **params: str) -> str:
    query = {"$top": "2", "$skip": str(skip), **params}
    return str(httpx.URL(f"{GRAPH}{ME}/messages", params=query))


async def test_pages_follow_checked_links_with_immutable_ids_and_text_bodies() -> None:
    routes = Routes()

    def listing(request: httpx.Request) -> httpx.Response:
        if "$skip" in request.url.params:
            return httpx.Response(200, json={"value": [graph_message("AAMk3", "third")]})
        return httpx.Response(
            200,
            json={
                "@odata.context": f"{GRAPH}/v1.0/$metadata#users('me')/messages",
                "value": [graph_message("AAMk1", "first"), graph_message("AAMk2", "second")],
                "@odata.nextLink": next_link(2, **{"$orderby": "receivedDateTime desc"}),
            },
        )

    routes.on("GET", f"{ME}/messages", listing)
    mail = backend_tools("outlook", routes)
    first = await call(mail, "list_email_messages", {"max_results": 2})
    assert [(i["id"], i["subject"]) for i in first.items] == [
        ("AAMk1", "first"),
        ("AAMk2", "second"),
    ]
    assert first.items[0]["from"] == "Alice <alice@contoso.com>"
    assert first.items[0]["to"] == "Bob <bob@contoso.com>"
    assert first.items[0]["message_id"] == "<first@contoso.com>"
    request = routes.requests[0]
    assert request.url.params["$orderby"] == "receivedDateTime desc"
    assert request.url.params["$top"] == "2"
    assert 'IdType="ImmutableId"' in request.headers["prefer"]
    assert 'outlook.body-content-type="text"' in request.headers["prefer"]
    assert request.headers["authorization"] == f"Bearer {TOKEN}"

    second = await call(
        mail, "list_email_messages", {"max_results": 2, "page_token": first.next_page_token}
    )
    assert [i["id"] for i in second.items] == ["AAMk3"]
    assert second.next_page_token is None
    assert str(routes.requests[1].url) == first.next_page_token


async def test_a_query_is_graph_search_and_no_link_can_leave_the_mailbox() -> None:
    routes = Routes()
    routes.on(
        "GET",
        f"{ME}/messages",
        {
            "value": [graph_message("AAMk1", "hit")],
            "@odata.nextLink": "https://evil.example/v1.0/me/messages?$skiptoken=x",
        },
    )
    mail = backend_tools("outlook", routes)
    error = await failure(mail, "list_email_messages", {"query": 'subject:"q4 review"'})
    assert routes.requests[0].url.params["$search"] == '"subject:\\"q4 review\\""'
    assert "$orderby" not in routes.requests[0].url.params
    assert code_of(error) is ErrorCode.EXECUTION_FAILED
    assert "leaves the service's host" in error.message

    foreign = [
        "https://evil.example/v1.0/me/messages?$skip=2",
        f"{GRAPH}/v1.0/users/ceo@contoso.com/messages?$skip=2",
        f"{GRAPH}/v1.0/me/mailFolders/archive/messages?$skip=2",
        next_link(2, **{"$search": '"other"'}),
        f"http://graph.microsoft.com{ME}/messages?$skip=2",
    ]
    for token in foreign:
        refused = await failure(
            mail, "list_email_messages", {"max_results": 2, "page_token": token}
        )
        assert code_of(refused) is ErrorCode.INVALID_ARGUMENTS, token
        assert details(refused)["fixable_args"] == ["page_token"]
    assert len(routes.requests) == 1  # none of them was requested


async def test_a_read_returns_graph_s_plain_text_and_never_changes_read_state() -> None:
    routes = Routes()
    routes.on(
        "GET",
        f"{ME}/messages/AAMk1=",
        graph_message(
            "AAMk1=",
            "text",
            body={"contentType": "text", "content": "Plain text from Graph.\r\nLine two."},
            bodyPreview="Plain text from Graph. Line two.",
            hasAttachments=True,
        ),
    )
    routes.on(
        "GET",
        f"{ME}/messages/AAMk2",
        graph_message("AAMk2", "html", body={"contentType": "html", "content": "<b>x</b>"}),
    )
    mail = backend_tools("outlook", routes)
    read = await call(mail, "read_email", {"message_id": "AAMk1="})
    assert read.body == "Plain text from Graph.\nLine two."
    assert read.snippet == "Plain text from Graph. Line two."
    assert (read.has_attachments, read.html_body_omitted) == (True, False)
    assert read.headers["date"] == "2026-11-30T09:00:00Z"
    html = await call(mail, "read_email", {"message_id": "AAMk2"})
    assert (html.body, html.html_body_omitted) == ("", True)
    assert "body" in routes.requests[0].url.params["$select"]
    assert all(r.method == "GET" for r in routes.requests)


async def test_drafts_return_the_draft_object_and_sends_are_accepted() -> None:
    routes = Routes()
    routes.on(
        "POST",
        f"{ME}/messages",
        graph_message(
            "AAMkD",
            "Review",
            isDraft=True,
            webLink="https://outlook.office365.com/owa/?ItemID=AAMkD",
            body={"contentType": "text", "content": "Ready."},
        ),
        201,
    )
    routes.on("POST", f"{ME}/sendMail", lambda _: httpx.Response(202))
    mail = backend_tools("outlook", routes, user_id="me", sender="me@contoso.com")
    drafted = await call(mail, "create_email_draft", MESSAGE)
    sent = await call(mail, "send_email", MESSAGE)
    expected = message_id_for(CALL.idempotency_key, "contoso.com")
    assert drafted.status == "drafted"
    assert drafted.id == "AAMkD"
    assert drafted.message_id == expected
    assert drafted.service is not None
    assert drafted.service["isDraft"] is True
    assert "body" not in drafted.service
    assert sent.model_dump(exclude_none=True) == {"status": "accepted", "message_id": expected}
    draft_body, send_body = (body_json(r) for r in routes.requests)
    assert draft_body == {
        "subject": "Review",
        "body": {"contentType": "Text", "content": "Ready."},
        "toRecipients": [
            {"emailAddress": {"address": "bob@example.org"}},
            {"emailAddress": {"address": "carol@example.net"}},
        ],
        "internetMessageId": expected,
        "from": {"emailAddress": {"address": "me@contoso.com"}},
    }
    assert send_body == {"message": draft_body, "saveToSentItems": True}


async def test_an_explicit_user_and_graph_s_errors() -> None:
    routes = Routes()
    routes.on(
        "GET",
        "/v1.0/users/alice@contoso.com/messages/AAMk9",
        {"error": {"code": "ErrorAccessDenied", "message": REMOTE_TEXT}},
        403,
    )
    routes.on(
        "POST", "/v1.0/users/alice@contoso.com/sendMail", {"error": {"message": REMOTE_TEXT}}, 500
    )
    mail = backend_tools("outlook", routes, user_id="alice@contoso.com")
    denied = await failure(mail, "read_email", {"message_id": "AAMk9"})
    assert code_of(denied) is ErrorCode.CONFIGURATION_ERROR
    assert REMOTE_TEXT not in denied.message
    broken = await failure(mail, "send_email", MESSAGE)
    assert code_of(broken) is ErrorCode.UNCERTAIN
    assert details(broken)["output"]["message_id"] == message_id_for(
        CALL.idempotency_key, "contoso.com"
    )
    assert routes.paths() == [
        "GET /v1.0/users/alice@contoso.com/messages/AAMk9",
        "POST /v1.0/users/alice@contoso.com/sendMail",
    ]

"""``OutlookEmail``: one Microsoft 365 / Outlook mailbox through Graph v1.0 (``backend =
"outlook"``).

Permissions: ``Mail.Read`` to list and read, ``Mail.ReadWrite`` to draft, ``Mail.Send`` to send.
Every request stays on ``https://graph.microsoft.com/v1.0`` and asks for immutable ids and
plain-text bodies (``Prefer``); a read never changes ``isRead``. A continuation link is followed
only after it is checked against the first request's host and collection (``continuation``), so it
cannot reach another user or mailbox. Drafts and sends set ``internetMessageId`` to the Message-ID
the tools derived.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx

from toolcalls.activities.connections import Connections
from toolcalls.activities.email import mime
from toolcalls.activities.email.backend import (
    ListProgress,
    MailRejected,
    MailServiceFailure,
    write_point,
)
from toolcalls.activities.email.compose import check_as_previewed, check_size, previewed_fields
from toolcalls.activities.email.service_api import (
    field,
    json_object,
    objects,
    request,
    service_client,
)
from toolcalls.activities.email.settings import EmailSettings
from toolcalls.activities.network.guard import NetworkGuard
from toolcalls.activities.network.service import LinkRefused, continuation

API = "https://graph.microsoft.com/v1.0"
PREFER = 'IdType="ImmutableId", outlook.body-content-type="text"'
LOOKUP_FOLDERS = {"sent": "sentitems", "drafts": "drafts"}
"""Graph's well-known folder names of what reconciling looks in."""
QUERY_HELP = (
    "The query uses Microsoft Graph message search (KQL), for example subject:review or "
    "from:person@example.com or a plain word; at most 1,000 matching messages are found. An "
    "empty query lists the mailbox by received time, newest first."
)
LIST_FIELDS = "id,subject,from,toRecipients,ccRecipients,receivedDateTime,internetMessageId"
READ_FIELDS = f"{LIST_FIELDS},body,bodyPreview,hasAttachments"
DRAFT_FIELDS = (
    "id",
    "subject",
    "isDraft",
    "createdDateTime",
    "lastModifiedDateTime",
    "webLink",
    "conversationId",
    "internetMessageId",
    "toRecipients",
    "from",
)
"""The draft object's fields a result keeps (not its body: the call has it)."""
_FIXED = ("$search", "$top", "$select", "$orderby")
"""A continuation link may not change these (another query, page size or shape)."""
_ID = re.compile(r"[A-Za-z0-9_=+/-]{1,1024}")


class OutlookEmail:
    """The ``[email]`` Graph mailbox of ``user_id`` (``me`` for a delegated token)."""

    query_help = QUERY_HELP
    tracks_writes = True

    def __init__(
        self,
        settings: EmailSettings,
        environ: Mapping[str, str],
        *,
        guard: NetworkGuard | None = None,
        connections: Connections | None = None,
    ) -> None:
        self._settings = settings
        self._client = service_client("microsoft graph", settings, environ, guard, connections)
        user = settings.user_id
        self._base = f"{API}/me" if user == "me" else f"{API}/users/{quote(user, safe='@')}"

    async def list_messages(
        self,
        *,
        query: str,
        max_results: int,
        page_token: str | None,
        on_progress: ListProgress | None = None,
    ) -> dict[str, Any]:
        """One page of Graph's messages (their headers come with it); ``on_progress`` hears of
        the page once it is read."""
        first = self._first_page(query, max_results)
        if page_token is None:
            url = first
        else:
            try:
                url = str(continuation(page_token, first, fixed_params=_FIXED))
            except LinkRefused as exc:
                raise MailRejected(
                    f"page_token: {exc.reason}; pass next_page_token unchanged, with the same "
                    "query and max_results",
                    "page_token",
                ) from None
        response = await request(
            self._client, "GET", url, headers={"Prefer": PREFER}, argument="query"
        )
        page = json_object(self._client, response)
        items = [
            {"id": message["id"], **_headers(message, mime.LIST_HEADER_CHARS)}
            for message in objects(page.get("value"))
            if isinstance(message.get("id"), str)
        ][:max_results]
        if on_progress is not None:
            on_progress(len(items), len(items))
        link = page.get("@odata.nextLink")
        if isinstance(link, str):
            try:
                continuation(link, first, fixed_params=_FIXED)
            except LinkRefused as exc:
                raise MailServiceFailure(self._client.service, exc) from None
        return {"items": items, "next_page_token": link if isinstance(link, str) else None}

    def _first_page(self, query: str, max_results: int) -> str:
        params = {"$top": str(max_results), "$select": LIST_FIELDS}
        if query:
            # Graph's $search takes the KQL in double quotes; it cannot be combined with $orderby.
            params["$search"] = '"' + query.replace("\\", "\\\\").replace('"', '\\"') + '"'
        else:
            params["$orderby"] = "receivedDateTime desc"
        return str(httpx.URL(f"{self._base}/messages", params=params))

    async def get_message(self, *, message_id: str) -> dict[str, Any]:
        if not _ID.fullmatch(message_id):
            raise MailRejected(
                "message_id: not a graph message id; use an id from list_email_messages",
                "message_id",
            )
        response = await request(
            self._client,
            "GET",
            f"{self._base}/messages/{quote(message_id, safe='')}",
            params={"$select": READ_FIELDS},
            headers={"Prefer": PREFER},
            argument="message_id",
        )
        message = json_object(self._client, response)
        body = field(message.get("body"))
        content = body.get("content")
        content = content if isinstance(content, str) else ""
        found = mime.Found(attachments=message.get("hasAttachments") is True)
        if str(body.get("contentType", "text")).lower() == "html":
            found.html = bool(content.strip())  # Graph ignored the plain-text preference
        elif content:
            found.texts.append(content)
        preview = message.get("bodyPreview")
        return mime.read_result(
            message_id,
            _headers(message, mime.READ_HEADER_CHARS),
            found,
            snippet=preview if isinstance(preview, str) and preview.strip() else None,
        )

    async def create_draft(
        self, *, to: list[str], subject: str, body: str, message_id: str
    ) -> dict[str, Any]:
        message = self._message(to, subject, body, message_id)
        write_point()
        response = await request(
            self._client,
            "POST",
            f"{self._base}/messages",
            json_body=message,
            headers={"Prefer": PREFER},
        )
        draft = json_object(self._client, response)
        return {
            "status": "drafted",
            "message_id": message_id,
            "id": draft.get("id") if isinstance(draft.get("id"), str) else None,
            "service": {key: draft[key] for key in DRAFT_FIELDS if key in draft},
        }

    async def send_message(
        self, *, to: list[str], subject: str, body: str, message_id: str
    ) -> dict[str, Any]:
        message = self._message(to, subject, body, message_id)
        write_point()
        # 202 Accepted, no body: Graph queued it (and saves a copy to Sent Items).
        await request(
            self._client,
            "POST",
            f"{self._base}/sendMail",
            json_body={"message": message, "saveToSentItems": True},
        )
        return {"status": "accepted", "message_id": message_id}

    def folder_name(self, folder: str) -> str:
        """How a lookup names what it searched."""
        return f"graph mail folder {LOOKUP_FOLDERS.get(folder, folder)}"

    async def find_message(self, *, message_id: str, folder: str) -> dict[str, Any] | None:
        """The message whose ``internetMessageId`` is ``message_id`` in the well-known folder
        for ``folder`` (``sentitems``, ``drafts``): ``{"id", "folder"}``, or ``None``."""
        name = LOOKUP_FOLDERS[folder]
        if not message_id.isascii() or "'" in message_id or not message_id.isprintable():
            raise MailRejected("message_id: not a Message-ID graph can filter on", "message_id")
        response = await request(
            self._client,
            "GET",
            f"{self._base}/mailFolders/{name}/messages",
            params={
                "$filter": f"internetMessageId eq '{message_id}'",
                "$select": "id,internetMessageId",
                "$top": "1",
            },
            headers={"Prefer": PREFER},
        )
        entries = objects(json_object(self._client, response).get("value"))
        found = [e for e in entries if e.get("internetMessageId") == message_id]
        if not found:
            return None
        graph_id = found[0].get("id")
        return {"id": graph_id if isinstance(graph_id, str) else None, "folder": name}

    def _message(self, to: list[str], subject: str, body: str, message_id: str) -> dict[str, Any]:
        check_size(len(body.encode("utf-8")), self._settings.max_message_bytes, "the message")
        message: dict[str, Any] = {
            "subject": subject,
            "body": {"contentType": "Text", "content": body},
            "toRecipients": [{"emailAddress": {"address": address}} for address in to],
            "internetMessageId": message_id,
        }
        if self._settings.sender is not None:
            message["from"] = {"emailAddress": {"address": self._settings.sender}}
        check_as_previewed(
            graph_fields(message),
            previewed_fields(
                sender=self._settings.sender, to=to, subject=subject, message_id=message_id
            ),
            also={"body": frozenset({"Text"})},
        )
        return message


def graph_fields(message: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A Graph message's properties as the header fields Graph writes from them (``body`` as its
    content type); any other property keeps its own name, so it counts as one not previewed."""
    names = {"from": "From", "toRecipients": "To", "subject": "Subject"}
    fields: list[tuple[str, str]] = []
    for key, value in message.items():
        if key in ("from", "toRecipients"):
            entries = value if isinstance(value, list) else [value]
            text = ", ".join(str(_address_of(entry)) for entry in entries)
            fields.append((names[key], text))
        elif key == "internetMessageId":
            fields.append(("Message-ID", str(value)))
        elif key == "body":
            fields.append(("body", str(field(value).get("contentType"))))
        else:
            fields.append((names.get(key, key), str(value)))
    return fields


def _headers(message: Mapping[str, Any], limit: int) -> dict[str, str | None]:
    def text(value: Any) -> str | None:
        return mime.decode_header_value(value, limit) if isinstance(value, str) else None

    return {
        "from": text(_address(message.get("from"))),
        "to": text(_addresses(message.get("toRecipients"))),
        "cc": text(_addresses(message.get("ccRecipients"))),
        "date": text(message.get("receivedDateTime")),
        "subject": text(message.get("subject")),
        "message_id": text(message.get("internetMessageId")),
    }


def _address(recipient: Any) -> str | None:
    if not isinstance(recipient, dict) or not isinstance(recipient.get("emailAddress"), dict):
        return None
    entry = recipient["emailAddress"]
    address, name = entry.get("address"), entry.get("name")
    if not isinstance(address, str):
        return name if isinstance(name, str) else None
    return f"{name} <{address}>" if isinstance(name, str) and name and name != address else address


def _addresses(recipients: Any) -> str | None:
    found = [a for a in (_address(r) for r in objects(recipients)) if a]
    return ", ".join(found) if found else None


def _address_of(entry: Any) -> Any:
    return field(field(entry).get("emailAddress")).get("address")

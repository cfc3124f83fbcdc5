"""``Gmail``: one Gmail account through the Gmail API v1 (``backend = "gmail"``).

Scopes (``https://www.googleapis.com/auth/`` + ): ``gmail.readonly`` to list and read,
``gmail.compose`` to draft, ``gmail.send`` (or ``gmail.compose``) to send. Reads fetch
``format=metadata`` for lists and ``format=full`` for one message, whose text parts arrive inline
and whose attachments only by reference, never fetched; neither changes a label (nothing is
marked read). Composed mail is the raw RFC 5322 message, so its Message-ID is the one the tools
derived, and Gmail's ``rfc822msgid:`` search finds it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import html
import re
from collections.abc import Mapping, Sequence
from email.message import Message
from typing import Any
from urllib.parse import quote, urlencode

from toolcalls.activities.connections import Connections
from toolcalls.activities.email import mime
from toolcalls.activities.email.backend import (
    ListProgress,
    MailBackendError,
    MailConfiguration,
    MailRejected,
    write_point,
)
from toolcalls.activities.email.compose import check_size, composed
from toolcalls.activities.email.mail_ids import query_tag
from toolcalls.activities.email.service_api import (
    field,
    json_object,
    objects,
    request,
    service_client,
)
from toolcalls.activities.email.settings import EmailSettings
from toolcalls.activities.network.guard import NetworkGuard

API = "https://gmail.googleapis.com/gmail/v1/users"
QUERY_HELP = (
    "The query uses Gmail search syntax, for example from:alice@example.com is:unread "
    "newer_than:7d subject:(quarterly report); rfc822msgid:<id@example.com> finds a message by "
    "its Message-ID. An empty query lists every message except spam and trash, newest first."
)
METADATA_HEADERS = tuple(mime.HEADER_NAMES.values())
LIST_CONCURRENCY = 8
"""Metadata requests of one page in flight at once."""
_ID = re.compile(r"[A-Za-z0-9]{1,128}")
_SEARCHABLE_ID = re.compile(r"<[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9.-]+>")
"""A Message-ID a search query can carry as one word."""
_TOKEN = re.compile(r"gmail\.([0-9a-f]{12})\.([A-Za-z0-9_-]{1,1024})")


class Gmail:
    """The ``[email]`` Gmail account ``user_id``, its token in ``token_env`` or ``token_file``."""

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
        self._client = service_client("gmail", settings, environ, guard, connections)
        self._base = f"{API}/{quote(settings.user_id, safe='@')}"

    async def list_messages(
        self,
        *,
        query: str,
        max_results: int,
        page_token: str | None,
        on_progress: ListProgress | None = None,
    ) -> dict[str, Any]:
        """A page of ids, then each one's headers (``format=metadata``); ``on_progress`` hears
        of each message whose headers arrived, of the page's count."""
        params = {"maxResults": str(max_results)}
        if query:
            params["q"] = query
        if page_token is not None:
            params["pageToken"] = _continued(page_token, query, max_results)
        response = await request(
            self._client, "GET", f"{self._base}/messages", params=params, argument="query"
        )
        page = json_object(self._client, response)
        ids = [_message_id(entry) for entry in objects(page.get("messages"))][:max_results]
        limit = asyncio.Semaphore(LIST_CONCURRENCY)
        done = 0
        if on_progress is not None:
            on_progress(done, len(ids))

        async def headers(message_id: str) -> dict[str, Any]:
            nonlocal done
            async with limit:
                found = await self._metadata(message_id)
            done += 1
            if on_progress is not None:
                on_progress(done, len(ids))
            return found

        items = await asyncio.gather(*(headers(message_id) for message_id in ids))
        token = page.get("nextPageToken")
        next_token = (
            f"gmail.{query_tag(query, max_results)}.{token}"
            if isinstance(token, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,1024}", token)
            else None
        )
        return {"items": list(items), "next_page_token": next_token}

    async def _metadata(self, message_id: str) -> dict[str, Any]:
        # metadataHeaders repeats, once per header: the query string is built here.
        query = urlencode(
            [("format", "metadata"), *(("metadataHeaders", h) for h in METADATA_HEADERS)]
        )
        response = await request(self._client, "GET", f"{self._base}/messages/{message_id}?{query}")
        found = json_object(self._client, response)
        payload = field(found.get("payload"))
        return {
            "id": message_id,
            **mime.selected_headers(_headers(payload), mime.LIST_HEADER_CHARS),
        }

    async def get_message(self, *, message_id: str) -> dict[str, Any]:
        if not _ID.fullmatch(message_id):
            raise MailRejected(
                "message_id: not a gmail message id; use an id from list_email_messages",
                "message_id",
            )
        response = await request(
            self._client,
            "GET",
            f"{self._base}/messages/{message_id}",
            params={"format": "full"},
            argument="message_id",
        )
        found = json_object(self._client, response)
        size = found.get("sizeEstimate")
        if isinstance(size, int):
            check_size(size, self._settings.max_message_bytes, "the message")
        payload = field(found.get("payload"))
        headers = mime.selected_headers(_headers(payload), mime.READ_HEADER_CHARS)
        result = mime.read_result(message_id, headers, mime.walk(_GmailPart(payload)))
        snippet = found.get("snippet")
        if isinstance(snippet, str) and snippet.strip():
            result["snippet"] = mime.make_snippet(html.unescape(snippet))
        return result

    async def create_draft(
        self, *, to: list[str], subject: str, body: str, message_id: str
    ) -> dict[str, Any]:
        raw = self._raw(to, subject, body, message_id)
        write_point()
        response = await request(
            self._client, "POST", f"{self._base}/drafts", json_body={"message": {"raw": raw}}
        )
        draft = json_object(self._client, response)
        message = field(draft.get("message"))
        return {
            "status": "drafted",
            "message_id": message_id,
            "draft_id": _text(draft.get("id")),
            "id": _text(message.get("id")),
            "thread_id": _text(message.get("threadId")),
        }

    async def send_message(
        self, *, to: list[str], subject: str, body: str, message_id: str
    ) -> dict[str, Any]:
        raw = self._raw(to, subject, body, message_id)
        write_point()
        response = await request(
            self._client, "POST", f"{self._base}/messages/send", json_body={"raw": raw}
        )
        sent = json_object(self._client, response)
        return {
            "status": "accepted",
            "message_id": message_id,
            "id": _text(sent.get("id")),
            "thread_id": _text(sent.get("threadId")),
        }

    def folder_name(self, folder: str) -> str:
        """How a lookup names what it searched."""
        return f"gmail messages in:{folder}"

    async def find_message(self, *, message_id: str, folder: str) -> dict[str, Any] | None:
        """The message whose Message-ID is ``message_id`` in ``folder`` (``sent`` or ``drafts``),
        by Gmail's ``rfc822msgid:`` search: ``{"id", "thread_id"}``, or ``None``."""
        if not _SEARCHABLE_ID.fullmatch(message_id):
            raise MailRejected("message_id: not a Message-ID gmail can search", "message_id")
        params = {"q": f"rfc822msgid:{message_id[1:-1]} in:{folder}", "maxResults": "1"}
        response = await request(self._client, "GET", f"{self._base}/messages", params=params)
        entries = objects(json_object(self._client, response).get("messages"))
        if not entries:
            return None
        return {"id": _message_id(entries[0]), "thread_id": _text(entries[0].get("threadId"))}

    def _raw(self, to: list[str], subject: str, body: str, message_id: str) -> str:
        sender = self._settings.sender
        if sender is None:
            raise MailConfiguration(
                "email.sender: gmail composes from a fixed sender (the account or a send-as alias)"
            )
        data = composed(
            sender=sender, to=to, subject=subject, body=body, message_id=message_id, date=None
        )
        check_size(len(data), self._settings.max_message_bytes, "the message")
        return base64.urlsafe_b64encode(data).decode("ascii")


class _GmailPart:
    """A part of Gmail's ``format=full`` payload as ``mime.walk`` reads it."""

    def __init__(self, payload: Mapping[str, Any]) -> None:
        self._payload = payload
        header = Message()
        for name, value in _headers(payload):
            if name.lower() in ("content-type", "content-disposition"):
                header[name] = value
        self.content_type = str(payload.get("mimeType") or "text/plain").lower()
        self.disposition = header.get_content_disposition()
        self.filename = _text(payload.get("filename")) or None
        self.charset = header.get_content_charset()

    def children(self) -> Sequence[mime.Part]:
        return [_GmailPart(part) for part in objects(self._payload.get("parts"))]

    def payload(self) -> bytes:
        body = self._payload.get("body")
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, str):
            return b""
        try:
            return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
        except (binascii.Error, ValueError):
            return b""


def _continued(token: str, query: str, max_results: int) -> str:
    match = _TOKEN.fullmatch(token)
    if match is None:
        raise MailRejected(
            "page_token: not a page token of this backend; list again without it", "page_token"
        )
    if match.group(1) != query_tag(query, max_results):
        raise MailRejected(
            "page_token: it continues a listing with another query or max_results; keep both "
            "unchanged, or list again without page_token",
            "page_token",
        )
    return match.group(2)


def _headers(payload: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [
        (str(h.get("name")), str(h.get("value", "")))
        for h in objects(payload.get("headers"))
        if isinstance(h.get("name"), str)
    ]


def _message_id(entry: Mapping[str, Any]) -> str:
    value = entry.get("id")
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise MailBackendError("gmail listed a message without a usable id")
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None

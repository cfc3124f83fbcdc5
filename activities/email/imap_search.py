"""IMAP searches shared by the listing and the Message-ID lookups of ``IMAPEmail``."""

from __future__ import annotations

import imaplib
import re
from collections.abc import Callable
from typing import Any

from toolcalls.activities.email import mime
from toolcalls.activities.email.backend import MailBackendError, MailConfiguration, MailRejected

_UID = re.compile(rb"UID (\d+)")
HEADER_BATCH = 25
"""Messages whose headers one FETCH asks for: a listing reports its progress after each."""


def fetch_headers(
    conn: imaplib.IMAP4_SSL,
    uids: list[int],
    on_batch: Callable[[int, int], None] | None = None,
) -> dict[int, dict[str, str | None]]:
    """The selected headers of ``uids`` in the selected folder, by UID, fetched
    ``HEADER_BATCH`` messages at a time; ``on_batch(done, total)`` after each batch."""
    wanted = f"(UID BODY.PEEK[HEADER.FIELDS ({mime.HEADER_FIELDS})]<0.{mime.LIST_HEADER_BLOCK}>)"
    found: dict[int, dict[str, str | None]] = {}
    for start in range(0, len(uids), HEADER_BATCH):
        batch = uids[start : start + HEADER_BATCH]
        status, data = conn.uid("FETCH", ",".join(map(str, batch)), wanted)
        ok(status, "the imap fetch failed")
        for index, entry in enumerate(data):
            if not isinstance(entry, tuple):
                continue
            uid = _uid_near(data, index)
            if uid is not None:
                found[uid] = mime.parse_header_block(entry[1])
        if on_batch is not None:
            on_batch(start + len(batch), len(uids))
    return found


def uids_with_message_id(
    conn: imaplib.IMAP4_SSL, mailbox: str, message_id: str, key: str
) -> list[int]:
    """UIDs in ``mailbox`` whose Message-ID header contains ``message_id`` (IMAP ``SEARCH
    HEADER``), checked against the exact header; the folder is examined read-only."""
    status, _ = conn.select(quoted(mailbox), readonly=True)
    if status != "OK":
        raise MailConfiguration(
            f"{key}: {mailbox} does not exist on the server or cannot be selected (it is "
            "never created)"
        )
    if not message_id.isascii() or any(c in message_id for c in '"\\\r\n'):
        raise MailRejected("message_id: not a Message-ID this backend can search", "message_id")
    status, data = conn.uid("SEARCH", "HEADER", "Message-ID", f'"{message_id}"')
    ok(status, "the imap search failed")
    candidates = sorted({int(n) for n in (data[0] or b"").split()})
    if not candidates:
        return []
    headers = fetch_headers(conn, candidates)
    # SEARCH HEADER matches a substring: keep the messages whose header is this id.
    return [uid for uid in candidates if headers.get(uid, {}).get("message_id") == message_id]


def ok(status: str, message: str) -> None:
    if status != "OK":
        raise MailBackendError(message)


def _uid_near(data: list[Any], index: int) -> int | None:
    """The UID of the FETCH response whose literal is ``data[index]`` (before it or after)."""
    prefix = data[index][0]
    match = _UID.search(prefix)
    if match is None and index + 1 < len(data) and isinstance(data[index + 1], bytes):
        match = _UID.search(data[index + 1])
    return int(match.group(1)) if match else None


def quoted(mailbox: str) -> str:
    return '"' + mailbox.replace("\\", "\\\\").replace('"', '\\"') + '"'

"""Composed mail: the rules its parts follow, its Message-ID, and the message itself.

Every rule is checked when the call is planned, before anyone is asked to approve it; the message
is then built from values that cannot inject a header (no line breaks or controls anywhere but
the body, and bare ASCII addresses only). The Message-ID is derived from the call's idempotency
key, so the same call always names the same message, and a copy can be recognised wherever it
landed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime

from toolcalls.activities.email.backend import MailTooLarge
from toolcalls.activities.email.settings import BARE_ADDRESS

MAX_RECIPIENTS = 50
MAX_SUBJECT_CHARS = 1_000
MAX_BODY_CHARS = 200_000
"""1-50 recipients, a subject of at most 1,000 characters, a body of at most 200,000 (spec)."""
MESSAGE_ID_HEX = 40
"""Hex digits of sha256(idempotency key) in the Message-ID's left part."""
FALLBACK_DOMAIN = "toolcalls.invalid"
"""The Message-ID's right part when the deployment names no sender address."""

_SUBJECT_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")
"""Line breaks of any kind (header injection) and other controls."""
_BODY_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\r(?!\n)")
"""Controls other than tab and line breaks, and a carriage return not followed by a line feed
(which would end a line the approver does not see as ended)."""

SMTP_POLICY = policy.SMTP.clone(max_line_length=78, cte_type="7bit")
"""CRLF line ends, RFC 2047 encoded words for non-ASCII subjects, and a body in 7-bit ASCII
(quoted-printable or base64 when it is not): any server can carry it, 8BITMIME or not."""


def check_address(address: str) -> str:
    if not BARE_ADDRESS.fullmatch(address):
        shown = address[:80].encode("unicode_escape").decode("ascii")
        raise ValueError(
            f"{shown!r} is not a bare ASCII address (name@example.com; no display name, "
            "brackets, spaces or line breaks)"
        )
    return address


def check_recipients(to: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    for address in to:
        check_address(address)
        if address.lower() in seen:
            raise ValueError(f"{address} is listed twice")
        seen.add(address.lower())
    return list(to)


def check_subject(subject: str) -> str:
    if not subject.strip():
        raise ValueError("the subject is blank")
    if _SUBJECT_FORBIDDEN.search(subject):
        raise ValueError("line breaks and control characters are not allowed in the subject")
    return subject


def check_body(body: str) -> str:
    if not body.strip():
        raise ValueError("the body is blank")
    match = _BODY_FORBIDDEN.search(body)
    if match:
        what = (
            "a carriage return must be followed by a line feed"
            if match.group() == "\r"
            else f"control character {match.group()!r} is not allowed (tab and line breaks are)"
        )
        raise ValueError(what)
    return body


def message_id_for(idempotency_key: str, domain: str) -> str:
    """``<sha256(key)[:40].toolcalls@domain>``: the Message-ID of the call with this key."""
    digest = hashlib.sha256(idempotency_key.encode("utf-8")).hexdigest()[:MESSAGE_ID_HEX]
    return f"<{digest}.toolcalls@{domain}>"


def message_id_domain(address: str | None) -> str:
    """The right part of composed Message-IDs: the sender's domain, lowercase."""
    if address is None:
        return FALLBACK_DOMAIN
    return address.rpartition("@")[2].lower()


def build_message(
    *,
    sender: str | None,
    to: Sequence[str],
    subject: str,
    body: str,
    message_id: str,
    date: datetime | None,
) -> EmailMessage:
    """The plain-text message (UTF-8, no attachments); ``date=None`` leaves Date to the service."""
    message = EmailMessage(policy=SMTP_POLICY)
    if sender is not None:
        message["From"] = sender
    message["To"] = ", ".join(to)
    message["Subject"] = subject
    if date is not None:
        message["Date"] = format_datetime(date)
    message["Message-ID"] = message_id
    message.set_content(body.replace("\r\n", "\n"), subtype="plain", charset="utf-8")
    return message


def preview_text(
    *, sender: str | None, to: Sequence[str], subject: str, body: str, message_id: str
) -> str:
    """The message as the approver reads it: its headers and the body exactly as sent."""
    lines = [
        f"From: {sender or '(the account of the configured token)'}",
        f"To: {', '.join(to)}",
        f"Subject: {subject}",
        f"Message-ID: {message_id}",
        "",
        body.replace("\r\n", "\n"),
    ]
    return "\n".join(lines)


def check_size(size: int, limit: int, what: str) -> None:
    """``what`` of ``size`` bytes within ``email.max_message_bytes``, or ``MailTooLarge``."""
    if size > limit:
        raise MailTooLarge(
            f"{what} is {size} bytes; the limit is {limit} (email.max_message_bytes)"
        )

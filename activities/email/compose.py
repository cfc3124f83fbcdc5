"""Composed mail: the rules its parts follow, its Message-ID, and the message itself.

Every rule is checked when the call is planned, before anyone is asked to approve it; the message
is then built from values that cannot inject a header (no line breaks or controls anywhere but
the body, no RFC 2047 encoded words, and bare ASCII addresses only). Right before it is written,
the serialized message's header fields are checked once more against the ones the approval
preview showed (``composed``, ``check_as_previewed``). The Message-ID is derived from the call's
idempotency key, so the same call always names the same message, and a copy can be recognised
wherever it landed.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import format_datetime

from toolcalls.activities.email.backend import MailNotAsPreviewed, MailTooLarge
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

_ENCODED_WORD = re.compile(r"=\?[^?]*\?[bq]\?.*?\?=", re.IGNORECASE | re.DOTALL)
"""RFC 2047 encoded-word syntax. Python's email generator decodes it while writing some headers
(the CVE-2024-6923 class), so what it encodes (line breaks, whole header fields) would reach the
wire unseen by the approver; plain text, non-ASCII included, is encoded by the library itself."""

MIME_FIELDS = {
    "mime-version": frozenset({"1.0"}),
    "content-type": frozenset({'text/plain; charset="utf-8"'}),
    "content-transfer-encoding": frozenset({"7bit", "quoted-printable", "base64"}),
}
"""The fields ``build_message`` adds besides the previewed ones (and Date), with their values."""

SMTP_POLICY = policy.SMTP.clone(max_line_length=78, cte_type="7bit")
"""CRLF line ends, RFC 2047 encoded words for non-ASCII subjects, and a body in 7-bit ASCII
(quoted-printable or base64 when it is not): any server can carry it, 8BITMIME or not."""


def check_header_text(text: str) -> str:
    """``text`` for a header field, or ``ValueError`` when it holds an RFC 2047 encoded word."""
    if _ENCODED_WORD.search(text):
        raise ValueError(
            "encoded-word syntax (=?...?=) is not allowed; give the text as it should read"
        )
    return text


def check_address(address: str) -> str:
    check_header_text(address)
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
    return check_header_text(subject)


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


def composed(
    *,
    sender: str | None,
    to: Sequence[str],
    subject: str,
    body: str,
    message_id: str,
    date: datetime | None,
) -> bytes:
    """The message serialized as it will be written, once its header fields are checked against
    the preview's (``check_as_previewed``)."""
    raw = build_message(
        sender=sender, to=to, subject=subject, body=body, message_id=message_id, date=date
    ).as_bytes()
    check_as_previewed(
        serialized_fields(raw),
        previewed_fields(sender=sender, to=to, subject=subject, message_id=message_id),
        also=MIME_FIELDS | ({"date": frozenset({format_datetime(date)})} if date else {}),
    )
    return raw


def previewed_fields(
    *, sender: str | None, to: Sequence[str], subject: str, message_id: str
) -> list[tuple[str, str]]:
    """The header fields the approval preview shows, as they must read on the written message;
    no From when the service fills it in."""
    fields = [("From", sender)] if sender is not None else []
    return [*fields, ("To", ", ".join(to)), ("Subject", subject), ("Message-ID", message_id)]


def serialized_fields(raw: bytes) -> list[tuple[str, str]]:
    """The header fields of a serialized message, decoded as a receiving parser decodes them."""
    parsed = BytesParser(policy=policy.default).parsebytes(raw, headersonly=True)
    return [(name, str(value)) for name, value in parsed.items()]


def check_as_previewed(
    sent: Sequence[tuple[str, str]],
    previewed: Sequence[tuple[str, str]],
    also: dict[str, frozenset[str]] | None = None,
) -> None:
    """``MailNotAsPreviewed`` unless ``sent`` holds exactly the ``previewed`` fields and those in
    ``also`` (lowercase name: allowed values), each once, with the same decoded values.

    Values are compared without their whitespace: Python's generator can drop or move a space
    where it folds a non-ASCII value into encoded words, and that must not stop a send. A field
    can hide nowhere in whitespace: every line of the header block is a field counted by name.
    """
    allowed = {name.lower(): frozenset({value}) for name, value in previewed} | (also or {})
    counts = Counter(name.lower() for name, _ in sent)
    differs = {
        name.lower()
        for name, value in sent
        if name.lower() in allowed
        and _squeezed(value) not in {_squeezed(v) for v in allowed[name.lower()]}
    }
    problems = [
        *(f"{name} not in the preview" for name in counts if name not in allowed),
        *(f"{name} missing" for name in allowed if name not in counts),
        *(f"{name} repeated" for name, count in counts.items() if count > 1 and name in allowed),
        *(f"{name} differs" for name in sorted(differs)),
    ]
    if problems:
        raise MailNotAsPreviewed(
            f"the header fields of the message to be written differ from the approval preview "
            f"({', '.join(problems[:6])}); nothing was written"
        )


def _squeezed(value: str) -> str:
    return "".join(value.split())


def preview_text(
    *, sender: str | None, to: Sequence[str], subject: str, body: str, message_id: str
) -> str:
    """The message as the approver reads it: its headers and the body exactly as sent."""
    fields = previewed_fields(sender=sender, to=to, subject=subject, message_id=message_id)
    if sender is None:
        fields.insert(0, ("From", "(the account of the configured token)"))
    lines = [f"{name}: {value}" for name, value in fields]
    return "\n".join([*lines, "", body.replace("\r\n", "\n")])


def check_size(size: int, limit: int, what: str) -> None:
    """``what`` of ``size`` bytes within ``email.max_message_bytes``, or ``MailTooLarge``."""
    if size > limit:
        raise MailTooLarge(
            f"{what} is {size} bytes; the limit is {limit} (email.max_message_bytes)"
        )

"""The email tools' arguments and results.

Arguments are checked when the call is planned: a compose call that could inject a header, names
a malformed address or is too long ends there, before any approval is requested.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, JsonValue

from toolcalls.activities.base import ToolArgs, ToolResult
from toolcalls.activities.email.compose import (
    MAX_BODY_CHARS,
    MAX_RECIPIENTS,
    MAX_SUBJECT_CHARS,
    check_address,
    check_body,
    check_recipients,
    check_subject,
)

DEFAULT_MAX_RESULTS = 20
MAX_RESULTS = 100
MAX_QUERY_CHARS = 1_000
MAX_TOKEN_CHARS = 4_096
"""A Graph continuation link is a URL; Gmail's and ours are short."""
MAX_ID_CHARS = 1_024

_NO_CONTROLS = re.compile(r"[^\x00-\x1f\x7f]*")
_TOKEN_TEXT = re.compile(r"[\x21-\x7e]+")


def _no_controls(text: str) -> str:
    if not _NO_CONTROLS.fullmatch(text):
        raise ValueError("line breaks and control characters are not allowed")
    return text


def _printable(text: str) -> str:
    if not _TOKEN_TEXT.fullmatch(text):
        raise ValueError("must be printable ASCII without spaces, as a list result gave it")
    return text


Query = Annotated[str, Field(max_length=MAX_QUERY_CHARS), AfterValidator(_no_controls)]
Token = Annotated[str, Field(min_length=1, max_length=MAX_TOKEN_CHARS), AfterValidator(_printable)]
Address = Annotated[str, Field(max_length=254), AfterValidator(check_address)]


class ListEmailMessagesArgs(ToolArgs):
    query: Query = Field(
        default="", description="Search text in the backend's syntax; empty lists all."
    )
    max_results: int = Field(default=DEFAULT_MAX_RESULTS, ge=1, le=MAX_RESULTS)
    page_token: Token | None = Field(
        default=None, description="next_page_token of the previous page, same query and size."
    )


class ReadEmailArgs(ToolArgs):
    message_id: Annotated[
        str, Field(min_length=1, max_length=MAX_ID_CHARS), AfterValidator(_printable)
    ] = Field(description="The id of an item from list_email_messages (not its Message-ID).")


class ComposeArgs(ToolArgs):
    to: Annotated[
        list[Address],
        Field(min_length=1, max_length=MAX_RECIPIENTS),
        AfterValidator(check_recipients),
    ] = Field(description="1-50 bare addresses, like name@example.com.")
    subject: Annotated[
        str, Field(min_length=1, max_length=MAX_SUBJECT_CHARS), AfterValidator(check_subject)
    ]
    body: Annotated[
        str, Field(min_length=1, max_length=MAX_BODY_CHARS), AfterValidator(check_body)
    ] = Field(description="Plain text.")


class CreateEmailDraftArgs(ComposeArgs):
    pass


class SendEmailArgs(ComposeArgs):
    pass


Headers = dict[str, str | None]
"""``from``, ``to``, ``cc``, ``date``, ``subject``, ``message_id`` (RFC 5322 Message-ID)."""


class ListEmailMessagesResult(ToolResult):
    items: list[dict[str, JsonValue]]
    """Each with ``id`` (for ``read_email``) and the selected headers."""
    next_page_token: str | None


class ReadEmailResult(ToolResult):
    id: str
    headers: Headers
    snippet: str
    body: str
    body_truncated: bool
    has_attachments: bool
    html_body_omitted: bool


class CreateEmailDraftResult(ToolResult):
    status: Literal["drafted"]
    message_id: str | None
    """The draft's RFC 5322 Message-ID, derived from the call's idempotency key."""
    mailbox: str | None = None
    """IMAP: the folder the draft was appended to."""
    existing: bool | None = None
    """IMAP: ``True`` when a draft with this Message-ID was already in the folder (an earlier
    attempt of the same call): it is reported and nothing is appended again."""
    id: str | None = None
    """Gmail: the draft's message id; Graph: the draft message's (immutable) id."""
    draft_id: str | None = None
    """Gmail: the draft's id."""
    thread_id: str | None = None
    service: dict[str, JsonValue] | None = None
    """The service's own fields (Graph's draft object; another backend's extra keys)."""


class RefusedRecipient(ToolResult):
    address: str
    code: int | None


class SendEmailResult(ToolResult):
    status: Literal["accepted", "partially_accepted", "rejected"]
    """What the server accepted, not delivery to an inbox."""
    message_id: str | None
    """The message's RFC 5322 Message-ID, derived from the call's idempotency key."""
    accepted: list[str] | None = None
    """SMTP: the recipients the server accepted."""
    refused: list[RefusedRecipient] | None = None
    """SMTP: the recipients it refused, with their reply codes (never the server's text)."""
    id: str | None = None
    """Gmail: the sent message's id."""
    thread_id: str | None = None
    service: dict[str, JsonValue] | None = None

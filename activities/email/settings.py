"""What a deployment decides about the email tools (``[email]``).

Secrets never appear here: the settings name an environment variable or a file, which the worker
reads each time an operation needs the token or password.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

BUILTIN_BACKENDS = ("gmail", "outlook", "imap")
"""The backends ``backend`` names by word; anything else is an import path."""
DEFAULT_TIMEOUT_SECONDS = 30.0
"""``email_tools(timeout_seconds=30)`` (spec): the whole operation, connection to answer."""
MAX_TIMEOUT_SECONDS = 120.0
DEFAULT_MAX_MESSAGE_BYTES = 2_097_152
"""``max_message_bytes=2097152`` (spec): fetched MIME bytes and composed message bytes."""
MAX_MESSAGE_BYTES = 2_097_152
"""Also the ceiling: a composed message travels in the call's payloads (under 2 MB each)."""

_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
_ASCII_TEXT = r"^[\x21-\x7e]{1,255}$"
_MAILBOX = r"^[\x20-\x7e]{1,255}$"
"""IMAP mailbox names are ASCII (international names in modified UTF-7), printable only."""
_HOST = re.compile(r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]")
_IMPORT_PATH = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*(?::[A-Za-z_][\w]*)?")
BARE_ADDRESS = re.compile(
    r"(?=.{3,254}$)"
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
)
"""A bare ASCII address: a dot-atom local part and a dotted host name (no display name, no
quoted local part, no comments, no IP literal); at most 254 characters."""


class EmailSettings(BaseModel):
    """``[email]``: one mailbox, its backend and where the worker finds its credentials."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = "imap"
    """``gmail``, ``outlook``, ``imap``, or the import path of your own backend
    (``package.module:Factory``), called with ``options`` as keyword arguments."""
    options: dict[str, JsonValue] = Field(default_factory=dict)
    """Keyword arguments for a backend given by import path (never secrets: they are in the
    configuration file)."""
    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0, le=MAX_TIMEOUT_SECONDS)
    """One whole operation (a list, a read, a draft, a send)."""
    sender: str | None = None
    """The From address of composed mail; Gmail needs it, IMAP/SMTP default to ``username``."""

    token_env: str | None = Field(default=None, pattern=_ENV_NAME)
    """Gmail and Outlook: the variable holding an OAuth access token."""
    token_file: Path | None = None
    """Gmail and Outlook: a file holding the token, read afresh for every request."""
    connection: Literal["google", "microsoft"] | None = None
    """Gmail and Outlook, instead of one token: act with each call's principal's own account,
    connected through ``[[connections.providers]]`` of this name."""
    user_id: str = Field(default="me", pattern=_ASCII_TEXT)
    """Gmail's and Graph's user: ``me`` for delegated tokens, an id or address otherwise."""

    username: str | None = Field(default=None, pattern=_ASCII_TEXT)
    """IMAP and SMTP login name (ASCII)."""
    password_env: str | None = Field(default=None, pattern=_ENV_NAME)
    """IMAP and SMTP: the variable holding the password or app password."""
    password_file: Path | None = None
    """IMAP and SMTP: a file holding the password, read afresh for every operation."""
    imap_host: str | None = None
    imap_port: int = Field(default=993, ge=1, le=65535)
    """Implicit TLS, always."""
    smtp_host: str | None = None
    """Needed for ``send_email`` only."""
    smtp_port: int | None = Field(default=None, ge=1, le=65535)
    """Default 465 (implicit TLS), or 587 with ``smtp_starttls``."""
    smtp_starttls: bool = False
    """Submission with STARTTLS, which must succeed before login; never plaintext."""
    mailbox: str = Field(default="INBOX", pattern=_MAILBOX)
    """The folder ``list_email_messages`` and ``read_email`` read."""
    drafts_mailbox: str | None = Field(default=None, pattern=_MAILBOX)
    """An existing folder ``create_email_draft`` appends to; never created."""
    sent_mailbox: str | None = Field(default=None, pattern=_MAILBOX)
    """IMAP: the folder the provider files submitted mail in (``Sent``, ``[Gmail]/Sent Mail``),
    where ``toolcalls reconcile`` looks for an uncertain send's Message-ID; never written."""
    max_message_bytes: int = Field(
        default=DEFAULT_MAX_MESSAGE_BYTES, ge=16_384, le=MAX_MESSAGE_BYTES
    )
    ca_file: Path | None = None
    """PEM certificates trusted besides the system's (a private CA); certificates and host
    names are verified always."""

    @field_validator("backend")
    @classmethod
    def _backend(cls, backend: str) -> str:
        if backend not in BUILTIN_BACKENDS and not _IMPORT_PATH.fullmatch(backend):
            raise ValueError(
                f"{backend!r} is neither {', '.join(BUILTIN_BACKENDS)} nor an import path "
                "(package.module:Factory)"
            )
        return backend

    @field_validator("sender")
    @classmethod
    def _sender(cls, sender: str | None) -> str | None:
        if sender is not None and not BARE_ADDRESS.fullmatch(sender):
            raise ValueError(f"{sender!r} is not a bare ASCII address (name@example.com)")
        return sender

    @field_validator("imap_host", "smtp_host")
    @classmethod
    def _host(cls, host: str | None) -> str | None:
        if host is not None and not _HOST.fullmatch(host):
            raise ValueError(f"{host!r} is not a host name")
        return host

    @model_validator(mode="after")
    def _one_secret_source(self) -> EmailSettings:
        for env, file in (("token_env", "token_file"), ("password_env", "password_file")):
            if getattr(self, env) is not None and getattr(self, file) is not None:
                raise ValueError(f"set {env} or {file}, not both")
        return self

    @property
    def smtp_port_or_default(self) -> int:
        if self.smtp_port is not None:
            return self.smtp_port
        return 587 if self.smtp_starttls else 465

    @property
    def from_address(self) -> str | None:
        """The address composed mail is sent from: ``sender``, else an address-like login."""
        if self.sender is not None:
            return self.sender
        if self.backend == "imap" and self.username and BARE_ADDRESS.fullmatch(self.username):
            return self.username
        return None

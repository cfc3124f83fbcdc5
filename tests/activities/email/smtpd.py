"""A real SMTP server on loopback: ``aiosmtpd`` in a thread of the test process.

Three shapes: implicit TLS, STARTTLS offered (and required before AUTH), and a server that offers
no STARTTLS at all but would take a plaintext login (so a test proves the client never tries).
Every message and login it receives is recorded; a recipient can be refused with 550, and DATA
can be held until the test releases it (the worker is killed meanwhile).
"""

from __future__ import annotations

import asyncio
import email
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import Message
from typing import Any, Literal

import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from tests.worker.support import free_port

Mode = Literal["tls", "starttls", "plain"]
USERNAME = "sender@example.org"
PASSWORD = "smtp-secret-3f9a7c"
PRIVATE_TEXT = "private detail 7f3e: mailbox quota of user 42"
"""Text in the server's refusal that no result or message may repeat."""


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    content: bytes

    @property
    def message(self) -> Message:
        return email.message_from_bytes(self.content)


@dataclass
class Sink:
    """The server's handler: what it received, and how it answers."""

    refuse: set[str] = field(default_factory=set)
    username: str = USERNAME
    password: str = PASSWORD
    received: list[Received] = field(default_factory=list)
    logins: list[tuple[str, bool]] = field(default_factory=list)
    """(login, whether the connection was encrypted)."""
    rcpts: list[str] = field(default_factory=list)
    hold: threading.Event | None = None
    """When set up, DATA is recorded at once but answered only once the event is set."""
    data_started: threading.Event = field(default_factory=threading.Event)

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        self.rcpts.append(address)
        if address in self.refuse:
            return f"550 5.1.1 {PRIVATE_TEXT}"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.received.append(
            Received(envelope.mail_from, list(envelope.rcpt_tos), envelope.content)
        )
        self.data_started.set()
        if self.hold is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.hold.wait, 120)
        return "250 2.0.0 queued as 4711"


@dataclass
class SMTPServer:
    port: int
    sink: Sink
    mode: Mode


def _authenticator(sink: Sink, implicit_tls: bool) -> Any:
    def authenticate(
        server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any
    ) -> AuthResult:
        if not isinstance(auth_data, LoginPassword):
            return AuthResult(success=False, handled=False)
        login = auth_data.login.decode()
        sink.logins.append((login, implicit_tls or session.ssl is not None))
        ok = login == sink.username and auth_data.password.decode() == sink.password
        return AuthResult(success=ok, handled=False)  # the server answers 235 or 535

    return authenticate


@contextmanager
def smtp_server(certs: trustme.CA, mode: Mode, sink: Sink | None = None) -> Iterator[SMTPServer]:
    """A server on 127.0.0.1 whose certificate ``certs`` issued."""
    sink = sink or Sink()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    certs.issue_cert("127.0.0.1").configure_cert(context)
    port = free_port()
    kwargs: dict[str, Any] = {"authenticator": _authenticator(sink, implicit_tls=mode == "tls")}
    if mode == "tls":
        kwargs.update(ssl_context=context, auth_require_tls=False)
    elif mode == "starttls":
        kwargs.update(
            tls_context=context, require_starttls=True, auth_required=True, auth_require_tls=True
        )
    else:
        kwargs.update(auth_require_tls=False)  # would accept a plaintext password
    controller = Controller(sink, hostname="127.0.0.1", port=port, **kwargs)
    controller.start()
    try:
        yield SMTPServer(port=port, sink=sink, mode=mode)
    finally:
        if sink.hold is not None:
            sink.hold.set()
        controller.stop()

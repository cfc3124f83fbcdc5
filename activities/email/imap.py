"""``IMAPEmail``: one IMAP folder over implicit TLS, and SMTP submission for sending.

Each operation opens a fresh connection on a worker thread and closes it when done; socket
operations are bounded (``connect.SOCKET_TIMEOUT_SECONDS``). A cancellation (the call's deadline,
or the workflow's) interrupts the established socket; a connection still being set up finishes
on its thread, which checks for cancellation before it logs in and before it writes.

Reads select the folder read-only (``EXAMINE``), fetch a message's size before the message, and
fetch with ``BODY.PEEK[]`` bounded to ``max_message_bytes``: no read sets ``\\Seen`` or any other
flag. Drafts are appended, with the ``\\Draft`` flag, to the existing folder the deployment names.
"""

from __future__ import annotations

import asyncio
import imaplib
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from typing import Any, TypeVar

from toolcalls.activities.email import mime
from toolcalls.activities.email.backend import (
    ListProgress,
    MailBackendError,
    MailConfiguration,
    MailNotFound,
    MailRejected,
    MailTimeout,
    MailUnavailable,
    MailUncertain,
    write_point,
)
from toolcalls.activities.email.compose import check_size, composed
from toolcalls.activities.email.connect import (
    connection_failures,
    session_failures,
    socket_timeout,
    tls_context,
)
from toolcalls.activities.email.imap_search import fetch_headers, ok, quoted, uids_with_message_id
from toolcalls.activities.email.mail_ids import Folder, account_tag
from toolcalls.activities.email.secrets import read_secret
from toolcalls.activities.email.settings import EmailSettings
from toolcalls.activities.email.smtp import submit
from toolcalls.activities.progress import from_thread

T = TypeVar("T")

QUERY_HELP = (
    "Search is literal ASCII text matched anywhere in the headers and body (IMAP TEXT search), "
    "for example invoice or alice@example.com; it is not Gmail or raw IMAP search syntax. An "
    "empty query lists every message, newest first."
)
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")


class _Session:
    """One operation's connection, which the event loop's side may interrupt."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self._lock = threading.Lock()
        self._conn: imaplib.IMAP4_SSL | None = None

    def attach(self, conn: imaplib.IMAP4_SSL) -> None:
        with self._lock:
            self._conn = conn
        self.check()

    def check(self) -> None:
        """Stop here if the operation was cancelled (before a login, before a write)."""
        if self.cancelled.is_set():
            raise _Cancelled()

    def interrupt(self) -> None:
        self.cancelled.set()
        with self._lock:
            conn = self._conn
        if conn is not None:
            # The plain socket's shutdown wakes a thread blocked reading the TLS socket.
            with suppress(OSError):
                socket.socket.shutdown(conn.sock, socket.SHUT_RDWR)


class _Cancelled(Exception):
    """The operation was cancelled while its thread was still working."""


class IMAPEmail:
    """The ``[email]`` folder of an IMAP account, with SMTP submission (``backend = "imap"``)."""

    query_help = QUERY_HELP
    tracks_writes = True
    """It marks the moment a draft or a message may leave (``backend.write_point``)."""

    def __init__(self, settings: EmailSettings, environ: Mapping[str, str]) -> None:
        # Nothing connects now: every operation opens its own connection.
        self._settings = settings
        self._environ = environ

    async def list_messages(
        self,
        *,
        query: str,
        max_results: int,
        page_token: str | None,
        on_progress: ListProgress | None = None,
    ) -> dict[str, Any]:
        """A page of the folder, newest first; ``on_progress`` hears of each batch of headers
        fetched (``HEADER_BATCH`` messages), on the event loop."""
        if not query.isascii():
            raise MailRejected("query: imap search takes ASCII text only", "query")
        report = from_thread(on_progress) if on_progress is not None else None
        return await self._run(
            lambda session: self._list(session, query, max_results, page_token, report)
        )

    async def get_message(self, *, message_id: str) -> dict[str, Any]:
        return await self._run(lambda session: self._get(session, message_id))

    async def create_draft(
        self, *, to: list[str], subject: str, body: str, message_id: str
    ) -> dict[str, Any]:
        s = self._settings
        mailbox = s.drafts_mailbox
        if mailbox is None:
            raise MailConfiguration("email.drafts_mailbox: create_email_draft needs a folder")
        raw = composed(
            sender=s.from_address,
            to=to,
            subject=subject,
            body=body,
            message_id=message_id,
            date=datetime.now(UTC),
        )
        self._check_size(len(raw), "the draft")
        existing = await self._run(lambda session: self._append(session, mailbox, raw, message_id))
        result: dict[str, Any] = {"status": "drafted", "mailbox": mailbox, "message_id": message_id}
        if existing:
            result["existing"] = True
        return result

    async def find_message(self, *, message_id: str, folder: str) -> dict[str, Any] | None:
        """The message whose Message-ID header is ``message_id`` in ``folder`` (``sent`` or
        ``drafts``): ``{"mailbox", "uid"}``, or ``None``; nothing is selected read-write."""
        mailbox = self._folder(folder)
        key = "email.drafts_mailbox" if folder == "drafts" else "email.sent_mailbox"
        uids = await self._run(lambda session: self._search_id(session, mailbox, message_id, key))
        return {"mailbox": mailbox, "uid": uids[0]} if uids else None

    def folder_name(self, folder: str) -> str:
        """How a lookup names the folder it searched."""
        s = self._settings
        name = s.drafts_mailbox if folder == "drafts" else s.sent_mailbox
        return f"imap folder {name}" if name else f"the {folder} folder"

    def _folder(self, folder: str) -> str:
        s = self._settings
        if folder == "drafts":
            if s.drafts_mailbox is None:
                raise MailConfiguration("email.drafts_mailbox: no drafts folder is configured")
            return s.drafts_mailbox
        if s.sent_mailbox is None:
            raise MailConfiguration(
                "email.sent_mailbox: looking for a sent message needs the folder the server "
                "files sent mail in"
            )
        return s.sent_mailbox

    async def send_message(
        self, *, to: list[str], subject: str, body: str, message_id: str
    ) -> dict[str, Any]:
        s = self._settings
        sender = s.from_address
        if sender is None:
            raise MailConfiguration("email.sender: send_email needs a sender address")
        raw = composed(
            sender=sender,
            to=to,
            subject=subject,
            body=body,
            message_id=message_id,
            date=datetime.now(UTC),
        )
        self._check_size(len(raw), "the message")
        return await submit(s, self._password(), raw, message_id, sender, to)

    async def _run(self, work: Callable[[_Session], T]) -> T:
        """``work`` on a worker thread; a cancellation interrupts its connection."""
        session = _Session()
        task = asyncio.ensure_future(asyncio.to_thread(self._guarded, work, session))
        task.add_done_callback(_retrieve)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            session.interrupt()
            raise

    def _guarded(self, work: Callable[[_Session], T], session: _Session) -> T:
        try:
            return work(session)
        except _Cancelled:
            raise MailBackendError("canceled") from None

    def _password(self) -> str:
        s = self._settings
        return read_secret(
            environ=self._environ,
            env_key="email.password_env",
            env_name=s.password_env,
            file_key="email.password_file",
            file=s.password_file,
        )

    def _check_size(self, size: int, what: str) -> None:
        check_size(size, self._settings.max_message_bytes, what)

    def _open(self, session: _Session) -> imaplib.IMAP4_SSL:
        """A logged-in connection, or a typed failure (never the server's text)."""
        s = self._settings
        host = s.imap_host
        if host is None or s.username is None:
            raise MailConfiguration(
                "email.imap_host: the imap backend needs imap_host and username"
            )
        password = self._password()
        context = tls_context(s.ca_file)
        with connection_failures("email.imap_host", host, s.imap_port):
            conn = imaplib.IMAP4_SSL(
                host,
                s.imap_port,
                ssl_context=context,
                timeout=socket_timeout(s.timeout_seconds),
            )
        session.attach(conn)  # cancelled while connecting: stop before the login
        with self._exchange():
            try:
                if password.isascii():
                    conn.login(s.username, password)
                else:
                    credentials = f"\x00{s.username}\x00{password}".encode()
                    conn.authenticate("PLAIN", lambda _challenge: credentials)
            except imaplib.IMAP4.abort:
                raise
            except (imaplib.IMAP4.error, UnicodeError):
                raise MailConfiguration(
                    "email.username: the imap server refused the login (check the username and "
                    "the password; some providers need an app password)"
                ) from None
        return conn

    @contextmanager
    def _exchange(self) -> Iterator[None]:
        """An established session's failures: broken off, silent, or a command refused."""
        where = f"{self._settings.imap_host}:{self._settings.imap_port}"
        try:
            with session_failures(where):
                yield
        except imaplib.IMAP4.abort:
            raise MailUnavailable(f"the connection to {where} broke off") from None
        except imaplib.IMAP4.error:
            raise MailBackendError("the imap server refused a command") from None

    def _examine(self, conn: imaplib.IMAP4_SSL) -> Folder:
        """Select the configured folder read-only; its identity and UIDVALIDITY now."""
        s = self._settings
        status, _ = conn.select(quoted(s.mailbox), readonly=True)
        if status != "OK":
            raise MailConfiguration(
                f"email.mailbox: {s.mailbox} cannot be selected (does it exist?)"
            )
        _, values = conn.response("UIDVALIDITY")
        try:
            uidvalidity = int(values[-1])
        except (TypeError, ValueError, IndexError):
            raise MailBackendError(f"the imap server gave no UIDVALIDITY for {s.mailbox}") from None
        tag = account_tag(s.username or "", s.imap_host or "", s.imap_port, s.mailbox)
        return Folder(account=tag, name=s.mailbox, uidvalidity=uidvalidity)

    def _list(
        self,
        session: _Session,
        query: str,
        max_results: int,
        page_token: str | None,
        report: ListProgress | None,
    ) -> dict[str, Any]:
        with self._connection(session) as conn, self._exchange():
            folder = self._examine(conn)
            before = folder.before_of(page_token, query, max_results) if page_token else None
            if before is not None and before <= 1:
                return {"items": [], "next_page_token": None}
            criteria = [f"UID 1:{before - 1}"] if before is not None else []
            if query:
                conn.literal = query.encode("ascii")  # sent as a literal: quotes, brackets, all
                criteria.append("TEXT")
            status, data = conn.uid("SEARCH", *(criteria or ["ALL"]))
            ok(status, "the imap search failed")
            uids = sorted({int(n) for n in (data[0] or b"").split()}, reverse=True)
            page = uids[:max_results]
            headers = fetch_headers(conn, page, report)
            items = [
                {"id": folder.message_id(uid), **headers.get(uid, _no_headers())} for uid in page
            ]
            more = len(uids) > max_results
            token = folder.page_token(page[-1], query, max_results) if more else None
            return {"items": items, "next_page_token": token}

    def _get(self, session: _Session, message_id: str) -> dict[str, Any]:
        limit = self._settings.max_message_bytes
        with self._connection(session) as conn, self._exchange():
            folder = self._examine(conn)
            uid = folder.uid_of(message_id)
            status, data = conn.uid("FETCH", str(uid), "(UID RFC822.SIZE)")
            ok(status, "the imap fetch failed")
            sizes = [m for e in data if isinstance(e, bytes) for m in _SIZE.findall(e)]
            if not sizes:
                raise MailNotFound(
                    "message_id: no such message in the folder (deleted or moved?)", "message_id"
                )
            self._check_size(int(sizes[0]), "the message")
            # At most one byte past the limit is transferred, whatever size the server claimed.
            status, data = conn.uid("FETCH", str(uid), f"(BODY.PEEK[]<0.{limit + 1}>)")
            ok(status, "the imap fetch failed")
            raw = next((e[1] for e in data if isinstance(e, tuple)), None)
            if raw is None:
                raise MailNotFound("message_id: no such message in the folder", "message_id")
            self._check_size(len(raw), "the message")
        return mime.parse_raw(raw, message_id)

    def _search_id(self, session: _Session, mailbox: str, message_id: str, key: str) -> list[int]:
        with self._connection(session) as conn, self._exchange():
            return uids_with_message_id(conn, mailbox, message_id, key)

    def _append(self, session: _Session, mailbox: str, raw: bytes, message_id: str) -> bool:
        """Append ``raw`` unless a message with ``message_id`` is already in ``mailbox``;
        whether one was (nothing is appended then)."""
        with self._connection(session) as conn:
            with self._exchange():
                if uids_with_message_id(conn, mailbox, message_id, "email.drafts_mailbox"):
                    return True
            session.check()  # the last moment a cancellation leaves nothing written
            write_point()
            try:
                with self._exchange():
                    status, data = conn.append(
                        quoted(mailbox), "(\\Draft)", imaplib.Time2Internaldate(time.time()), raw
                    )
            except (MailUnavailable, MailTimeout) as exc:
                raise MailUncertain(
                    f"the connection failed while the draft was being appended ({exc}); it may "
                    f"be in {mailbox}"
                ) from None
            if status != "OK":
                text = b" ".join(d for d in data if isinstance(d, bytes))
                if b"TRYCREATE" in text.upper():
                    raise MailConfiguration(
                        f"email.drafts_mailbox: {mailbox} does not exist on the server (it is "
                        "never created)"
                    )
                raise MailBackendError(f"the imap server refused to append the draft to {mailbox}")
        return False

    def _connection(self, session: _Session) -> Any:
        return _Connected(self, session)


class _Connected:
    """``with``: a logged-in connection, logged out (or just closed) at the end."""

    def __init__(self, backend: IMAPEmail, session: _Session) -> None:
        self._backend = backend
        self._session = session
        self._conn: imaplib.IMAP4_SSL | None = None

    def __enter__(self) -> imaplib.IMAP4_SSL:
        self._conn = self._backend._open(self._session)
        return self._conn

    def __exit__(self, *exc: object) -> None:
        conn = self._conn
        if conn is None:
            return
        try:
            if exc[0] is None:
                conn.logout()
            else:
                conn.shutdown()
        except (OSError, imaplib.IMAP4.error):
            pass


def _no_headers() -> dict[str, str | None]:
    return dict.fromkeys(mime.SELECTED_HEADERS)


def _retrieve(task: asyncio.Future[Any]) -> None:
    """A thread that finished after its operation was cancelled: its outcome is not wanted."""
    if not task.cancelled():
        task.exception()

"""``toolcalls inbox``: serve the approval inbox (alone, or beside a worker), and
``toolcalls inbox hash-password``.

The inbox connects like every command and reaches calls only through ``ToolCallClient``. It
listens on ``[inbox] listen`` (``--listen`` beats it) with uvicorn, which is told not to believe
``X-Forwarded-*`` headers: the client address the proxy rules check is the TCP peer's.

With a ``[slack]`` section it also serves ``POST /slack/interactions``, where Slack sends the
buttons of the requests the worker posted (``toolcalls.worker.chat.slack``); the signing secret
and the bot token are read from the variables the section names when the inbox starts.

``toolcalls worker --dev --inbox`` serves it beside the worker and the embedded dev server; when
the file lists no ``[[inbox.users]]`` (and no proxy) and the inbox listens on loopback, it makes a
``dev`` account whose password is generated at each start and printed. Nothing else ever makes an
account.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import logging
import os
import secrets
import socket
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TextIO

from toolcalls.activities.connections import Connections
from toolcalls.activities.family import Extra
from toolcalls.worker.arguments import EXIT_OK, EXIT_USAGE, CommandError
from toolcalls.worker.chat.slack import (
    PATH as SLACK_PATH,
    RequestVerifier,
    SlackAPI,
    SlackInteractions,
    SlackSection,
)
from toolcalls.worker.commands import connect_tools
from toolcalls.worker.config import Config, ConfigError
from toolcalls.worker.connections.build import deployment_connections
from toolcalls.worker.inbox.auth import MAX_PASSWORD_CHARS, hash_password, session_secret
from toolcalls.worker.inbox.settings import InboxSection, InboxUser, with_inbox_groups
from toolcalls.worker.payloads.server import split_listen
from toolcalls.worker.payloads.settings import is_loopback
from toolcalls.worker.run import stop_on_signals
from toolcalls.workflows.reach.client import ToolCallClient
from toolcalls.workflows.rules.approvers import ApproversSettings

INBOX_EXTRA = Extra("inbox", ("starlette", "uvicorn", "jinja2", "argon2", "multipart"))
DEV_USER = "dev"
SHUTDOWN_SECONDS = 5
"""Open requests get this long to finish when the inbox stops."""

log = logging.getLogger("toolcalls.inbox")


@dataclass(frozen=True)
class SlackPlan:
    """The Slack interactions endpoint an inbox serves: its section, secrets and call links."""

    section: SlackSection
    signing_secret: str
    link: str
    """``[notifications] link``: ``{workflow_id}`` and ``{namespace}`` are filled in."""
    environ: Mapping[str, str]

    def endpoint(self, calls: ToolCallClient) -> SlackInteractions:
        api = SlackAPI(
            self.section.bot_token_env, self.environ, timeout_seconds=self.section.timeout_seconds
        )
        namespace = calls.client.namespace
        return SlackInteractions(
            self.section,
            api,
            calls,
            RequestVerifier(self.signing_secret),
            lambda workflow_id: self.link.format(workflow_id=workflow_id, namespace=namespace),
        )


def slack_plan(config: Config, environ: Mapping[str, str]) -> SlackPlan | None:
    """The ``[slack]`` endpoint of ``config``, if it has one.

    Raises:
        ConfigError: the signing secret or the bot token is not set.
    """
    section = config.slack
    if section is None:
        return None
    secret = environ.get(section.signing_secret_env)
    if not secret:
        raise ConfigError(f"slack: ${section.signing_secret_env} is not set (the signing secret)")
    if not environ.get(section.bot_token_env):
        raise ConfigError(f"slack: ${section.bot_token_env} is not set (the bot token)")
    return SlackPlan(section, secret, config.notifications.link, environ)


@dataclass(frozen=True)
class Plan:
    """What an inbox will serve, settled before anything connects."""

    section: InboxSection
    secret: bytes
    dev_password: str | None = None
    connections: Connections | None = None
    """``[connections]``: the inbox serves their consent pages."""
    slack: SlackPlan | None = None
    approvers: ApproversSettings | None = None
    """The deployment's approver rules with the inbox's groups: who may stop a running call."""

    @property
    def url(self) -> str:
        host, port = split_listen(self.section.listen)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}"

    def announcement(self) -> str:
        section = self.section
        if self.dev_password is not None:
            how = f"dev login: {DEV_USER} / {self.dev_password} (made for this run only)"
        elif section.proxied:
            how = f"users named by {section.proxy_header} from {', '.join(section.trusted_proxies)}"
        else:
            how = f"{len(section.users)} accounts from [[inbox.users]]"
        if self.slack is not None:
            how += f"; Slack interactions at {self.url}{SLACK_PATH}"
        return f"inbox at {self.url}; {how}"


def check_extra(modules: tuple[str, ...] = INBOX_EXTRA.modules) -> None:
    missing = [module for module in INBOX_EXTRA.missing() if module in modules]
    if missing:
        raise ConfigError(
            f"inbox: needs the inbox extra (missing {', '.join(missing)}): {INBOX_EXTRA.hint}"
        )


def plan(
    config: Config, environ: Mapping[str, str], *, listen: str | None = None, dev: bool = False
) -> Plan:
    """The inbox of ``config``, with the ``dev`` account where ``dev`` asks for one.

    Raises:
        ConfigError: a missing extra, a bad listen address, nobody able to log in, a session
            secret that cannot be read.
    """
    check_extra()
    section = config.inbox
    if listen is not None:
        split_listen(listen)
        section = section.model_copy(update={"listen": listen})
    password = None
    if dev and not section.proxied and not section.users:
        if not is_loopback(section.listen):
            raise ConfigError(
                f"inbox: the dev login is made only on a loopback address, not {section.listen}; "
                "list [[inbox.users]] instead"
            )
        password = secrets.token_urlsafe(12)
        dev_user = InboxUser(name=DEV_USER, password_hash=hash_password(password))
        section = section.model_copy(update={"users": [dev_user]})
    if not section.can_sign_in():
        raise ConfigError(
            "inbox: nobody can log in: add [[inbox.users]] with a password_hash (toolcalls inbox "
            "hash-password), or set proxy_header and trusted_proxies"
        )
    secret, from_env = session_secret(section, environ)
    if not from_env:
        log.info("sessions end when the inbox stops (no [inbox] session_secret_env)")
    approvers = with_inbox_groups(config.approvers, section.users)
    return Plan(
        section,
        secret,
        password,
        connections=deployment_connections(config, environ),
        slack=slack_plan(config, environ),
        approvers=approvers,
    )


class _Server:
    """uvicorn on a socket bound beforehand (a busy port is our error, not an exit), stopped by
    the command's own signal handling rather than uvicorn's."""

    def __init__(self, plan: Plan, calls: ToolCallClient) -> None:
        import uvicorn

        from toolcalls.worker.inbox.app import app
        from toolcalls.worker.inbox.base import Inbox

        self.inbox = Inbox(
            calls,
            plan.section,
            plan.secret,
            connections=plan.connections,
            approvers=plan.approvers,
        )
        self.slack = None if plan.slack is None else plan.slack.endpoint(calls)
        config = uvicorn.Config(
            app(self.inbox, slack=self.slack),
            log_level="warning",
            access_log=False,
            proxy_headers=False,
            server_header=False,
            lifespan="off",
            timeout_graceful_shutdown=SHUTDOWN_SECONDS,
        )

        class Quiet(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        self.server = Quiet(config)

    async def serve(
        self, sock: socket.socket, stop: asyncio.Event, started: Callable[[], None]
    ) -> None:
        serving = asyncio.ensure_future(self.server.serve(sockets=[sock]))
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while not self.server.started and not serving.done():
                await asyncio.wait(
                    {serving, stopping}, timeout=0.05, return_when=asyncio.FIRST_COMPLETED
                )
                if stopping.done():
                    break
            if self.server.started:
                started()
            await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.server.should_exit = True
            stopping.cancel()
            await serving


def bind(listen: str) -> socket.socket:
    """A listening socket for ``HOST:PORT``.

    Raises:
        ConfigError: the address cannot be listened on (in use, not this host's).
    """
    host, port = split_listen(listen)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise ConfigError(f"inbox: cannot listen on {listen}: {reason}") from None


async def serve(
    plan_: Plan, calls: ToolCallClient, stop: asyncio.Event, *, announce: Callable[[str], None]
) -> None:
    """Serve the inbox until ``stop`` is set; ``announce`` gets its URL once it listens."""
    sock = bind(plan_.section.listen)
    try:
        server = _Server(plan_, calls)
        await server.serve(sock, stop, lambda: announce(plan_.announcement()))
        if server.slack is not None:
            await server.slack.idle()  # clicks already answered are decided before it stops
    finally:
        sock.close()


async def run(config: Config, args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    """``toolcalls inbox``: serve until SIGINT or SIGTERM."""
    settled = plan(config, environ, listen=args.listen)
    calls = await connect_tools(config, args)
    stop = asyncio.Event()
    stop_on_signals(stop)
    await serve(settled, calls, stop, announce=lambda text: print(text, flush=True))
    return EXIT_OK


def hash_password_command(stdin: TextIO) -> int:
    """``toolcalls inbox hash-password``: the argon2 hash of a password read from stdin."""
    check_extra(("argon2",))
    if stdin.isatty():
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            raise CommandError(EXIT_USAGE, "inbox hash-password: the passwords differ")
    else:
        password = stdin.read()
        password = password.removesuffix("\n").removesuffix("\r")
    if not password:
        raise CommandError(EXIT_USAGE, "inbox hash-password: the password is empty")
    if len(password) > MAX_PASSWORD_CHARS:
        raise CommandError(
            EXIT_USAGE,
            f"inbox hash-password: a password is at most {MAX_PASSWORD_CHARS} characters",
        )
    print(hash_password(password))
    return EXIT_OK

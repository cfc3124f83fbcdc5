"""The ``[inbox]`` section: where the approval inbox listens and who may sign in to it.

Read by ``toolcalls inbox`` and by the worker, which merges the inbox users' groups into the
``[approvers]`` groups (``with_inbox_groups``), so one file says who belongs to ``ops`` for the
inbox's buttons and for the workflow's checks alike. Secrets never sit in the file: a user has an
argon2 hash of their password, and the session secret is read from a variable the section names.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolcalls.activities.network.http_paths import check_env_name
from toolcalls.worker.payloads.settings import is_loopback
from toolcalls.workflows.models.approval import MAX_APPROVER_CHARS
from toolcalls.workflows.rules.approvers import ApproversSettings
from toolcalls.workflows.rules.identities import InvalidIdentity, canonical_identity, canonical_name

DEFAULT_LISTEN = "127.0.0.1:8234"
DEFAULT_SESSION_HOURS = 8.0
MAX_SESSION_HOURS = 24.0 * 30
DEFAULT_LOGIN_FAILURES = 5
"""Failed logins allowed per user name within ``login_window_seconds``."""
DEFAULT_ADDRESS_FAILURES = 20
"""Failed logins allowed per client address within ``login_window_seconds``."""
DEFAULT_LOGIN_WINDOW_SECONDS = 900.0
DEFAULT_LIST_LIMIT = 200
DEFAULT_RECENT_LIMIT = 50
DEFAULT_POLL_SECONDS = 3.0
MAX_USERS = 10_000

_ARGON2_PHC = re.compile(
    r"\$argon2(?:id|i|d)\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}"
)
_HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def check_user_name(name: str, where: str = "name") -> str:
    """A user name as a decision records it: 1-200 characters, no control characters, no
    spaces at either end.

    Raises:
        ValueError: naming ``where``.
    """
    if not name or len(name) > MAX_APPROVER_CHARS or name != name.strip():
        raise ValueError(f"{where}: {name!r}: a name is 1-{MAX_APPROVER_CHARS} characters")
    if _CONTROL.search(name):
        raise ValueError(f"{where}: {name!r}: control characters are not allowed")
    return name


class InboxUser(_Section):
    """``[[inbox.users]]``: one person who may sign in, and the approver groups they are in."""

    name: str
    password_hash: str | None = None
    """An argon2 PHC string (``toolcalls inbox hash-password``); without one the user cannot
    sign in with a password (a proxy may still name them)."""
    groups: list[str] = Field(default_factory=list)
    """``[approvers]`` groups this user belongs to, beside ``[approvers.groups]``."""

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        # Written as decisions record it: the login form and the proxy canonicalise too.
        return canonical_name(check_user_name(name))

    @field_validator("password_hash")
    @classmethod
    def _hash(cls, value: str | None) -> str | None:
        if value is not None and not _ARGON2_PHC.fullmatch(value):
            raise ValueError(
                "not an argon2 PHC string ($argon2id$v=19$m=...,t=...,p=...$salt$hash); "
                "make one with `toolcalls inbox hash-password`"
            )
        return value

    @field_validator("groups")
    @classmethod
    def _groups(cls, groups: list[str]) -> list[str]:
        for group in groups:
            check_user_name(group, "group")
        return list(dict.fromkeys(groups))


class InboxSection(_Section):
    """``toolcalls inbox``: the listen address, the accounts or the trusted proxy, sessions and
    the login rate limits."""

    listen: str = DEFAULT_LISTEN
    """``HOST:PORT``; ``--listen`` beats it. Off loopback, session cookies are ``Secure``: serve it
    behind TLS (a reverse proxy)."""
    users: list[InboxUser] = Field(default_factory=list, max_length=MAX_USERS)
    session_secret_env: str | None = None
    """A variable holding the secret that signs session cookies (at least 32 characters), so
    sessions outlive a restart and several replicas share them; without it each start makes a
    random one and sessions end with the process."""
    session_hours: float = Field(default=DEFAULT_SESSION_HOURS, gt=0, le=MAX_SESSION_HOURS)
    proxy_header: str | None = None
    """A header naming the user, set by an authenticating reverse proxy (an OIDC proxy): with it
    the login form is off and only requests from ``trusted_proxies`` are served."""
    trusted_proxies: list[str] = Field(default_factory=list)
    """Addresses or networks (``10.0.0.0/8``) of the proxies whose ``proxy_header`` is believed."""
    proxy_unlisted_users: bool = False
    """Admit names the proxy sends that ``[[inbox.users]]`` does not list (with no groups)."""
    forwarded_proxies: list[str] = Field(default_factory=list)
    """Addresses or networks of the TLS reverse proxies whose ``X-Forwarded-For`` names the
    client address the login limits count; from any other peer the header is ignored."""
    login_failures: int = Field(default=DEFAULT_LOGIN_FAILURES, ge=1, le=1000)
    address_failures: int = Field(default=DEFAULT_ADDRESS_FAILURES, ge=1, le=100_000)
    login_window_seconds: float = Field(default=DEFAULT_LOGIN_WINDOW_SECONDS, gt=0, le=86_400)
    list_limit: int = Field(default=DEFAULT_LIST_LIMIT, ge=1, le=1000)
    recent_limit: int = Field(default=DEFAULT_RECENT_LIMIT, ge=1, le=500)
    poll_seconds: float = Field(default=DEFAULT_POLL_SECONDS, ge=0.5, le=300)
    """How often an open page asks whether what it shows has changed."""

    @field_validator("session_secret_env")
    @classmethod
    def _secret_env(cls, name: str | None) -> str | None:
        return None if name is None else check_env_name(name)

    @field_validator("proxy_header")
    @classmethod
    def _proxy_header(cls, name: str | None) -> str | None:
        if name is not None and not _HEADER_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a header name")
        return name

    @field_validator("trusted_proxies", "forwarded_proxies")
    @classmethod
    def _proxies(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an address or a network") from None
        return entries

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        names = [user.name for user in self.users]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"users: {twice} listed twice")
        if (self.proxy_header is None) != (not self.trusted_proxies):
            raise ValueError("proxy_header and trusted_proxies go together")
        return self

    @property
    def proxied(self) -> bool:
        return self.proxy_header is not None

    @property
    def loopback(self) -> bool:
        return is_loopback(self.listen)

    def user(self, name: str) -> InboxUser | None:
        """The account ``name`` names, however it is spelled (``Alice `` is ``alice``)."""
        try:
            canonical = canonical_identity(name)
        except InvalidIdentity:
            return None
        return next((user for user in self.users if user.name == canonical), None)

    def can_sign_in(self) -> bool:
        """Whether anyone could sign in: a proxy, or a user with a password hash."""
        return self.proxied or any(user.password_hash for user in self.users)


def inbox_problems(inbox: InboxSection, approvers: ApproversSettings | None) -> list[str]:
    """What makes the users' groups ambiguous: a user named like a group."""
    groups = set(approvers.groups if approvers is not None else ())
    groups.update(group for user in inbox.users for group in user.groups)
    return [
        f"inbox.users: {user.name!r} is also the name of a group"
        for user in inbox.users
        if user.name in groups
    ]


def with_inbox_groups(
    approvers: ApproversSettings | None, users: Sequence[InboxUser]
) -> ApproversSettings | None:
    """``approvers`` whose groups also hold each inbox user under each of their groups.

    Without an ``[approvers]`` section anyone may decide, so there is nothing to merge.
    """
    if approvers is None or not any(user.groups for user in users):
        return approvers
    groups = {name: list(members) for name, members in approvers.groups.items()}
    for user in users:
        for group in user.groups:
            members = groups.setdefault(group, [])
            if user.name not in members:
                members.append(user.name)
    return approvers.model_copy(update={"groups": groups})

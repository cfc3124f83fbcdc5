"""Who is asking: passwords, sessions, CSRF tokens, the trusted proxy and the login rate limits.

Independent of the HTTP framework, so each piece is tested on its own. The trust model:

- **password** accounts: ``[[inbox.users]]`` with argon2 hashes; a login sets a session cookie,
  signed with the session secret (HMAC-SHA256) and bound to the user's hash, so a changed password
  ends the user's sessions. Failed logins are limited per user name and per client address.
- **proxy**: an authenticating reverse proxy names the user in ``proxy_header``; the header is
  believed only from a ``trusted_proxies`` address (the TCP peer, never ``X-Forwarded-For``), and
  every other request is refused. A session cookie still carries the CSRF binding.
- every form carries a CSRF token derived from the session; a POST without the right one is
  refused. The name a decision records is always the identity found here, never a form field,
  and canonical (``toolcalls.workflows.rules.identities``): logging in as ``Alice`` is logging in
  as ``alice``, and a proxy's name with an invisible character is refused.
- **the client address** the login limits count is the TCP peer's, or, from one of the
  ``forwarded_proxies``, the rightmost ``X-Forwarded-For`` entry that is not such a proxy.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import math
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from toolcalls.worker.config import ConfigError
from toolcalls.worker.inbox.settings import InboxSection, InboxUser, check_user_name
from toolcalls.workflows.rules.identities import InvalidIdentity, canonical_identity

MIN_SECRET_CHARS = 32
MAX_PASSWORD_CHARS = 1024
"""A longer password is refused before it is hashed: argon2 of megabytes costs the server."""
MAX_TRACKED = 10_000
"""Login counters kept at most; the oldest go first (an attacker rotating names or addresses
must not grow memory without bound)."""
LOGIN_NONCE_SECONDS = 3600

Clock = Callable[[], float]


@dataclass(frozen=True)
class Identity:
    """An authenticated person: the name every decision records, and their groups."""

    name: str
    groups: tuple[str, ...] = ()
    via: str = "password"
    """``password`` or ``proxy``."""


@dataclass(frozen=True)
class Session:
    """A signed session cookie's contents."""

    user: str
    sid: str
    expires: float
    via: str
    key: str
    """A fingerprint of the user's password hash when the session was made ("" for a proxy's)."""


class Refusal(Exception):
    """A request that cannot be served as it is; ``status`` is the HTTP status."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(status, reason)
        self.status = status
        self.reason = reason


def hash_password(password: str) -> str:
    """An argon2id PHC string for ``password`` (the library's recommended parameters)."""
    from argon2 import PasswordHasher

    return PasswordHasher().hash(password)


def key_of(user: InboxUser) -> str:
    """What binds a session to the password it was opened with."""
    if user.password_hash is None:
        return ""
    return hashlib.sha256(user.password_hash.encode()).hexdigest()[:24]


class Passwords:
    """Checks passwords against the configured argon2 hashes."""

    def __init__(self) -> None:
        from argon2 import PasswordHasher

        self._hasher = PasswordHasher()
        # Checked for unknown names too, so that the time taken does not tell which names exist.
        self._decoy = self._hasher.hash(secrets.token_urlsafe(16))

    def check(self, user: InboxUser | None, password: str) -> bool:
        """Whether ``password`` is ``user``'s; a user without a hash never signs in."""
        from argon2.exceptions import InvalidHashError, VerificationError

        if len(password) > MAX_PASSWORD_CHARS:
            return False
        stored = user.password_hash if user is not None else None
        try:
            self._hasher.verify(stored or self._decoy, password)
        except (VerificationError, InvalidHashError):
            return False
        return stored is not None


@dataclass
class _Counter:
    failures: list[float] = field(default_factory=list)


class LoginLimiter:
    """Failed logins per user name and per client address within a sliding window, in memory."""

    def __init__(
        self,
        *,
        per_user: int,
        per_address: int,
        window_seconds: float,
        clock: Clock = time.monotonic,
    ) -> None:
        self.per_user = per_user
        self.per_address = per_address
        self.window = window_seconds
        self.clock = clock
        self._counters: dict[tuple[str, str], _Counter] = {}

    def _recent(self, key: tuple[str, str]) -> list[float]:
        counter = self._counters.get(key)
        if counter is None:
            return []
        cutoff = self.clock() - self.window
        counter.failures = [at for at in counter.failures if at > cutoff]
        if not counter.failures:
            del self._counters[key]
            return []
        return counter.failures

    def _wait(self, key: tuple[str, str], limit: int) -> float:
        recent = self._recent(key)
        if len(recent) < limit:
            return 0.0
        return max(recent[-limit] + self.window - self.clock(), 0.0)

    def attempt(self, username: str, address: str) -> str | None:
        """Why a login for ``username`` from ``address`` is refused now, or ``None``; an attempt
        let through counts as failed until ``succeeded`` says otherwise, so that parallel
        attempts cannot outrun the count while their passwords are checked."""
        for key, limit, what in (
            (("user", _user_key(username)), self.per_user, "for this user"),
            (("address", address), self.per_address, "from this address"),
        ):
            wait = self._wait(key, limit)
            if wait > 0:
                minutes = max(math.ceil(wait / 60), 1)
                unit = "minute" if minutes == 1 else "minutes"
                return f"too many failed logins {what}; try again in {minutes} {unit}"
        now = self.clock()
        for key in (("user", _user_key(username)), ("address", address)):
            self._counters.setdefault(key, _Counter()).failures.append(now)
            self._counters[key] = self._counters.pop(key)  # the newest last
        while len(self._counters) > MAX_TRACKED:
            del self._counters[next(iter(self._counters))]
        return None

    def succeeded(self, username: str, address: str) -> None:
        """The attempt let through last was right: the user's failures are forgotten, and the
        address is not charged for it."""
        self._counters.pop(("user", _user_key(username)), None)
        counter = self._counters.get(("address", address))
        if counter is not None and counter.failures:
            counter.failures.pop()


def _user_key(username: str) -> str:
    """The name a user's failed logins are counted under: each spelling of one name is one."""
    try:
        return canonical_identity(username)
    except InvalidIdentity:
        return username.casefold()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Sessions:
    """Signed session cookies, CSRF tokens bound to them, and sessions ended by a logout."""

    def __init__(self, secret: bytes, lifetime: timedelta, *, clock: Clock = time.time) -> None:
        self._secret = secret
        self.lifetime = lifetime
        self.clock = clock
        self._revoked: dict[str, float] = {}

    def _mac(self, purpose: str, text: str) -> str:
        digest = hmac.new(self._secret, f"{purpose}\x00{text}".encode(), hashlib.sha256)
        return _b64(digest.digest())

    def issue(self, user: str, *, via: str, key: str) -> tuple[Session, str]:
        """A new session for ``user`` and its cookie value."""
        session = Session(
            user=user,
            sid=secrets.token_urlsafe(18),
            expires=self.clock() + self.lifetime.total_seconds(),
            via=via,
            key=key,
        )
        body = _b64(
            json.dumps(
                {"u": user, "s": session.sid, "e": session.expires, "v": via, "k": key},
                separators=(",", ":"),
            ).encode()
        )
        return session, f"{body}.{self._mac('session', body)}"

    def read(self, value: str | None) -> Session | None:
        """The session a cookie value carries, if it is ours, unexpired and not logged out."""
        if not value or value.count(".") != 1:
            return None
        body, mac = value.split(".")
        if not hmac.compare_digest(mac, self._mac("session", body)):
            return None
        try:
            data = json.loads(_unb64(body))
            session = Session(
                user=str(data["u"]),
                sid=str(data["s"]),
                expires=float(data["e"]),
                via=str(data["v"]),
                key=str(data["k"]),
            )
        except (ValueError, KeyError, TypeError):
            return None
        if session.expires <= self.clock() or session.sid in self._revoked:
            return None
        return session

    def revoke(self, session: Session) -> None:
        """End ``session`` in this process (a logout); its cookie no longer reads."""
        now = self.clock()
        self._revoked = {sid: until for sid, until in self._revoked.items() if until > now}
        self._revoked[session.sid] = session.expires

    def csrf(self, session: Session) -> str:
        """The token every form of ``session`` carries."""
        return self._mac("csrf", session.sid)

    def check_csrf(self, session: Session | None, token: str | None) -> bool:
        return (
            session is not None
            and bool(token)
            and hmac.compare_digest(str(token), self.csrf(session))
        )

    def login_nonce(self) -> str:
        """A value for the login form's cookie (a login cannot be forged from another site)."""
        return secrets.token_urlsafe(18)

    def login_token(self, nonce: str) -> str:
        return self._mac("login", nonce)

    def check_login(self, nonce: str | None, token: str | None) -> bool:
        return (
            bool(nonce)
            and bool(token)
            and hmac.compare_digest(str(token), self.login_token(str(nonce)))
        )


def session_secret(section: InboxSection, environ: Mapping[str, str]) -> tuple[bytes, bool]:
    """The secret that signs sessions, and whether it came from the environment.

    Raises:
        ConfigError: ``session_secret_env`` names a variable that is unset or too short.
    """
    name = section.session_secret_env
    if name is None:
        return secrets.token_bytes(32), False
    value = environ.get(name, "")
    if len(value) < MIN_SECRET_CHARS:
        state = "is not set" if not value else f"has fewer than {MIN_SECRET_CHARS} characters"
        raise ConfigError(f"inbox.session_secret_env: the variable {name} {state}")
    return value.encode(), True


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def _ip(text: str | None) -> IPAddress | None:
    """``text`` as an address (an IPv4-mapped IPv6 one as IPv4), or ``None`` if it is not one."""
    try:
        address = ipaddress.ip_address((text or "").strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _within(address: IPAddress, networks: Sequence[str]) -> bool:
    return any(address in ipaddress.ip_network(net, strict=False) for net in networks)


def trusted(address: str | None, networks: Sequence[str]) -> bool:
    """Whether ``address`` (the TCP peer) is one of the trusted proxies."""
    peer = _ip(address)
    return peer is not None and _within(peer, networks)


def client_address(peer: str | None, forwarded_for: Sequence[str], proxies: Sequence[str]) -> str:
    """The address of the client behind ``peer`` (the TCP peer), for the login limits and logs.

    ``forwarded_for`` is every ``X-Forwarded-For`` header of the request, in order. It is believed
    only when ``peer`` is one of ``proxies`` (addresses or networks): then the client is the
    rightmost entry that is not itself one of ``proxies`` (each proxy appends the address it was
    reached from, so the entries left of it may be the client's own forgeries). Otherwise, or
    when every entry is a proxy, or an entry on the way is not an address (a port, a name,
    nothing), the peer's address is the client's: a client cannot choose its own address.
    """
    fallback = peer or "unknown"
    if not proxies or not trusted(peer, proxies):
        return fallback
    entries = [entry for value in forwarded_for for entry in value.split(",")]
    for entry in reversed(entries):
        address = _ip(entry)
        if address is None:
            return fallback
        if not _within(address, proxies):
            return str(address)
    return fallback


def proxy_identity(section: InboxSection, address: str | None, values: Sequence[str]) -> Identity:
    """The user an authenticating proxy names in ``values`` (every ``proxy_header`` the request
    carries: the proxy must set exactly one, replacing any the client sent).

    Raises:
        Refusal: not from a trusted proxy (403), no user named (401), the header twice (400), a
            user without an account where only listed users are admitted (403).
    """
    assert section.proxy_header is not None
    if not trusted(address, section.trusted_proxies):
        raise Refusal(403, "this inbox is served only through its authenticating proxy")
    if len(values) > 1:
        raise Refusal(400, f"the request names more than one user ({section.proxy_header})")
    try:
        name = canonical_identity(values[0]) if values else ""
    except InvalidIdentity as exc:
        raise Refusal(403, f"{section.proxy_header}: {exc}") from None
    if not name:
        raise Refusal(401, f"the proxy named no user ({section.proxy_header})")
    try:
        check_user_name(name, section.proxy_header)
    except ValueError as exc:
        raise Refusal(403, str(exc)) from None
    user = section.user(name)
    if user is None and not section.proxy_unlisted_users:
        raise Refusal(403, f"{name!r} has no inbox account")
    return Identity(name=name, groups=tuple(user.groups) if user else (), via="proxy")

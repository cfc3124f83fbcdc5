"""Passwords, sessions, CSRF tokens, login limits and the trusted proxy, each on its own."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.worker.inbox.support import fast_hash
from toolcalls.worker.config import ConfigError
from toolcalls.worker.inbox.auth import (
    MAX_PASSWORD_CHARS,
    LoginLimiter,
    Passwords,
    Refusal,
    Sessions,
    client_address,
    hash_password,
    proxy_identity,
    session_secret,
    trusted,
)
from toolcalls.worker.inbox.settings import InboxSection, InboxUser

SECRET = b"s" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_passwords_are_checked_against_argon2_hashes() -> None:
    passwords = Passwords()
    alice = InboxUser(name="alice", password_hash=fast_hash("right"))
    assert passwords.check(alice, "right")
    assert not passwords.check(alice, "wrong")
    assert not passwords.check(alice, "right " * MAX_PASSWORD_CHARS)
    assert not passwords.check(None, "right")  # no such user
    assert not passwords.check(InboxUser(name="proxy-only"), "")  # no hash: never by password
    made = hash_password("s3cret")
    assert made.startswith("$argon2id$")
    assert passwords.check(InboxUser(name="b", password_hash=made), "s3cret")


def test_sessions_are_signed_expire_and_end_at_logout() -> None:
    clock = Clock()
    sessions = Sessions(SECRET, timedelta(hours=1), clock=clock)
    session, cookie = sessions.issue("alice", via="password", key="k1")
    assert sessions.read(cookie) == session
    body, mac = cookie.split(".")
    forged_body = body[:-2] + ("AA" if body[-2:] != "AA" else "BB")
    assert sessions.read(f"{forged_body}.{mac}") is None
    assert sessions.read(cookie + "x") is None
    assert sessions.read("garbage") is None
    assert Sessions(b"t" * 32, timedelta(hours=1), clock=clock).read(cookie) is None
    clock.now += 3601
    assert sessions.read(cookie) is None
    clock.now -= 3601
    sessions.revoke(session)
    assert sessions.read(cookie) is None


def test_csrf_tokens_belong_to_one_session() -> None:
    sessions = Sessions(SECRET, timedelta(hours=1))
    mine, _ = sessions.issue("alice", via="password", key="")
    theirs, _ = sessions.issue("alice", via="password", key="")
    token = sessions.csrf(mine)
    assert sessions.check_csrf(mine, token)
    assert not sessions.check_csrf(theirs, token)
    assert not sessions.check_csrf(mine, "")
    assert not sessions.check_csrf(mine, None)
    assert not sessions.check_csrf(None, token)
    nonce = sessions.login_nonce()
    assert sessions.check_login(nonce, sessions.login_token(nonce))
    assert not sessions.check_login(sessions.login_nonce(), sessions.login_token(nonce))
    assert not sessions.check_login(None, sessions.login_token(nonce))


def test_logins_are_limited_per_user_and_address_within_the_window() -> None:
    clock = Clock()
    limiter = LoginLimiter(per_user=2, per_address=3, window_seconds=600, clock=clock)
    assert limiter.attempt("Alice", "10.0.0.1") is None
    assert limiter.attempt("alice", "10.0.0.2") is None
    # Names are counted without regard to case: two failures of "alice" in all.
    assert limiter.attempt("ALICE", "10.0.0.3") == (
        "too many failed logins for this user; try again in 10 minutes"
    )
    clock.now += 599
    assert limiter.attempt("alice", "10.0.0.4") == (
        "too many failed logins for this user; try again in 1 minute"
    )
    clock.now += 2
    assert limiter.attempt("alice", "10.0.0.5") is None
    # A success forgets the user's failures and does not charge the address.
    limiter.succeeded("alice", "10.0.0.5")
    assert limiter.attempt("alice", "10.0.0.6") is None
    for name in ("bob", "carol", "dave"):
        assert limiter.attempt(name, "10.9.9.9") is None
    assert limiter.attempt("erin", "10.9.9.9") == (
        "too many failed logins from this address; try again in 10 minutes"
    )


def test_the_session_secret_comes_from_the_named_variable() -> None:
    named = InboxSection(session_secret_env="INBOX_SECRET")
    assert session_secret(named, {"INBOX_SECRET": "x" * 40}) == (b"x" * 40, True)
    for environ, problem in (({}, "is not set"), ({"INBOX_SECRET": "short"}, "fewer than 32")):
        with pytest.raises(ConfigError, match=problem):
            session_secret(named, environ)
    first, from_env = session_secret(InboxSection(), {})
    assert not from_env
    assert len(first) == 32
    assert first != session_secret(InboxSection(), {})[0]


def test_only_the_trusted_proxies_are_believed() -> None:
    networks = ["10.0.0.0/8", "::1"]
    assert trusted("10.2.3.4", networks)
    assert trusted("::ffff:10.2.3.4", networks)
    assert trusted("::1", networks)
    assert not trusted("11.0.0.1", networks)
    assert not trusted("localhost", networks)
    assert not trusted(None, networks)


def test_the_proxys_user() -> None:
    section = InboxSection(
        proxy_header="X-Forwarded-User",
        trusted_proxies=["10.0.0.0/8"],
        users=[InboxUser(name="alice", groups=["ops"])],
    )
    alice = proxy_identity(section, "10.0.0.1", ["alice"])
    assert (alice.name, alice.groups, alice.via) == ("alice", ("ops",), "proxy")
    cases = [
        ("192.0.2.1", ["alice"], 403, "only through its authenticating proxy"),
        ("10.0.0.1", [], 401, "the proxy named no user"),
        ("10.0.0.1", ["alice", "mallory"], 400, "more than one user"),
        ("10.0.0.1", ["eve"], 403, "'eve' has no inbox account"),
        ("10.0.0.1", ["a\x00b"], 403, "invisible character U+0000"),
        ("10.0.0.1", ["alice\u200b"], 403, "invisible character U+200B"),
    ]
    for address, values, status, reason in cases:
        with pytest.raises(Refusal) as raised:
            proxy_identity(section, address, values)
        assert raised.value.status == status
        assert reason in raised.value.reason
    open_ = section.model_copy(update={"proxy_unlisted_users": True})
    assert proxy_identity(open_, "10.0.0.1", ["eve"]).groups == ()


PROXIES = ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32"]


def test_the_client_address_is_the_rightmost_forwarded_one_not_a_proxy() -> None:
    assert client_address("10.0.0.1", ["203.0.113.5"], PROXIES) == "203.0.113.5"
    # A client's own forgeries sit left of what the proxies appended: they are passed over.
    assert client_address("10.0.0.1", ["1.1.1.1, 203.0.113.5"], PROXIES) == "203.0.113.5"
    # A chain of proxies: each one in the list is skipped, wherever it sits.
    chain = ["198.51.100.9, 203.0.113.5, 192.0.2.7,10.9.9.9"]
    assert client_address("10.0.0.1", chain, PROXIES) == "203.0.113.5"
    # Several headers count as one list, in order.
    assert client_address("10.0.0.1", ["1.1.1.1", "203.0.113.5, 10.1.1.1"], PROXIES) == (
        "203.0.113.5"
    )
    assert client_address("10.0.0.1", [" 2001:DB9::1 "], PROXIES) == "2001:db9::1"
    assert client_address("10.0.0.1", ["::ffff:203.0.113.5"], PROXIES) == "203.0.113.5"
    assert client_address("2001:db8::2", ["203.0.113.5"], PROXIES) == "203.0.113.5"
    assert client_address("::ffff:10.0.0.1", ["203.0.113.5"], PROXIES) == "203.0.113.5"


def test_the_peer_is_the_client_unless_the_header_is_believable() -> None:
    # An untrusted peer's header is ignored: the client cannot pick its address.
    assert client_address("203.0.113.5", ["198.51.100.1"], PROXIES) == "203.0.113.5"
    assert client_address("11.0.0.1", ["198.51.100.1"], PROXIES) == "11.0.0.1"
    # Without forwarded proxies nobody's header is believed.
    assert client_address("10.0.0.1", ["198.51.100.1"], []) == "10.0.0.1"
    assert client_address(None, ["198.51.100.1"], PROXIES) == "unknown"
    # No header, or only proxies in it.
    assert client_address("10.0.0.1", [], PROXIES) == "10.0.0.1"
    assert client_address("10.0.0.1", ["10.2.2.2, 192.0.2.7"], PROXIES) == "10.0.0.1"
    # A malformed entry on the way from the right: the peer's address.
    for value in (
        "garbage",
        "203.0.113.5:4711",
        "[2001:db9::1]:443",
        "203.0.113.5,",
        "",
        "unknown",
        "203.0.113.5, 10.0.0.300",
        "203.0.113.5; 10.0.0.3",
    ):
        assert client_address("10.0.0.1", [value], PROXIES) == "10.0.0.1", value
    # Left of the client's entry nothing is read, malformed or not.
    assert client_address("10.0.0.1", ["garbage, 203.0.113.5"], PROXIES) == "203.0.113.5"

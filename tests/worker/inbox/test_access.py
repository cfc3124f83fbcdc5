"""Who gets in, over HTTP: the login form, session cookies, CSRF tokens, the rate limits, the
approver rules for actions, a trusted proxy's header; logged out, nothing is shown."""

from __future__ import annotations

from http.cookies import SimpleCookie

import httpx
import pytest
from temporalio.client import Client

from tests.support.harness import pending_approval, start_call
from tests.worker.inbox.conftest import SECRET, Deployment, Visit
from tests.worker.inbox.support import PASSWORDS, Visitor, buttons, call_path, fast_hash, forms
from toolcalls.worker.inbox.app import app
from toolcalls.worker.inbox.base import Inbox
from toolcalls.worker.inbox.settings import InboxSection, InboxUser
from toolcalls.workflows.reach.client import ToolCallClient


def set_cookies(response: httpx.Response) -> SimpleCookie:
    jar: SimpleCookie = SimpleCookie()
    for header in response.headers.get_list("set-cookie"):
        jar.load(header)
    return jar


async def test_logged_out_nothing_is_visible(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    handle = await start_call(
        client,
        deployment.task_queue,
        "create_file",
        {"path": str(deployment.path.parent / "work" / "secret-plan.txt"), "content": "x"},
    )
    await pending_approval(handle)
    stranger = visit()
    for path in ("/", call_path(handle.id), "/recent"):
        response = await stranger.get(path)
        assert response.status_code == 303, path
        assert response.headers["location"].startswith("/login?next=")
        assert "secret-plan" not in response.text
    assert (await stranger.get(f"/api/calls/{handle.id}")).status_code == 401
    assert (await stranger.get("/api/pending")).status_code == 401
    forged = await stranger.http.post(call_path(handle.id), data={"action": "approve"})
    assert forged.status_code == 401
    assert "secret-plan" not in forged.text
    assert (await pending_approval(handle)).approved_by == []


async def test_the_session_cookie_and_the_security_headers(visit: Visit) -> None:
    alice = visit()
    login = await alice.login("alice", next="/recent")
    assert login.status_code == 303
    assert login.headers["location"] == "/recent"
    cookie = set_cookies(login)["toolcalls-inbox"]
    assert cookie["httponly"] is True
    assert cookie["samesite"].lower() == "lax"
    assert cookie["path"] == "/"
    assert not cookie["secure"]  # loopback: plain http is fine
    page = await alice.get("/login")
    assert page.status_code == 303  # already in
    shown = await alice.get("/recent")
    assert shown.status_code == 200
    policy = shown.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "unsafe-inline" not in policy
    assert shown.headers["x-content-type-options"] == "nosniff"
    assert shown.headers["cache-control"] == "no-store"
    assert "<script>" not in shown.text  # the one script is a file of its own
    assert '<script src="/static/inbox.js" defer></script>' in shown.text
    assert (await alice.get("/static/inbox.js")).status_code == 200


async def test_off_loopback_the_cookie_is_secure(calls: ToolCallClient) -> None:
    section = InboxSection(
        listen="0.0.0.0:8234",
        users=[InboxUser(name="alice", password_hash=fast_hash(PASSWORDS["alice"]))],
    )
    served = app(Inbox(calls, section, SECRET))
    async with Visitor(served, origin="https://inbox.example.com") as alice:
        login = await alice.login("alice")
        cookie = set_cookies(login)["__Host-toolcalls-inbox"]
        assert cookie["secure"] is True
        assert cookie["httponly"] is True
        assert (await alice.get("/recent")).status_code == 200
        assert "strict-transport-security" in login.headers


async def test_wrong_passwords_forged_logins_and_open_redirects(visit: Visit) -> None:
    visitor = visit()
    wrong = await visitor.login("alice", "not her password")
    assert wrong.status_code == 401
    assert "Wrong user name or password." in wrong.text
    assert "toolcalls-inbox" not in set_cookies(wrong)
    unknown = await visitor.login("nobody", "whatever")
    assert unknown.status_code == 401
    # A login posted without the form's token (from another site, say) is refused.
    forged = await visitor.http.post(
        "/login", data={"username": "alice", "password": PASSWORDS["alice"]}
    )
    assert forged.status_code == 403
    assert "toolcalls-inbox" not in set_cookies(forged)
    elsewhere = await visit().login("alice", next="//evil.example/steal")
    assert elsewhere.headers["location"] == "/"


async def test_failed_logins_are_limited_per_user_and_per_address(
    calls: ToolCallClient, deployment: Deployment
) -> None:
    section = deployment.config.inbox.model_copy(
        update={"login_failures": 3, "address_failures": 5}
    )
    served = app(Inbox(calls, section, SECRET))
    async with Visitor(served, address="10.1.1.1") as first:
        for _ in range(3):
            assert (await first.login("alice", "wrong")).status_code == 401
        # The right password no longer helps for a while, from any address.
        blocked = await first.login("alice")
        assert blocked.status_code == 429
        assert "Too many failed logins for this user; try again in 15 minutes." in blocked.text
        async with Visitor(served, address="10.2.2.2") as second:
            assert (await second.login("alice")).status_code == 429
            assert (await second.login("bob")).status_code == 303
        # One address trying many names is stopped too.
        for name in ("bob", "carol"):
            assert (await first.login(name, "wrong")).status_code == 401
        refused = await first.login("mallory")
        assert refused.status_code == 429
        assert "from this address" in refused.text


def forwarded_for(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


async def test_behind_a_forwarding_proxy_the_limits_count_the_real_client(
    calls: ToolCallClient, deployment: Deployment, caplog: pytest.LogCaptureFixture
) -> None:
    section = deployment.config.inbox.model_copy(update={"forwarded_proxies": ["10.0.0.0/24"]})
    served = app(Inbox(calls, section, SECRET))
    attacker = Visitor(served, address="10.0.0.2", **forwarded_for("1.1.1.1, 203.0.113.66"))
    async with attacker:
        for number in range(section.address_failures):
            assert (await attacker.login(f"nobody{number}", "wrong")).status_code == 401
        refused = await attacker.login("alice")
        assert refused.status_code == 429
        assert "from this address" in refused.text
    assert "failed login for 'nobody0' from 203.0.113.66 (via 10.0.0.2)" in caplog.text
    # Everyone else reaches the inbox through the same proxy, and still gets in.
    async with Visitor(served, address="10.0.0.2", **forwarded_for("198.51.100.7")) as alice:
        assert (await alice.login("alice")).status_code == 303
        assert (await alice.get("/recent")).status_code == 200


async def test_a_forged_forwarded_for_from_elsewhere_is_ignored(
    calls: ToolCallClient, deployment: Deployment
) -> None:
    section = deployment.config.inbox.model_copy(
        update={"forwarded_proxies": ["10.0.0.0/24"], "address_failures": 3}
    )
    served = app(Inbox(calls, section, SECRET))
    for number in range(3):
        forged = forwarded_for(f"198.51.100.{number}")
        async with Visitor(served, address="203.0.113.9", **forged) as attacker:
            assert (await attacker.login(f"nobody{number}", "wrong")).status_code == 401
    async with Visitor(served, address="203.0.113.9", **forwarded_for("198.51.100.99")) as again:
        refused = await again.login("alice")
        assert refused.status_code == 429
        assert "from this address" in refused.text


async def test_logout_ends_the_session(visit: Visit) -> None:
    alice = visit()
    await alice.login("alice")
    cookie = alice.http.cookies["toolcalls-inbox"]
    page = await alice.get("/")
    [logout] = [form for form in forms(page.text) if form.action == "/logout"]
    without_token = await alice.http.post("/logout")
    assert without_token.status_code == 403
    out = await alice.http.post("/logout", data=logout.fields)
    assert out.status_code == 303
    assert (await alice.get("/")).status_code == 303
    # The old cookie, replayed, no longer signs anyone in.
    replay = visit()
    replay.http.cookies.set("toolcalls-inbox", cookie)
    assert (await replay.get("/")).status_code == 303


async def test_a_changed_password_ends_the_users_sessions(
    calls: ToolCallClient, deployment: Deployment, visit: Visit
) -> None:
    alice = visit()
    await alice.login("alice")
    cookie = alice.http.cookies["toolcalls-inbox"]
    users = [
        user.model_copy(update={"password_hash": fast_hash("new")})
        if user.name == "alice"
        else user
        for user in deployment.config.inbox.users
    ]
    section = deployment.config.inbox.model_copy(update={"users": users})
    async with Visitor(app(Inbox(calls, section, SECRET))) as later:
        later.http.cookies.set("toolcalls-inbox", cookie)
        assert (await later.get("/")).status_code == 303


async def test_actions_only_where_the_approver_rules_allow(
    client: Client, deployment: Deployment, worker: None, visit: Visit
) -> None:
    handle = await start_call(
        client,
        deployment.task_queue,
        "create_file",
        {"path": str(deployment.path.parent / "work" / "ops-only.txt"), "content": "x"},
    )
    await pending_approval(handle)
    alice, mallory = visit(), visit()
    await alice.login("alice")
    await mallory.login("mallory")
    page = await mallory.get(call_path(handle.id))
    assert page.status_code == 200
    assert "Approve" not in buttons(page.text)
    assert "Deny" not in buttons(page.text)
    assert "You may not decide this call: it needs ops." in page.text
    # A POST made up from alice's form with mallory's own (valid) CSRF token: refused.
    alices = await alice.get(call_path(handle.id))
    [approve] = [f for f in forms(alices.text) if f.fields.get("action") == "approve"]
    mallorys_token = forms(page.text)[0].fields["csrf"]
    forged = await mallory.http.post(
        call_path(handle.id), data={**approve.fields, "csrf": mallorys_token}
    )
    assert forged.status_code == 403
    assert "mallory may not decide this call: it needs ops" in forged.text
    # Without a token, or with another user's, nobody gets through.
    for token in ("", approve.fields["csrf"]):
        refused = await mallory.http.post(
            call_path(handle.id), data={**approve.fields, "csrf": token}
        )
        assert refused.status_code == 403
        assert "CSRF token" in refused.text
    no_token = {k: v for k, v in approve.fields.items() if k != "csrf"}
    assert (await alice.http.post(call_path(handle.id), data=no_token)).status_code == 403
    assert (await pending_approval(handle)).approved_by == []


async def test_a_trusted_proxy_names_the_user(
    calls: ToolCallClient, deployment: Deployment
) -> None:
    section = deployment.config.inbox.model_copy(
        update={"proxy_header": "X-Forwarded-User", "trusted_proxies": ["10.0.0.0/8"]}
    )
    served = app(Inbox(calls, section, SECRET))
    async with Visitor(served, address="10.0.0.7", **{"X-Forwarded-User": "alice"}) as proxied:
        page = await proxied.get("/recent")
        assert page.status_code == 200
        assert '<span class="user">alice</span>' in page.text
        assert '<span class="groups">ops</span>' in page.text
        assert "Log out" not in page.text  # the proxy owns the login
        assert (await proxied.get("/login")).status_code == 303
        assert (await proxied.http.post("/login", data={})).status_code == 404
    # From anywhere else the header means nothing: the request is refused.
    async with Visitor(served, address="192.0.2.9", **{"X-Forwarded-User": "alice"}) as direct:
        refused = await direct.get("/recent")
        assert refused.status_code == 403
        assert "only through its authenticating proxy" in refused.text
    async with Visitor(served, address="10.0.0.7", **{"X-Forwarded-User": "eve"}) as unknown:
        assert (await unknown.get("/recent")).status_code == 403
    async with Visitor(served, address="10.0.0.7") as anonymous:
        assert (await anonymous.get("/recent")).status_code == 401


async def test_cross_site_and_oversized_forms_are_refused(visit: Visit) -> None:
    alice = visit()
    await alice.login("alice")
    page = await alice.get("/")
    [logout] = [form for form in forms(page.text) if form.action == "/logout"]
    cross = await alice.http.post(
        "/logout", data=logout.fields, headers={"Sec-Fetch-Site": "cross-site"}
    )
    assert cross.status_code == 403
    assert "a form from another site is refused" in cross.text
    huge = await alice.http.post(
        "/calls/x", data={**logout.fields, "arguments": "x" * (4 * 1024 * 1024 + 1)}
    )
    assert huge.status_code == 413
    # Still signed in: neither reached the logout.
    assert (await alice.get("/recent")).status_code == 200

"""The login form, logging in with a password, and logging out.

A login is refused with 403 without the form's own token (bound to a cookie of its own, so a
login cannot be posted from another site), with 429 past the login limits, and with 401 for a
wrong name or password, the same message for both. A success sets the session cookie and goes
back to the page that asked, if it is a page of this inbox.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from toolcalls.worker.inbox.auth import LOGIN_NONCE_SECONDS, Refusal, client_address, key_of
from toolcalls.worker.inbox.base import LOGIN_COOKIE, Inbox, form_text

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

log = logging.getLogger("toolcalls.inbox")


def safe_next(value: Any) -> str:
    """A page of this inbox to go to after the login; anything else (another site) is ``/``."""
    text = value if isinstance(value, str) else ""
    if not text.startswith("/") or text.startswith("//") or "\\" in text:
        return "/"
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
        return "/"
    return text


def _login_cookie(inbox: Inbox) -> str:
    return f"__Host-{LOGIN_COOKIE}" if inbox.secure else LOGIN_COOKIE


def _login_page(
    inbox: Inbox, *, username: str, next_: str, error: str | None, status: int
) -> Response:
    nonce = inbox.sessions.login_nonce()
    response = inbox.page(
        None,
        "login.html",
        {
            "login_token": inbox.sessions.login_token(nonce),
            "username": username,
            "next": next_,
            "error": error,
        },
        status=status,
    )
    response.set_cookie(
        _login_cookie(inbox),
        nonce,
        max_age=LOGIN_NONCE_SECONDS,
        path="/",
        secure=inbox.secure,
        httponly=True,
        samesite="strict",
    )
    return response


def _client(inbox: Inbox, request: Request) -> tuple[str, str]:
    """The client address the login limits count, and how the log names it (with the proxy's
    address when they differ)."""
    peer = request.client.host if request.client else None
    forwarded = request.headers.getlist("x-forwarded-for")
    address = client_address(peer, forwarded, inbox.section.forwarded_proxies)
    return address, address if address == (peer or "unknown") else f"{address} (via {peer})"


async def login_form(inbox: Inbox, request: Request) -> Response:
    from starlette.responses import RedirectResponse

    next_ = safe_next(request.query_params.get("next"))
    if inbox.section.proxied or inbox.viewer(request) is not None:
        return RedirectResponse(next_, 303)
    return _login_page(inbox, username="", next_=next_, error=None, status=200)


async def login(inbox: Inbox, request: Request) -> Response:
    from starlette.responses import RedirectResponse

    if inbox.passwords is None:
        raise Refusal(404, "this inbox signs people in through its proxy")
    form = await inbox.form(request)
    username = form_text(form, "username").strip()
    password = form_text(form, "password")
    next_ = safe_next(form.get("next"))

    def again(error: str, status: int) -> Response:
        return _login_page(inbox, username=username, next_=next_, error=error, status=status)

    if not inbox.sessions.check_login(
        request.cookies.get(_login_cookie(inbox)), form_text(form, "csrf")
    ):
        return again("The login form expired or came from elsewhere: log in again.", 403)
    address, where = _client(inbox, request)
    blocked = inbox.limiter.attempt(username, address)
    if blocked is not None:
        log.warning("login for %r from %s refused: %s", username, where, blocked)
        return again(blocked[0].upper() + blocked[1:] + ".", 429)
    user = inbox.section.user(username)
    if not await asyncio.to_thread(inbox.passwords.check, user, password) or user is None:
        log.warning("failed login for %r from %s", username, where)
        return again("Wrong user name or password.", 401)
    inbox.limiter.succeeded(username, address)
    _, cookie = inbox.sessions.issue(user.name, via="password", key=key_of(user))
    log.info("%s logged in from %s", user.name, where)
    response = RedirectResponse(next_, 303)
    inbox.set_session(response, cookie)
    response.delete_cookie(_login_cookie(inbox), path="/", secure=inbox.secure, httponly=True)
    return response


async def logout(inbox: Inbox, request: Request) -> Response:
    from starlette.responses import RedirectResponse

    form = await inbox.form(request)
    viewer = inbox.check_csrf(inbox.viewer(request), form)
    inbox.sessions.revoke(viewer.session)
    response = RedirectResponse("/login", 303)
    inbox.clear_session(response)
    return response

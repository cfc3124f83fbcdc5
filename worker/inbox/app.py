"""The inbox's ASGI application (Starlette): the routes, and the security headers on every response.

Every response carries a strict Content-Security-Policy (scripts and styles only from ``/static``,
no inline code, no framing), ``X-Content-Type-Options: nosniff`` and ``Cache-Control: no-store``;
templates autoescape everything. What every request needs is the ``Inbox``
(``toolcalls.worker.inbox.base``); the pages and actions are in ``toolcalls.worker.inbox.pages``,
``actions`` and ``login``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolcalls.activities.connections.settings import CALLBACK_PATH, START_PATH
from toolcalls.worker.connections import pages as consent
from toolcalls.worker.inbox import actions, login, pages, progress
from toolcalls.worker.inbox.auth import Refusal
from toolcalls.worker.inbox.base import HERE, Inbox

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from toolcalls.worker.chat.slack import SlackInteractions

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}


class SecurityHeaders:
    """ASGI middleware: the security headers on every response, ``no-store`` off ``/static``."""

    def __init__(self, app: ASGIApp, *, hsts: bool) -> None:
        self.app = app
        self.hsts = hsts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = str(scope.get("path", "")).startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                extra = dict(SECURITY_HEADERS)
                extra["cache-control"] = "max-age=300" if static else "no-store"
                if self.hsts:
                    extra["strict-transport-security"] = "max-age=31536000"
                known = {name.lower() for name, _ in headers}
                headers += [
                    (name.encode(), value.encode())
                    for name, value in extra.items()
                    if name.encode() not in known
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


def app(inbox: Inbox, *, slack: SlackInteractions | None = None) -> Starlette:
    """The ASGI application serving ``inbox`` (and ``slack``'s interactions endpoint, with its
    own authentication: Slack's request signature, not a session)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    def bound(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            response: Response = await handler(inbox, request)
            return response

        return endpoint

    routes = [
        Route("/", bound(pages.pending), methods=["GET"]),
        Route("/login", bound(login.login_form), methods=["GET"]),
        Route("/login", bound(login.login), methods=["POST"]),
        Route("/logout", bound(login.logout), methods=["POST"]),
        Route("/recent", bound(pages.recent), methods=["GET"]),
        Route("/healthz", bound(pages.health), methods=["GET"]),
        Route(START_PATH, bound(consent.start), methods=["GET"]),
        Route(CALLBACK_PATH, bound(consent.callback), methods=["GET"]),
        Route("/api/pending", bound(pages.pending_version_api), methods=["GET"]),
        Route("/api/calls/{workflow_id:path}", bound(pages.call_version_api), methods=["GET"]),
        Route("/api/progress/{workflow_id:path}", bound(progress.progress_api), methods=["GET"]),
        Route("/calls/{workflow_id:path}", bound(pages.call), methods=["GET"]),
        Route("/calls/{workflow_id:path}", bound(actions.act), methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    if slack is not None:
        from toolcalls.worker.chat.slack import PATH

        routes.append(Route(PATH, slack.endpoint, methods=["POST"]))

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Refusal)
        return pages.refused(inbox, request, exc)

    async def not_found(request: Request, exc: Exception) -> Response:
        return pages.refused(inbox, request, Refusal(404, f"there is no page {request.url.path}"))

    return Starlette(
        routes=routes,
        middleware=[Middleware(SecurityHeaders, hsts=inbox.secure)],
        exception_handlers={Refusal: refused, 404: not_found},
    )

"""What every page and action of the inbox shares: the ``Inbox`` (the ``ToolCallClient``, the only
way to the calls, the sessions, the password checks and login limits, the templates), who is
asking (``Viewer``), forms and the pages' frame.

The routes and the security headers are in ``toolcalls.worker.inbox.app``; the pages, actions and
login in ``pages``, ``actions`` and ``login`` beside it, which import this module and never the
application.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from toolcalls.activities.connections import Connections
from toolcalls.worker.inbox import rendering
from toolcalls.worker.inbox.auth import (
    Identity,
    LoginLimiter,
    Passwords,
    Refusal,
    Session,
    Sessions,
    key_of,
    proxy_identity,
)
from toolcalls.worker.inbox.settings import InboxSection
from toolcalls.worker.render import may_decide, when
from toolcalls.workflows.models.call import CallState, ToolCallResult
from toolcalls.workflows.reach.client import ToolCallClient
from toolcalls.workflows.rules.approvers import ApproversSettings, resolve

if TYPE_CHECKING:
    from jinja2 import Environment
    from starlette.datastructures import FormData
    from starlette.requests import Request
    from starlette.responses import Response

HERE = Path(__file__).parent
COOKIE = "toolcalls-inbox"
SECURE_COOKIE = "__Host-toolcalls-inbox"
"""With ``Secure``, the ``__Host-`` prefix: the browser keeps it to this host and path ``/``."""
LOGIN_COOKIE = "toolcalls-inbox-login"
MAX_FORM_BYTES = 4 * 1024 * 1024
"""A form past this is refused (edited arguments are the largest: Temporal caps them at 2 MB)."""
MAX_FORM_FIELDS = 50
RESULT_CACHE = 2_000
"""Results of finished calls kept in memory: a finished call's result never changes."""


@dataclass(frozen=True)
class Viewer:
    """The person a request is from, their session, and the CSRF token of their forms."""

    identity: Identity
    session: Session
    csrf: str
    new_cookie: str | None = None
    """A session cookie to set with the response (a proxy's user seen without one)."""


def call_url(workflow_id: str) -> str:
    """The page of a call; ids of child calls hold slashes, which stay path separators."""
    return "/calls/" + quote(workflow_id, safe="/")


def form_text(form: FormData, name: str) -> str:
    """A form's text field (``""`` when it is missing or a file)."""
    value = form.get(name)
    return value if isinstance(value, str) else ""


def environment() -> Environment:
    """The templates, autoescaping every value whatever the template's name."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(call_url=call_url, when=when, may_decide=may_decide, pretty=rendering.pretty)
    return env


class Inbox:
    """One inbox: its settings, its way to the calls, and what it keeps in memory."""

    def __init__(
        self,
        calls: ToolCallClient,
        section: InboxSection,
        secret: bytes,
        *,
        secure: bool | None = None,
        connections: Connections | None = None,
        approvers: ApproversSettings | None = None,
    ) -> None:
        self.calls = calls
        self.connections = connections
        """``[connections]``: the consent pages are served when it has providers."""
        self.section = section
        self.approvers = approvers
        """The deployment's approver rules (with the inbox's groups): who may stop a call."""
        self.secure = (not section.loopback) if secure is None else secure
        """Cookies are ``Secure`` (sent only over https) off loopback."""
        self.cookie = SECURE_COOKIE if self.secure else COOKIE
        self.sessions = Sessions(secret, timedelta(hours=section.session_hours))
        self.passwords = None if section.proxied else Passwords()
        self.limiter = LoginLimiter(
            per_user=section.login_failures,
            per_address=section.address_failures,
            window_seconds=section.login_window_seconds,
        )
        self.templates = environment()
        self.results: OrderedDict[str, ToolCallResult] = OrderedDict()

    def stoppers(self, state: CallState) -> list[str] | None:
        """Who may stop the call: the names its approver rules allow (``None``: anyone signed
        in), as the deployment's rules resolve for its tool and capabilities now."""
        rule = resolve(self.approvers, state.tool, state.capabilities)
        return None if rule is None else rule.approvers

    def viewer(self, request: Request) -> Viewer | None:
        """The signed-in person, or ``None``.

        Raises:
            Refusal: in proxy mode, a request the proxy rules refuse.
        """
        session = self.sessions.read(request.cookies.get(self.cookie))
        if self.section.proxied:
            assert self.section.proxy_header is not None
            address = request.client.host if request.client else None
            identity = proxy_identity(
                self.section, address, request.headers.getlist(self.section.proxy_header)
            )
            cookie = None
            if session is None or session.user != identity.name or session.via != "proxy":
                session, cookie = self.sessions.issue(identity.name, via="proxy", key="")
            return Viewer(identity, session, self.sessions.csrf(session), cookie)
        if session is None or session.via != "password":
            return None
        user = self.section.user(session.user)
        if user is None or key_of(user) != session.key:
            return None  # removed, or the password changed since this session began
        identity = Identity(user.name, tuple(user.groups), "password")
        return Viewer(identity, session, self.sessions.csrf(session))

    async def form(self, request: Request) -> FormData:
        """A POST's form, bounded in size.

        Raises:
            Refusal: too large (413), of unknown length (411), sent by another site (403).
        """
        if request.headers.get("sec-fetch-site") == "cross-site":
            raise Refusal(403, "a form from another site is refused")
        declared = request.headers.get("content-length")
        if declared is None or not declared.isdigit():
            raise Refusal(411, "a form must say its length")
        if int(declared) > MAX_FORM_BYTES:
            raise Refusal(413, f"the form is over {MAX_FORM_BYTES} bytes")
        return await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)

    def check_csrf(self, viewer: Viewer | None, form: FormData) -> Viewer:
        """``viewer``, if the form carries their CSRF token.

        Raises:
            Refusal: nobody signed in (401), a token missing or not this session's (403).
        """
        if viewer is None:
            raise Refusal(401, "you are not logged in")
        token = form.get("csrf")
        if viewer.new_cookie is not None or not self.sessions.check_csrf(
            viewer.session, token if isinstance(token, str) else None
        ):
            raise Refusal(
                403,
                "this form was not sent from a page of this inbox (the CSRF token is missing or "
                "stale): reload the page and try again",
            )
        return viewer

    def page(
        self,
        viewer: Viewer | None,
        template: str,
        context: dict[str, Any],
        *,
        status: int = 200,
    ) -> Response:
        from starlette.responses import HTMLResponse

        values = {
            "viewer": viewer,
            "page": "",
            "watch": None,
            "version": "",
            "poll_seconds": self.section.poll_seconds,
            "notice": None,
            "error": None,
            **context,
        }
        html = self.templates.get_template(template).render(values)
        response = HTMLResponse(html, status_code=status)
        if viewer is not None and viewer.new_cookie is not None:
            self.set_session(response, viewer.new_cookie)
        return response

    def message(self, viewer: Viewer | None, status: int, heading: str, text: str) -> Response:
        context = {"heading": heading, "text": text, "password_login": not self.section.proxied}
        return self.page(viewer, "message.html", context, status=status)

    def set_session(self, response: Response, value: str) -> None:
        response.set_cookie(
            self.cookie,
            value,
            max_age=int(self.sessions.lifetime.total_seconds()),
            path="/",
            secure=self.secure,
            httponly=True,
            samesite="lax",
        )

    def clear_session(self, response: Response) -> None:
        response.delete_cookie(
            self.cookie, path="/", secure=self.secure, httponly=True, samesite="lax"
        )

    def now(self) -> datetime:
        return datetime.now(UTC)

    def remember_result(self, key: str, result: ToolCallResult) -> None:
        self.results[key] = result
        self.results.move_to_end(key)
        while len(self.results) > RESULT_CACHE:
            self.results.popitem(last=False)

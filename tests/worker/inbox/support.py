"""A deployment for the inbox tests, and an HTTP visitor that reads the inbox's forms."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
from argon2 import PasswordHasher

from tests.worker.support import write_config
from toolcalls.workflows.reach.client import PendingCall, ToolCallClient

PASSWORDS = {
    "alice": "alice-password-1",
    "bob": "bob-password-2",
    "carol": "carol-password-3",
    "mallory": "mallory-password-4",
}
GROUPS = {"alice": ["ops"], "bob": ["ops"], "carol": [], "mallory": []}
"""carol is an approver through ``[approvers.groups]``, the others through their inbox groups."""
FAST = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
"""Cheap hashes for tests: a hash carries its parameters, so checking one is cheap too."""
ORIGIN = "http://127.0.0.1:8234"


def fast_hash(password: str) -> str:
    return FAST.hash(password)


def users_toml(names: Mapping[str, str] | None = None) -> str:
    lines = []
    for name, password in (names or PASSWORDS).items():
        groups = ", ".join(f'"{group}"' for group in GROUPS.get(name, []))
        lines += [
            "[[inbox.users]]",
            f'name = "{name}"',
            f'password_hash = "{fast_hash(password)}"',
            f"groups = [{groups}]",
            "",
        ]
    return "\n".join(lines)


INLINE_KEYS_ENV = "TOOLCALLS_TEST_INBOX_INLINE_KEYS"
"""Where the deployment's ``[inline]`` keys are (``inline_keys()`` sets them)."""


def deployment_toml(
    tmp_path: Path, task_queue: str, *, listen: str = "127.0.0.1:8234", inline: bool = False
) -> str:
    """Tools with each kind of preview, approver rules naming inbox groups, and four users; with
    ``inline``, ``[inline]`` keys from ``INLINE_KEYS_ENV`` (which the caller sets)."""
    inline_section = f'[inline]\nkeys_env = "{INLINE_KEYS_ENV}"\n' if inline else ""
    root = tmp_path / "work"
    root.mkdir(exist_ok=True)
    return f"""
task_queue = "{task_queue}"
tools = ["calculator", "ask_user", "create_file", "edit_file", "execute_command",
         "create_calendar_event", "shop_api"]

[worker]
isolate_workflows = true

[files]
roots = ["{root}"]
checkpoints = "{tmp_path / "checkpoints.db"}"

[process]
roots = ["{root}"]

[calendar]
backend = "tests.support.calendar_backend:MemoryCalendar"
options = {{ name = "inbox-{uuid.uuid4().hex[:8]}" }}

[[http]]
name = "shop_api"
base_url = "http://127.0.0.1:9/api/"
allow_http = true
allowed_methods = ["GET", "POST"]
headers = {{ Accept = "application/json" }}

{inline_section}
[approvers]
max_grant_seconds = 86400

[approvers.groups]
security = ["carol"]

[approvers.rules."filesystem.write"]
approvers = ["ops"]

[approvers.rules.calculator]
approvers = ["ops", "security"]

[approvers.rules."process.execute"]
approvers = ["ops"]

[inbox]
listen = "{listen}"
poll_seconds = 1

{users_toml()}
"""


def write_deployment(tmp_path: Path, task_queue: str, **options: Any) -> Path:
    return write_config(tmp_path, deployment_toml(tmp_path, task_queue, **options))


@dataclass
class Form:
    """One ``<form>`` of a page: where it posts, its hidden fields, its buttons."""

    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)
    buttons: list[tuple[str, str, str]] = field(default_factory=list)
    """``(label, name, value)`` of each submit button."""
    inputs: list[str] = field(default_factory=list)
    choices: list[tuple[str, str]] = field(default_factory=list)
    """``(name, value)`` of each radio button."""


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[Form] = []
        self._button: list[str] | None = None
        self._label: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        seen = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.forms.append(Form(seen.get("action", ""), seen.get("method", "get")))
        elif not self.forms:
            return
        elif tag == "input" and seen.get("type") == "hidden":
            self.forms[-1].fields[seen["name"]] = seen.get("value", "")
        elif tag == "input" and seen.get("type") == "radio":
            self.forms[-1].choices.append((seen.get("name", ""), seen.get("value", "")))
        elif tag in ("input", "textarea", "select"):
            self.forms[-1].inputs.append(seen.get("name", ""))
        elif tag == "button":
            self._button = [seen.get("name", ""), seen.get("value", "")]
            self._label = []

    def handle_data(self, data: str) -> None:
        if self._button is not None:
            self._label.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "button" and self._button is not None and self.forms:
            name, value = self._button
            self.forms[-1].buttons.append(("".join(self._label).strip(), name, value))
            self._button = None


def forms(html: str) -> list[Form]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms


def buttons(html: str) -> list[str]:
    """The labels of every submit button on a page."""
    return [label for form in forms(html) for label, _, _ in form.buttons]


def form_for(html: str, action: str, choice: str | None = None) -> Form:
    """The form whose hidden ``action`` field is ``action`` (and that offers ``choice``)."""
    found = [
        form
        for form in forms(html)
        if form.fields.get("action") == action
        and (choice is None or choice in (value for _, value in form.choices))
    ]
    assert found, f"no {action} form on the page"
    return found[0]


class Visitor:
    """A browser-less visitor: cookies, the login form, the call pages' forms."""

    def __init__(
        self, app: Any, *, address: str = "127.0.0.1", origin: str = ORIGIN, **headers: str
    ) -> None:
        transport = httpx.ASGITransport(app=app, client=(address, 41234))
        self.http = httpx.AsyncClient(
            transport=transport, base_url=origin, headers=headers, timeout=60
        )

    async def __aenter__(self) -> Visitor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def login(self, name: str, password: str | None = None, **extra: str) -> httpx.Response:
        page = await self.http.get("/login")
        token = forms(page.text)[-1].fields["csrf"]
        data = {"username": name, "password": password or PASSWORDS[name], "csrf": token}
        return await self.http.post("/login", data={**data, **extra})

    async def get(self, path: str) -> httpx.Response:
        return await self.http.get(path)

    async def act(
        self,
        path: str,
        action: str,
        *,
        button: str | None = None,
        choice: str | None = None,
        **fields: str,
    ) -> httpx.Response:
        """Send the call page's ``action`` form as it is, with ``fields`` filled in (and the
        radio button of value ``choice`` chosen, in the form that offers it)."""
        page = await self.http.get(path)
        assert page.status_code == 200, page.text
        form = form_for(page.text, action, choice)
        data = dict(form.fields)
        if button is not None:
            [(_, name, value)] = [b for b in form.buttons if b[0] == button]
            data[name] = value
        if choice is not None:
            [(name, value)] = [c for c in form.choices if c[1] == choice]
            data[name] = value
        data.update(fields)
        return await self.http.post(form.action, data=data)


def call_path(workflow_id: str) -> str:
    return f"/calls/{workflow_id}"


def notice(html: str) -> str:
    match = re.search(r'<p class="banner notice" role="status">(.*?)</p>', html, re.S)
    return match.group(1).strip() if match else ""


def error(html: str) -> str:
    match = re.search(r'<p class="banner error" role="alert">(.*?)</p>', html, re.S)
    return match.group(1).strip() if match else ""


async def listed(calls: ToolCallClient, workflow_id: str, timeout: float = 20) -> PendingCall:
    """Poll visibility (eventually consistent) until it lists ``workflow_id`` as waiting."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = [call for call in await calls.pending() if call.workflow_id == workflow_id]
        if found:
            return found[0]
        assert loop.time() < deadline, f"{workflow_id} never listed"
        await asyncio.sleep(0.2)

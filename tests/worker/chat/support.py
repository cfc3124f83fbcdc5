"""Slack's side of the tests: its Web API at the transport seam, answering as Slack documents,
and interaction requests built and signed as Slack sends them."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx

from tests.worker.support import write_config
from toolcalls.worker.chat.slack import slack_signature

CHANNEL = "C0APPROVALS"
TEAM = "T0EXAMPLE"
BOT_TOKEN = "xoxb-test-bot-token"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_ENV = "TOOLCALLS_TEST_SLACK_BOT_TOKEN"
SIGNING_ENV = "TOOLCALLS_TEST_SLACK_SIGNING_SECRET"
USERS = {"alice": "U0ALICE", "bob": "U0BOB", "mallory": "U0MALLORY"}
"""Mapped Slack users; alice and bob are in ``ops``, mallory in no group."""
UNMAPPED = "U0STRANGER"


def deployment_toml(tmp_path: Path, task_queue: str) -> str:
    """calculator (ops decide) and create_file (two of ops decide), Slack in ``C0APPROVALS``."""
    root = tmp_path / "work"
    root.mkdir(exist_ok=True)
    users = "\n".join(f'{user_id} = "{name}"' for name, user_id in USERS.items())
    return f"""
task_queue = "{task_queue}"
tools = ["calculator", "create_file"]

[files]
roots = ["{root}"]
checkpoints = "{tmp_path / "checkpoints.db"}"

[approvers.groups]
ops = ["alice", "bob"]

[approvers.rules."filesystem.write"]
approvers = ["ops"]
min_approvals = 2

[approvers.rules.calculator]
approvers = ["ops"]

[notifications]
link = "https://inbox.example.com/calls/{{workflow_id}}"

[slack]
channel = "{CHANNEL}"
bot_token_env = "{BOT_ENV}"
signing_secret_env = "{SIGNING_ENV}"
team_id = "{TEAM}"

[slack.users]
{users}
"""


def write_deployment(tmp_path: Path, task_queue: str) -> Path:
    return write_config(tmp_path, deployment_toml(tmp_path, task_queue))


@dataclass
class FakeSlack:
    """Slack's Web API as ``httpx.MockTransport`` sees it: every call recorded, answered with
    the documented shapes (``{"ok": true, ...}``, or ``{"ok": false, "error": ...}``)."""

    token: str = BOT_TOKEN
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    fail: dict[str, str] = field(default_factory=dict)
    """Method -> the error code Slack answers it with."""
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        assert request.url.host == "slack.com", request.url
        method = request.url.path.removeprefix("/api/")
        body = json.loads(request.content)
        self.calls.append((method, body))
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return httpx.Response(200, json={"ok": False, "error": "invalid_auth"})
        if method in self.fail:
            return httpx.Response(200, json={"ok": False, "error": self.fail[method]})
        if method == "chat.postMessage":
            ts = f"{int(time.time())}.{next(self._ts):06d}"
            message = {"type": "message", "text": body["text"], "blocks": body["blocks"], "ts": ts}
            return httpx.Response(
                200, json={"ok": True, "channel": body["channel"], "ts": ts, "message": message}
            )
        if method == "chat.update":
            return httpx.Response(
                200,
                json={
                    "ok": True,
                    "channel": body["channel"],
                    "ts": body["ts"],
                    "text": body["text"],
                    "message": {"text": body["text"], "blocks": body["blocks"]},
                },
            )
        if method == "chat.postEphemeral":
            return httpx.Response(200, json={"ok": True, "message_ts": "1502210682.580145"})
        if method == "views.open":
            return httpx.Response(200, json={"ok": True, "view": {"id": "V0REPLY", **body["view"]}})
        return httpx.Response(200, json={"ok": False, "error": "unknown_method"})

    def sent(self, method: str) -> list[dict[str, Any]]:
        return [body for name, body in self.calls if name == method]

    async def wait_for(self, method: str, count: int = 1, timeout: float = 20) -> dict[str, Any]:
        """The ``count``-th call of ``method``, once it has come."""
        deadline = asyncio.get_running_loop().time() + timeout
        while len(self.sent(method)) < count:
            assert asyncio.get_running_loop().time() < deadline, f"no {method} #{count}"
            await asyncio.sleep(0.1)
        return self.sent(method)[count - 1]


def button_value(message: dict[str, Any], action_id: str) -> str:
    """The ``value`` of a posted message's button."""
    for block in message["blocks"]:
        for element in block.get("elements", []):
            if element.get("action_id") == action_id:
                value: str = element["value"]
                return value
    raise AssertionError(f"no {action_id} button in the message")


def labels(message: dict[str, Any]) -> list[str]:
    """The labels of a message's buttons."""
    return [
        element["text"]["text"]
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    ]


def has_buttons(message: dict[str, Any]) -> bool:
    return any(block["type"] == "actions" for block in message["blocks"])


def text_of(message: dict[str, Any]) -> str:
    """Every text of a message's blocks, joined."""
    parts = []
    for block in message["blocks"]:
        if "text" in block:
            parts.append(block["text"]["text"])
        parts += [element["text"] for element in block.get("elements", []) if "text" in element]
    return "\n".join(part if isinstance(part, str) else part["text"] for part in parts)


def click(
    posted: dict[str, Any], ts: str, action_id: str, user_id: str, *, team: str = TEAM
) -> dict[str, Any]:
    """The ``block_actions`` payload Slack sends when ``user_id`` clicks a button of ``posted``."""
    value = button_value(posted, action_id)
    return {
        "type": "block_actions",
        "user": {
            "id": user_id,
            "username": user_id.lower(),
            "name": user_id.lower(),
            "team_id": team,
        },
        "api_app_id": "A0TOOLCALLS",
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": ts,
            "channel_id": CHANNEL,
            "is_ephemeral": False,
        },
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "team": {"id": team, "domain": "example"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": CHANNEL, "name": "approvals"},
        "message": {
            "type": "message",
            "ts": ts,
            "text": posted["text"],
            "blocks": posted["blocks"],
        },
        "state": {"values": {}},
        "response_url": "https://hooks.slack.com/actions/T0EXAMPLE/1/abc",
        "actions": [
            {
                "action_id": action_id,
                "block_id": "toolcalls_decide",
                "text": {"type": "plain_text", "text": "Approve", "emoji": True},
                "value": value,
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def submission(view: dict[str, Any], user_id: str, text: str) -> dict[str, Any]:
    """The ``view_submission`` payload of the reply form ``views.open`` opened."""
    return {
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "example"},
        "user": {"id": user_id, "username": user_id.lower(), "team_id": TEAM},
        "api_app_id": "A0TOOLCALLS",
        "trigger_id": "12466734323.1395872398.8ad69e5d3b",
        "view": {
            **view,
            "id": "V0REPLY",
            "state": {"values": {"reply": {"text": {"type": "plain_text_input", "value": text}}}},
        },
    }


def form_body(payload: dict[str, Any]) -> bytes:
    return urlencode({"payload": json.dumps(payload)}).encode()


def signed_headers(
    body: bytes, *, secret: str = SIGNING_SECRET, timestamp: int | None = None
) -> dict[str, str]:
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": slack_signature(secret, stamp, body),
    }

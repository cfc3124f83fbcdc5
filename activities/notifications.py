"""Webhook notifications for calls that wait for a human: the ``toolcalls.notify`` activity.

What it can touch: the webhook URLs the deployment configures, through the guarded network path
(public addresses only, unless a webhook allows a private one by name), with no redirects
followed. It posts only for the ``ToolCallWorkflow`` run whose plan the deployment attested
(``toolcalls.activities.attestations``): a look-alike workflow cannot use the deployment's
webhooks or their secrets. The body says which call waits, for which tool and capabilities, a
short preview, who may decide, until when, and a link; it is signed with HMAC-SHA256 when the
webhook names a secret (read from the worker's environment at each post, never from history).
A failure raises a retryable error for the workflow to record; it never decides anything about
the call.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from temporalio import activity

from toolcalls.activities.attestations import (
    Attestor,
    Claim,
    Run,
    only_by_workflow,
    refused,
    utc_now,
)
from toolcalls.activities.errors import tool_error
from toolcalls.activities.network.addresses import any_address, public_only
from toolcalls.activities.network.guard import Limits, NetworkError, NetworkGuard
from toolcalls.activities.network.http_paths import check_env_name
from toolcalls.workflows.models.call import NOTIFY_ACTIVITY, ErrorCode, Notification

SIGNATURE_HEADER = "X-Toolcalls-Signature"
"""``sha256=<hex HMAC-SHA256 of the body>`` with the webhook's secret."""
TIMESTAMP_HEADER = "X-Toolcalls-Timestamp"
USER_AGENT = "toolcalls-notify/0.1"
MAX_RESPONSE_BYTES = 65_536
DEFAULT_LINK = "http://localhost:8233/namespaces/{namespace}/workflows/{workflow_id}"
"""The dev server's Temporal UI page of the call; the approval inbox's URL is the better link."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WebhookSettings(_Section):
    """One ``[[notifications.webhooks]]`` table."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,63}$")
    url: str = Field(min_length=1, max_length=2_048)
    format: Literal["json", "slack"] = "json"
    """``slack``: Slack's incoming-webhook body (``{"text": ...}``)."""
    secret_env: str | None = None
    """The environment variable holding the HMAC secret; without it the body is not signed."""
    allow_private_address: bool = False
    """Allow a private or loopback address (a receiver inside the deployment's network)."""
    timeout_seconds: float = Field(default=10, gt=0, le=60)

    @field_validator("secret_env")
    @classmethod
    def _env(cls, name: str | None) -> str | None:
        if name is not None:
            check_env_name(name)
        return name


class NotificationsSettings(_Section):
    """The ``[notifications]`` section."""

    link: str = DEFAULT_LINK
    """The link in each notification; ``{workflow_id}`` and ``{namespace}`` are filled in."""
    webhooks: list[WebhookSettings] = Field(default_factory=list)

    @field_validator("webhooks")
    @classmethod
    def _unique(cls, webhooks: list[WebhookSettings]) -> list[WebhookSettings]:
        names = [webhook.name for webhook in webhooks]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"webhook names must be unique: {', '.join(twice)}")
        return webhooks


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value: HMAC-SHA256 over ``timestamp`` ``.`` ``body``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return f"sha256={digest.hexdigest()}"


def body_of(notification: Notification, link: str, fmt: str) -> dict[str, Any]:
    """The JSON a webhook receives."""
    who = ", ".join(notification.approvers) if notification.approvers else "anyone"
    until = notification.expires_at.isoformat() if notification.expires_at else "no expiry"
    if fmt == "slack":
        headline = {
            "waiting": "A tool call waits for approval",
            "reminder": "Reminder: a tool call still waits for approval",
            "escalated": "Escalated: a tool call waits for approval",
        }.get(notification.kind, notification.kind)
        caps = ", ".join(notification.capabilities) or "none"
        return {
            "text": (
                f"{headline}: {notification.tool} ({caps}). Who may decide: {who}; until {until}. "
                f"<{link}|Open the call>\n```{notification.summary}```"
            )
        }
    return {
        "event": notification.kind,
        "workflow_id": notification.workflow_id,
        "call_id": notification.call_id,
        "tool": notification.tool,
        "capabilities": notification.capabilities,
        "preview": notification.summary,
        "approvers": notification.approvers,
        "requested_at": notification.requested_at.isoformat(),
        "expires_at": notification.expires_at.isoformat() if notification.expires_at else None,
        "link": link,
    }


class Notifier:
    """The ``toolcalls.notify`` activity over the deployment's webhooks."""

    def __init__(
        self,
        settings: NotificationsSettings,
        *,
        namespace: str = "default",
        environ: Mapping[str, str] | None = None,
        guard: NetworkGuard | None = None,
        attestor: Attestor | None = None,
    ) -> None:
        """``attestor``: the deployment's attestation keys (without one, keys of its own: only
        notifications of this process's own ``ToolCallWorkflow`` runs are posted)."""
        self.settings = settings
        self.attestor = attestor or Attestor.ephemeral()
        self.namespace = namespace
        self.environ = os.environ if environ is None else environ
        self._webhooks = {webhook.name: webhook for webhook in settings.webhooks}
        self._guard = guard

    def activities(self) -> list[Any]:
        @activity.defn(name=NOTIFY_ACTIVITY)
        async def notify(notification: Notification) -> None:
            problem = self._unattested(activity.info(), notification)
            if problem is not None:
                raise refused(f"notify: {problem}")
            await self.post(notification)

        return [notify]

    def _unattested(self, info: activity.Info, notification: Notification) -> str | None:
        """Why ``notification`` is not one the deployment's ``ToolCallWorkflow`` sends for the
        run ``info`` names; ``None``: it is."""
        attestation = notification.attestation
        claim = Claim(notification.call_id, notification.digest, notification.visible_tools)
        problem = self.attestor.problem(Run.of(info), attestation, claim, utc_now())
        if problem is not None:
            return f"the deployment did not plan this call: {problem}"
        assert attestation is not None
        if not only_by_workflow(attestation.decision):
            return f"a call attested {attestation.decision.value} does not notify"
        if notification.workflow_id != info.workflow_id:
            return "the notification names another workflow than the one that sends it"
        return None

    async def post(self, notification: Notification) -> None:
        webhook = self._webhooks.get(notification.webhook)
        if webhook is None:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR,
                f"notify: no webhook {notification.webhook!r} on this worker",
            )
        link = self.settings.link.format(
            workflow_id=notification.workflow_id, namespace=self.namespace
        )
        body = json.dumps(body_of(notification, link, webhook.format)).encode()
        headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
        if webhook.secret_env is not None:
            secret = self.environ.get(webhook.secret_env)
            if not secret:
                raise tool_error(
                    ErrorCode.CONFIGURATION_ERROR,
                    f"notify: {webhook.name}: ${webhook.secret_env} is not set",
                )
            timestamp = notification.requested_at.isoformat()
            headers[TIMESTAMP_HEADER] = timestamp
            headers[SIGNATURE_HEADER] = signature(secret, timestamp, body)
        guard = self._guard or NetworkGuard(
            admit=any_address if webhook.allow_private_address else public_only,
            allowed_ports=None,
        )
        limits = Limits(
            timeout_seconds=webhook.timeout_seconds,
            max_bytes=MAX_RESPONSE_BYTES,
            max_decoded_bytes=MAX_RESPONSE_BYTES,
        )
        try:
            response = await guard.request(
                "POST",
                webhook.url,
                limits=limits,
                headers=headers,
                content=body,
                secret_headers=(SIGNATURE_HEADER,),
            )
        except NetworkError as error:
            raise tool_error(
                ErrorCode.NETWORK_UNAVAILABLE,
                f"notify: {webhook.name}: {error.reason}",
                retryable=True,
            ) from None
        if not 200 <= response.status_code < 300:
            raise tool_error(
                ErrorCode.EXECUTION_FAILED,
                f"notify: {webhook.name}: the receiver answered {response.status_code}",
                retryable=True,
            )

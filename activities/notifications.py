"""Webhook notifications for calls that wait for a human: the ``toolcalls.notify`` activity.

What it can touch: the webhook URLs the deployment configures, through the guarded network path
(public addresses only, unless a webhook allows a private one by name), with no redirects
followed. It posts only for the ``ToolCallWorkflow`` run whose plan the deployment attested
(``toolcalls.activities.attestations``): a look-alike workflow cannot use the deployment's
webhooks or their secrets. The body says which call waits, for which tool and capabilities, a
short preview, who may decide, until when, and a link. Each post carries the time it is sent and
a delivery id that one notification keeps across its retries, so a receiver can refuse stale
posts and drop duplicates; with a secret (read from the worker's environment at each post, never
from history) both are signed with the body by HMAC-SHA256. A failure raises an error for the
workflow to record (retryable unless the URL is refused); it never decides anything about the
call.

A chat channel (``toolcalls.worker.chat``: Slack) is notified the same way, by its name among the
plan's targets: the worker hands the notifier the channels it configured, and the activity passes
the notification, once attested, to the channel, which posts it with its own client.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

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
from toolcalls.activities.network.guard import (
    Limits,
    NetworkError,
    NetworkGuard,
    NoSuchHost,
    URLRefused,
)
from toolcalls.activities.network.http_paths import check_env_name
from toolcalls.workflows.models.call import NOTIFY_ACTIVITY, ErrorCode, Notification

SIGNATURE_HEADER = "X-Toolcalls-Signature"
"""``sha256=<hex>``: HMAC-SHA256 with the webhook's secret of ``signed_string(...)``."""
TIMESTAMP_HEADER = "X-Toolcalls-Timestamp"
"""When this post was sent: Unix seconds, as decimal digits (each retry sends its own)."""
DELIVERY_HEADER = "X-Toolcalls-Delivery"
"""The notification's delivery id: the same on every retry of it, different for every other."""
SIGNATURE_VERSION = "v1"
"""The first field of the signed string, so that a later scheme cannot be mistaken for this one."""
USER_AGENT = "toolcalls-notify/0.1"
FINISHED = "finished"
"""The kind of the notification a request's ``notify`` webhook gets when the call ends."""
MAX_RESPONSE_BYTES = 65_536
DEFAULT_LINK = "http://localhost:8233/namespaces/{namespace}/workflows/{workflow_id}"
"""The dev server's Temporal UI page of the call; the approval inbox's URL is the better link."""


class ChatChannel(Protocol):
    """A chat the ``toolcalls.notify`` activity posts a waiting call to, beside the webhooks."""

    async def post(self, notification: Notification, link: str) -> None:
        """Post ``notification`` (``link``: the call's page); raise ``tool_error`` on failure."""
        ...


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


def signed_string(timestamp: str, delivery_id: str, body: bytes) -> bytes:
    """What the signature covers: ``v1:{timestamp}:{delivery_id}:{body}``, the body as sent.

    Neither the timestamp (digits) nor the delivery id (hex digits) can hold a ``:``, so the
    string splits back into its parts one way only.
    """
    return f"{SIGNATURE_VERSION}:{timestamp}:{delivery_id}:".encode() + body


def signature(secret: str, timestamp: str, delivery_id: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the hex HMAC-SHA256 of the signed string."""
    signed = signed_string(timestamp, delivery_id, body)
    return f"sha256={hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()}"


def delivery_id_of(info: activity.Info) -> str:
    """A notification's delivery id: 32 hex digits derived from its workflow run and activity.

    Every notification is an activity of its own, so the pair is unique to it, and Temporal keeps
    it across the activity's retries: a receiver sees the same id on each attempt of one post.
    """
    identity = f"{info.workflow_run_id}\n{info.activity_id}".encode()
    return hashlib.sha256(identity).hexdigest()[:32]


def body_of(
    notification: Notification, link: str, fmt: str, *, delivery_id: str, sent_at: datetime
) -> dict[str, Any]:
    """The JSON a webhook receives (Slack's format has no room for the delivery id and time)."""
    who = ", ".join(notification.approvers) if notification.approvers else "anyone"
    until = notification.expires_at.isoformat() if notification.expires_at else "no expiry"
    if notification.kind == FINISHED:
        return _finished_body(notification, link, fmt, delivery_id=delivery_id, sent_at=sent_at)
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
        "delivery_id": delivery_id,
        "sent_at": sent_at.isoformat(),
    }


def _finished_body(
    notification: Notification, link: str, fmt: str, *, delivery_id: str, sent_at: datetime
) -> dict[str, Any]:
    """A ``finished`` notification: how the call ended, for a caller that did not wait."""
    if fmt == "slack":
        ended = f"{notification.tool} ended {notification.status}"
        why = f": {notification.error}" if notification.error else ""
        return {"text": f"A tool call ended: {ended}{why}. <{link}|Open the call>"}
    return {
        "event": FINISHED,
        "workflow_id": notification.workflow_id,
        "call_id": notification.call_id,
        "tool": notification.tool,
        "capabilities": notification.capabilities,
        "status": notification.status,
        "error": notification.error,
        "started_at": notification.requested_at.isoformat(),
        "link": link,
        "delivery_id": delivery_id,
        "sent_at": sent_at.isoformat(),
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
        channels: Mapping[str, ChatChannel] | None = None,
    ) -> None:
        """``attestor``: the deployment's attestation keys (without one, keys of its own: only
        notifications of this process's own ``ToolCallWorkflow`` runs are posted); ``channels``:
        the chats notified by name beside the webhooks."""
        self.settings = settings
        self.attestor = attestor or Attestor.ephemeral()
        self.namespace = namespace
        self.environ = os.environ if environ is None else environ
        self._webhooks = {webhook.name: webhook for webhook in settings.webhooks}
        self._guard = guard
        self._channels = dict(channels or {})

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

    def webhook(self, target: str) -> WebhookSettings | None:
        """The deployment's webhook ``target`` names: by its name, or by its exact URL (what a
        caller's ``notify`` may give)."""
        found = self._webhooks.get(target)
        if found is None:
            found = next((w for w in self._webhooks.values() if w.url == target), None)
        return found

    async def post(self, notification: Notification) -> None:
        link = self.settings.link.format(
            workflow_id=notification.workflow_id, namespace=self.namespace
        )
        channel = self._channels.get(notification.webhook)
        if channel is not None and notification.kind != FINISHED:
            await channel.post(notification, link)
            return
        webhook = self.webhook(notification.webhook)
        if webhook is None:
            raise tool_error(
                ErrorCode.CONFIGURATION_ERROR,
                f"notify: no webhook {notification.webhook!r} on this worker",
            )
        delivery_id = delivery_id_of(activity.info())
        # This attempt's own time, whole seconds: what a receiver's replay window is measured on.
        sent = int(time.time())
        sent_at = datetime.fromtimestamp(sent, UTC)
        content = body_of(
            notification, link, webhook.format, delivery_id=delivery_id, sent_at=sent_at
        )
        body = json.dumps(content).encode()
        timestamp = str(sent)
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            TIMESTAMP_HEADER: timestamp,
            DELIVERY_HEADER: delivery_id,
        }
        if webhook.secret_env is not None:
            secret = self.environ.get(webhook.secret_env)
            if not secret:
                raise tool_error(
                    ErrorCode.CONFIGURATION_ERROR,
                    f"notify: {webhook.name}: ${webhook.secret_env} is not set",
                )
            headers[SIGNATURE_HEADER] = signature(secret, timestamp, delivery_id, body)
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
            # The deployment wrote the URL (or left out allow_private_address): no retry helps.
            # A name that does not resolve may resolve on a later attempt.
            if isinstance(error, URLRefused) and not isinstance(error, NoSuchHost):
                raise tool_error(
                    ErrorCode.CONFIGURATION_ERROR,
                    f"notify: {webhook.name}: refused by the network guard: {error.reason}",
                ) from None
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

"""``toolcalls call --notify WEBHOOK``: the webhook told when the call ends, checked against the
configuration before anything starts (the worker checks it again when it posts)."""

from __future__ import annotations

from toolcalls.worker.config import Config
from toolcalls.worker.exits import EXIT_USAGE, CommandError


def check_notify(config: Config, target: str | None, source: str | None) -> None:
    """Refuse a ``--notify`` that names no webhook of the configuration ``source``."""
    if target is None or source is None:
        return
    webhooks = config.notifications.webhooks
    if any(target in (webhook.name, webhook.url) for webhook in webhooks):
        return
    names = ", ".join(webhook.name for webhook in webhooks) or "none"
    raise CommandError(
        EXIT_USAGE,
        f"call: --notify: {target!r} is no webhook of {source} "
        f"([[notifications.webhooks]]: {names})",
    )

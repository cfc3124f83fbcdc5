"""A backend of the deployment's own, loaded by import path: an in-memory mailbox."""

from __future__ import annotations

from typing import Any

SENT: list[dict[str, Any]] = []
"""Every message any ``MemoryMail`` sent, in order."""


class MemoryMail:
    """The ``EmailBackend`` protocol over a list; ``message_id`` taken on sends, not drafts."""

    query_help = "Search matches words of the subject (a memory mailbox)."

    def __init__(self, owner: str, greeting: str = "hello") -> None:
        self.owner = owner
        self.messages = [
            {"id": "m2", "subject": f"{greeting} again", "from": "b@example.com"},
            {"id": "m1", "subject": greeting, "from": "a@example.com"},
        ]

    async def list_messages(
        self, *, query: str, max_results: int, page_token: str | None
    ) -> dict[str, Any]:
        found = [m for m in self.messages if not query or query in m["subject"]]
        return {"items": found[:max_results], "next_page_token": None}

    async def get_message(self, *, message_id: str) -> dict[str, Any]:
        found = next(m for m in self.messages if m["id"] == message_id)
        return {
            "id": message_id,
            "headers": {"from": found["from"], "subject": found["subject"], "x-extra": "dropped"},
            "snippet": found["subject"],
            "body": "b" * 30_000,
            "body_truncated": False,
            "has_attachments": False,
            "html_body_omitted": False,
        }

    async def create_draft(self, *, to: list[str], subject: str, body: str) -> dict[str, Any]:
        return {"status": "drafted", "folder": f"{self.owner}/drafts"}

    async def send_message(
        self, *, to: list[str], subject: str, body: str, message_id: str
    ) -> dict[str, Any]:
        SENT.append({"to": to, "subject": subject, "message_id": message_id})
        return {"status": "accepted", "queue_id": "q-1"}

    async def find_message(self, *, message_id: str, folder: str) -> dict[str, Any] | None:
        if self.owner == "failing":
            raise RuntimeError(f"lookup refused: {PRIVATE_TEXT}")
        found = [m for m in SENT if m["message_id"] == message_id]
        return {"queue_id": "q-1", "folder": folder} if found else None


PRIVATE_TEXT = "mailbox 7731 of alice@example.com"
"""What the failing lookup says, which no answer may repeat."""


def broken_factory() -> object:
    return object()

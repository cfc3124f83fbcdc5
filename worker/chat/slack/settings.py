"""The ``[slack]`` section: the Slack app that posts approval requests and takes their buttons.

Secrets never sit in the file: the bot token and the signing secret are read from the variables
the section names (the bot token by the worker at each post, both by the inbox's process). People
are mapped by their Slack user id, which Slack never reuses or lets a user change, to the approver
names the ``[approvers]`` rules and the inbox use.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolcalls.activities.network.http_paths import check_env_name
from toolcalls.workflows.rules.identities import canonical_name

TARGET = "slack"
"""The name the plan's notification targets give the Slack channel, beside the webhooks'."""
DEFAULT_TIMEOUT_SECONDS = 10.0
MAX_USERS = 10_000

_USER_ID = re.compile(r"[UW][A-Z0-9]{2,31}")
_CHANNEL_ID = re.compile(r"[CG][A-Z0-9]{2,31}")
_TEAM_ID = re.compile(r"[TE][A-Z0-9]{2,31}")


class SlackSection(BaseModel):
    """``[slack]``: the bot, the channel its requests go to, and who each Slack user is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channel: str
    """The channel's id (``C0123ABCD``; channel details in Slack show it): the bot posts there."""
    bot_token_env: str
    """The variable holding the bot token (``xoxb-...``)."""
    signing_secret_env: str
    """The variable holding the app's signing secret (the inbox's process checks requests with
    it)."""
    users: dict[str, str] = Field(default_factory=dict, max_length=MAX_USERS)
    """Slack user id -> approver name (as ``[approvers]`` and ``[[inbox.users]]`` write it)."""
    team_id: str | None = None
    """Take interactions only from this workspace (``T0123ABCD``)."""
    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0, le=60)
    """Bounds each Web API call."""

    @field_validator("channel")
    @classmethod
    def _channel(cls, channel: str) -> str:
        if not _CHANNEL_ID.fullmatch(channel):
            raise ValueError(f"{channel!r} is not a channel id (C0123ABCD), as chat.update needs")
        return channel

    @field_validator("bot_token_env", "signing_secret_env")
    @classmethod
    def _env(cls, name: str) -> str:
        return check_env_name(name)

    @field_validator("users")
    @classmethod
    def _users(cls, users: dict[str, str]) -> dict[str, str]:
        for user_id, name in users.items():
            if not _USER_ID.fullmatch(user_id):
                raise ValueError(f"{user_id!r} is not a Slack user id (U0123ABCD)")
            canonical_name(name, f"users.{user_id}")
        return users

    @field_validator("team_id")
    @classmethod
    def _team(cls, team_id: str | None) -> str | None:
        if team_id is not None and not _TEAM_ID.fullmatch(team_id):
            raise ValueError(f"{team_id!r} is not a workspace id (T0123ABCD)")
        return team_id

    def approver(self, user_id: str) -> str | None:
        """The approver name of a Slack user, or ``None`` when the section does not map them."""
        return self.users.get(user_id)

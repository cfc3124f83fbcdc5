"""Every capability the spec names, and the ceiling a deployment gets when it configures none."""

from __future__ import annotations

from collections.abc import Mapping

from toolcalls.workflows.models.call import CapabilityPolicy, Effect, SideEffect

CAPABILITIES: Mapping[str, SideEffect] = {
    "network.read": SideEffect.READ,
    "network.write": SideEffect.WRITE,
    "process.execute": SideEffect.WRITE,
    "process.sandboxed": SideEffect.WRITE,
    "shell.execute": SideEffect.WRITE,
    "git.read": SideEffect.READ,
    "git.write": SideEffect.WRITE,
    "user.interact": SideEffect.READ,
    "filesystem.read": SideEffect.READ,
    "filesystem.write": SideEffect.WRITE,
    "filesystem.restore": SideEffect.WRITE,
    "storage.read": SideEffect.READ,
    "storage.write": SideEffect.WRITE,
    "database.read": SideEffect.READ,
    "calendar.read": SideEffect.READ,
    "calendar.write": SideEffect.WRITE,
    "email.read": SideEffect.READ,
    "email.write": SideEffect.WRITE,
    "email.send": SideEffect.WRITE,
}
"""Every capability the spec names, and whether granting it lets a call change the world."""


def default_ceiling() -> CapabilityPolicy:
    """The ceiling when a deployment configures none: approval for every write capability."""
    return CapabilityPolicy(
        rules={
            cap: Effect.REQUIRE_APPROVAL
            for cap, kind in CAPABILITIES.items()
            if kind is SideEffect.WRITE
        },
        default_effect=Effect.ALLOW,
    )

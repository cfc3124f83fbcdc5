"""The call commands' argument parsing, without a server: policies and approval timeouts."""

from __future__ import annotations

import argparse
from datetime import timedelta

import pytest

from toolcalls.worker.arguments import approval_timeout, requiring_approval
from toolcalls.workflows.models.call import CapabilityPolicy, Effect
from toolcalls.workflows.rules import policy


def test_require_approval_alone_covers_capabilities_and_the_tool() -> None:
    made = requiring_approval("calculator", None)
    assert made == CapabilityPolicy(
        default_effect=Effect.REQUIRE_APPROVAL, tools={"calculator": Effect.REQUIRE_APPROVAL}
    )
    # A tool without capabilities is reached through its tools entry.
    assert policy.decide([], made, "calculator", []).effect is Effect.REQUIRE_APPROVAL
    decided = policy.decide([], made, "probe_echo", ["network.read"])
    assert decided.effect is Effect.REQUIRE_APPROVAL


def test_require_approval_with_a_policy_keeps_the_stricter_effect() -> None:
    given = CapabilityPolicy(
        rules={"network.read": Effect.ALLOW, "network.write": Effect.DENY},
        tools={"calculator": Effect.DENY, "other": Effect.ALLOW},
        default_effect=Effect.ALLOW,
    )
    made = requiring_approval("calculator", given)
    assert made.rules == {"network.read": Effect.REQUIRE_APPROVAL, "network.write": Effect.DENY}
    assert made.tools == {"calculator": Effect.DENY, "other": Effect.ALLOW}
    assert made.default_effect is Effect.REQUIRE_APPROVAL
    assert policy.decide([], made, "calculator", []).effect is Effect.DENY
    assert requiring_approval("x", given).tools["x"] is Effect.REQUIRE_APPROVAL


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30", timedelta(seconds=30)),
        ("0.5", timedelta(seconds=0.5)),
        ("none", None),
        ("None", None),
    ],
)
def test_approval_timeout_accepts_seconds_or_none(text: str, expected: timedelta | None) -> None:
    assert approval_timeout(text) == expected


@pytest.mark.parametrize("text", ["0", "-1", "soon", "nan", "inf", ""])
def test_approval_timeout_refuses_the_rest(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a positive number of seconds"):
        approval_timeout(text)

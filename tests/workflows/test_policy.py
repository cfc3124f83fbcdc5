"""The pure capability policy: rule precedence, combining ceiling and request, reasons."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from toolcalls.workflows.models.call import CapabilityPolicy, Effect, Verdict
from toolcalls.workflows.rules import policy

ALLOW, APPROVE, DENY = Effect.ALLOW, Effect.REQUIRE_APPROVAL, Effect.DENY
RANK = {ALLOW: 0, APPROVE: 1, DENY: 2}


def ceiling(policy_: CapabilityPolicy, tool: str, capabilities: list[str]) -> list[Verdict]:
    return policy.evaluate(policy_, tool, capabilities, policy.DEPLOYMENT)


@pytest.mark.parametrize(
    ("ceiling_effect", "request_effect", "expected"),
    [
        (ALLOW, None, ALLOW),
        (APPROVE, None, APPROVE),
        (DENY, None, DENY),
        (ALLOW, ALLOW, ALLOW),
        (ALLOW, APPROVE, APPROVE),
        (ALLOW, DENY, DENY),
        (APPROVE, ALLOW, APPROVE),
        (APPROVE, APPROVE, APPROVE),
        (APPROVE, DENY, DENY),
        (DENY, ALLOW, DENY),
        (DENY, APPROVE, DENY),
        (DENY, DENY, DENY),
    ],
)
def test_strictest_of_ceiling_and_request_wins(
    ceiling_effect: Effect, request_effect: Effect | None, expected: Effect
) -> None:
    caps = ["network.write"]
    verdicts = ceiling(CapabilityPolicy(rules={"network.write": ceiling_effect}), "t", caps)
    request = (
        None
        if request_effect is None
        else CapabilityPolicy(rules={"network.write": request_effect})
    )
    decision = policy.decide(verdicts, request, "t", caps)
    assert decision.effect is expected
    # Loosening is impossible: the result is never below the ceiling alone.
    assert RANK[decision.effect] >= RANK[ceiling_effect]
    if request_effect is not None:
        assert RANK[decision.effect] >= RANK[request_effect]


@pytest.mark.parametrize(
    ("effects", "expected"),
    [
        ([], ALLOW),
        ([ALLOW, ALLOW], ALLOW),
        ([ALLOW, APPROVE, ALLOW], APPROVE),
        ([APPROVE, DENY, ALLOW], DENY),
        ([DENY, APPROVE], DENY),
    ],
)
def test_strictest(effects: list[Effect], expected: Effect) -> None:
    assert policy.strictest(effects) is expected


def test_request_allow_does_not_lift_a_ceiling_deny_on_another_capability() -> None:
    caps = ["git.read", "git.write"]
    verdicts = ceiling(CapabilityPolicy(rules={"git.write": DENY}), "git", caps)
    decision = policy.decide(
        verdicts, CapabilityPolicy(rules={"git.*": ALLOW}, default_effect=ALLOW), "git", caps
    )
    assert decision.effect is DENY
    assert [(v.subject, v.source) for v in decision.deciding] == [("git.write", "deployment")]


def test_call_effect_is_strictest_over_its_capabilities() -> None:
    caps = ["filesystem.read", "filesystem.write", "network.read"]
    rules = {"filesystem.write": APPROVE, "network.read": ALLOW}
    decision = policy.decide(ceiling(CapabilityPolicy(rules=rules), "t", caps), None, "t", caps)
    assert decision.effect is APPROVE
    assert [v.subject for v in decision.deciding] == ["filesystem.write"]


@pytest.mark.parametrize(
    ("rules", "capability", "expected"),
    [
        ({"fs.write": ALLOW, "fs.*": DENY}, "fs.write", (ALLOW, "fs.write")),
        ({"fs.*": DENY, "fs.write": ALLOW}, "fs.write", (ALLOW, "fs.write")),
        ({"fs.*": DENY, "fs.write": ALLOW}, "fs.read", (DENY, "fs.*")),
        ({"fs.*": DENY, "fs.write.*": ALLOW}, "fs.write", (DENY, "fs.*")),
        ({"a.*": DENY, "a.b.*": ALLOW}, "a.b.c", (ALLOW, "a.b.*")),
        ({"a.b.*": ALLOW, "a.*": DENY}, "a.b.c", (ALLOW, "a.b.*")),
        ({"a.b.*": ALLOW, "a.*": DENY}, "a.x", (DENY, "a.*")),
        ({"git.*": DENY}, "github.read", (APPROVE, "default")),
        ({"git.*": DENY}, "git", (APPROVE, "default")),
        ({"email.send": DENY}, "email.read", (APPROVE, "default")),
        ({}, "anything.at.all", (APPROVE, "default")),
    ],
)  # fmt: skip
def test_exact_beats_longest_prefix_beats_default(
    rules: dict[str, Effect], capability: str, expected: tuple[Effect, str]
) -> None:
    assert policy.match(CapabilityPolicy(rules=rules, default_effect=APPROVE), capability) == (
        expected
    )


def test_evaluate_gives_one_verdict_per_capability_then_the_tool_entry() -> None:
    p = CapabilityPolicy(
        rules={"git.*": APPROVE},
        tools={"git": DENY, "other": ALLOW},
        default_effect=ALLOW,
    )
    assert policy.evaluate(p, "git", ["git.read", "network.read"], policy.REQUEST) == [
        Verdict(subject="git.read", effect=APPROVE, rule="git.*", source="request"),
        Verdict(subject="network.read", effect=ALLOW, rule="default", source="request"),
        Verdict(subject="tool:git", effect=DENY, rule="tool:git", source="request"),
    ]


def test_tools_entry_adds_an_effect_to_a_capability_bearing_tool() -> None:
    caps = ["network.read"]
    p = CapabilityPolicy(rules={"network.read": ALLOW}, tools={"probe_echo": APPROVE})
    decision = policy.decide(ceiling(p, "probe_echo", caps), None, "probe_echo", caps)
    assert decision.effect is APPROVE
    assert decision.reasons() == [
        "tool:probe_echo: require_approval (deployment rule tool:probe_echo)"
    ]
    # An entry for another tool changes nothing.
    other = policy.decide(ceiling(p, "probe_sleep", caps), None, "probe_sleep", caps)
    assert other.effect is ALLOW


def test_tool_without_capabilities_ignores_default_effect() -> None:
    strict = CapabilityPolicy(default_effect=DENY)
    assert policy.evaluate(strict, "calculator", [], policy.DEPLOYMENT) == []
    decision = policy.decide(ceiling(strict, "calculator", []), strict, "calculator", [])
    assert decision.effect is ALLOW
    assert decision.deciding == ()


@pytest.mark.parametrize("source", ["ceiling", "request"])
def test_tool_without_capabilities_is_governed_by_tools_entries(source: str) -> None:
    entry = CapabilityPolicy(tools={"calculator": DENY}, default_effect=ALLOW)
    verdicts = ceiling(entry, "calculator", []) if source == "ceiling" else []
    request = entry if source == "request" else None
    decision = policy.decide(verdicts, request, "calculator", [])
    assert decision.effect is DENY
    want = "deployment" if source == "ceiling" else "request"
    assert decision.reasons() == [f"tool:calculator: deny ({want} rule tool:calculator)"]


def test_reasons_name_subject_effect_source_and_rule() -> None:
    caps = ["git.read", "git.write"]
    verdicts = ceiling(
        CapabilityPolicy(default_effect=APPROVE, rules={"git.read": ALLOW}), "git", caps
    )
    request = CapabilityPolicy(rules={"git.*": APPROVE})
    decision = policy.decide(verdicts, request, "git", caps)
    assert decision.effect is APPROVE
    assert decision.reasons() == [
        "git.write: require_approval (deployment rule default)",
        "git.read: require_approval (request rule git.*)",
        "git.write: require_approval (request rule git.*)",
    ]


def test_allowed_call_has_no_reasons() -> None:
    caps = ["network.read"]
    decision = policy.decide(ceiling(CapabilityPolicy(), "t", caps), CapabilityPolicy(), "t", caps)
    assert decision.effect is ALLOW
    assert decision.deciding == ()
    assert decision.reasons() == []


def test_only_the_strictest_verdicts_decide() -> None:
    caps = ["a.x", "a.y", "a.z"]
    rules = {"a.x": DENY, "a.y": APPROVE, "a.z": DENY}
    decision = policy.decide(ceiling(CapabilityPolicy(rules=rules), "t", caps), None, "t", caps)
    assert decision.effect is DENY
    assert decision.reasons() == [
        "a.x: deny (deployment rule a.x)",
        "a.z: deny (deployment rule a.z)",
    ]


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("filesystem.write", True),
        ("filesystem.*", True),
        ("email.send", True),
        ("web_search.read", True),
        ("filesystem.write.*", True),
        ("network", True),
        ("", False),
        ("*", False),
        (".*", False),
        ("filesystem.", False),
        (".write", False),
        ("filesystem..write", False),
        ("filesystem.*.*", False),
        ("*.write", False),
        ("filesystem.wr*te", False),
        ("file-system.write", False),
        ("filesystem.write ", False),
        ("Filesystem.Write", False),
        ("filesystém.write", False),
        ("filesystem.²", False),
    ],
)
def test_is_valid_rule(key: str, valid: bool) -> None:
    assert policy.is_valid_rule(key) is valid


FAMILIES = ("a", "b", "git")
CAPABILITIES = st.builds("{}.{}".format, st.sampled_from(FAMILIES), st.sampled_from(("x", "y")))
RULE_KEYS = st.one_of(CAPABILITIES, st.sampled_from([f"{f}.*" for f in FAMILIES]))
EFFECTS = st.sampled_from(list(Effect))
TOOLS = st.sampled_from(("t1", "t2"))
POLICIES = st.builds(
    CapabilityPolicy,
    rules=st.dictionaries(RULE_KEYS, EFFECTS, max_size=6),
    tools=st.dictionaries(TOOLS, EFFECTS, max_size=2),
    default_effect=EFFECTS,
)


@given(
    deployment=POLICIES,
    request=POLICIES,
    tool=TOOLS,
    capabilities=st.lists(CAPABILITIES, max_size=4, unique=True),
)
def test_a_request_never_loosens_the_ceiling(
    deployment: CapabilityPolicy, request: CapabilityPolicy, tool: str, capabilities: list[str]
) -> None:
    verdicts = ceiling(deployment, tool, capabilities)
    alone = policy.decide(verdicts, None, tool, capabilities)
    combined = policy.decide(verdicts, request, tool, capabilities)
    assert RANK[combined.effect] >= RANK[alone.effect]
    # It is exactly the strictest of the two policies' own decisions.
    request_only = policy.decide([], request, tool, capabilities)
    assert combined.effect is policy.strictest([alone.effect, request_only.effect])
    assert all(v.effect is combined.effect for v in combined.deciding)
    assert bool(combined.deciding) == (combined.effect is not ALLOW)

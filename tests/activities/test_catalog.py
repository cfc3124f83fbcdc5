"""The catalog: validation at build time, activity options, planning, ceiling, definitions."""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
import rfc8785
from pydantic import BaseModel, Field

from tests.support.tools import ALL_TOOLS, EchoArgs
from toolcalls.activities.base import CallContext, ToolArgs, ToolResult
from toolcalls.activities.capabilities import CAPABILITIES, default_ceiling
from toolcalls.activities.catalog import (
    DEFAULT_TOOLS,
    Catalog,
    CatalogError,
    CatalogSettings,
    call_digest,
)
from toolcalls.activities.families import BUILTIN_TOOLS
from toolcalls.activities.limits import MAX_ARGUMENTS_BYTES
from toolcalls.activities.schema import strict_schema
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.workflows.models.call import (
    CallPlan,
    CapabilityPolicy,
    Effect,
    ErrorCode,
    PlanInput,
    SideEffect,
    ToolError,
    Verdict,
)
from toolcalls.workflows.rules import policy

SPECS = {spec.name: spec for spec in ALL_TOOLS}
ECHO = SPECS["probe_echo"]
WRITE_CAPABILITIES = {
    "process.execute",
    "process.sandboxed",
    "shell.execute",
    "git.write",
    "filesystem.write",
    "filesystem.restore",
    "storage.write",
    "network.write",
    "calendar.write",
    "email.write",
    "email.send",
}


def catalog(specs: Sequence[ToolSpec] = ALL_TOOLS, **settings: Any) -> Catalog:
    settings.setdefault("enabled", [spec.name for spec in specs])
    return Catalog(specs, CatalogSettings(**settings))


def echo(**changes: Any) -> ToolSpec:
    return dataclasses.replace(ECHO, **changes)


def seconds(start_to_close: float, heartbeat: float | None = None) -> Timeouts:
    beat = timedelta(seconds=heartbeat) if heartbeat is not None else None
    return Timeouts(start_to_close=timedelta(seconds=start_to_close), heartbeat=beat)


def plan(
    cat: Catalog,
    tool: str,
    arguments: dict[str, Any],
    *,
    ceiling: CapabilityPolicy | None = None,
    local: frozenset[str] = frozenset(),
    task_queue: str | None = None,
) -> CallPlan:
    outcome = cat.plan(
        PlanInput(tool=tool, arguments=arguments, task_queue=task_queue),
        ceiling or default_ceiling(),
        local,
    )
    assert outcome.error is None
    assert outcome.plan is not None
    return outcome.plan


def plan_error(cat: Catalog, tool: str, arguments: dict[str, Any]) -> ToolError:
    outcome = cat.plan(PlanInput(tool=tool, arguments=arguments), default_ceiling(), frozenset())
    assert outcome.plan is None
    assert outcome.error is not None
    return outcome.error


class Counter(ToolArgs):
    n: int


class Inner(BaseModel):
    a: int
    b: int = 1


class Nested(ToolArgs):
    inner: list[Inner]


class CountTools:
    async def probe_count(self, args: Counter, call: CallContext) -> ToolResult:
        return ToolResult()

    async def probe_nested(self, args: Nested, call: CallContext) -> ToolResult:
        return ToolResult()


def count_spec(name: str = "probe_count", arguments: type[ToolArgs] = Counter) -> ToolSpec:
    return ToolSpec(
        name=name,
        description="count",
        arguments=arguments,
        result=ToolResult,
        side_effect=SideEffect.READ,
        capabilities=("network.read",),
        timeouts=seconds(5),
        implementation=CountTools,
    )


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ((ECHO, ECHO), "tool 'probe_echo' is declared twice"),
        ((echo(name="Probe"),), "tool name 'Probe' must match"),
        ((echo(name="9probe"),), "tool name '9probe' must match"),
        ((echo(name="p" * 65),), f"tool name '{'p' * 65}' must match"),
        ((echo(description="  "),), "probe_echo: description is empty"),
        ((echo(capabilities=("network.reed",)),), "probe_echo: unknown capabilities network.reed"),
        ((echo(name="probe_missing"),), "probe_missing: ProbeTools has no method 'probe_missing'"),
        ((echo(implementation=None),), "probe_echo: an activity-backed tool needs both"),
        ((echo(timeouts=None),), "probe_echo: an activity-backed tool needs both"),
        ((echo(timeouts=seconds(0)),), "probe_echo: start_to_close must be positive"),
        ((echo(timeouts=seconds(-1)),), "probe_echo: start_to_close must be positive"),
        ((echo(timeouts=seconds(5, 5)),), "probe_echo: heartbeat must be positive and shorter"),
        ((echo(timeouts=seconds(5, 6)),), "probe_echo: heartbeat must be positive and shorter"),
        ((echo(timeouts=seconds(5, 0)),), "probe_echo: heartbeat must be positive and shorter"),
        ((echo(timeouts=seconds(10.5)),), "probe_echo: start_to_close over 10s needs a heartbeat"),
        (
            (count_spec("probe_nested", Nested),),
            "probe_nested: nested argument model Inner has defaults (b) and must subclass ToolArgs",
        ),
    ],
)
def test_invalid_specs_are_refused(specs: tuple[ToolSpec, ...], message: str) -> None:
    with pytest.raises(CatalogError) as caught:
        catalog(specs)
    assert message in str(caught.value)


def test_ten_seconds_without_heartbeat_is_the_limit() -> None:
    cat = catalog([echo(timeouts=seconds(10))])
    assert cat.options("probe_echo").start_to_close == timedelta(seconds=10)
    assert cat.options("probe_echo").heartbeat is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"enabled": ["calculator", "nope"]}, "unknown tools enabled: nope; known: calculator"),
        ({"read_attempts": 0}, "read_attempts must be 1-3, not 0"),
        ({"read_attempts": 4}, "read_attempts must be 1-3, not 4"),
        ({"schedule_to_start": timedelta(0)}, "schedule_to_start must be positive"),
        ({"question_timeout": timedelta(seconds=-1)}, "question_timeout must be positive"),
        (
            {"enabled": ["calculator"], "task_queues": {"probe_echo": "q"}},
            "options given for 'probe_echo', which is not an enabled tool",
        ),
        (
            {"enabled": ["calculator"], "timeouts": {"probe_echo": seconds(5)}},
            "options given for 'probe_echo', which is not an enabled tool",
        ),
        ({"task_queues": {"probe_echo": " "}}, "probe_echo: task queue is empty"),
        (
            {"task_queues": {"ask_user": "q"}},
            "ask_user: runs inside the workflow and has no task queue",
        ),
        (
            {"timeouts": {"ask_user": seconds(5)}},
            "ask_user: runs inside the workflow and has no timeouts",
        ),
        (
            {"timeouts": {"probe_echo": seconds(30)}},
            "probe_echo: start_to_close over 10s needs a heartbeat",
        ),
        (
            {"timeouts": {"probe_echo": seconds(5, 5)}},
            "probe_echo: heartbeat must be positive and shorter",
        ),
    ],
)
def test_invalid_settings_are_refused(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(CatalogError) as caught:
        catalog(**settings)
    assert message in str(caught.value)


def test_default_settings_enable_the_tools_that_need_no_configuration() -> None:
    cat = Catalog(ALL_TOOLS)
    assert cat.names == list(DEFAULT_TOOLS)
    assert "calculator" in cat
    assert "probe_echo" not in cat
    assert cat.get("probe_echo") is None


def test_activity_options_follow_the_side_effect_class() -> None:
    cat = catalog(read_attempts=3, schedule_to_start=timedelta(seconds=7))
    write, read, pure = (
        cat.options("probe_write"),
        cat.options("probe_echo"),
        cat.options("calculator"),
    )
    assert (write.maximum_attempts, read.maximum_attempts, pure.maximum_attempts) == (1, 3, 1)
    assert cat.options("probe_sleep").maximum_attempts == 1
    assert {o.schedule_to_start for o in (write, read, pure)} == {timedelta(seconds=7)}
    assert read.start_to_close == timedelta(seconds=5)
    assert read.heartbeat is None
    sleep = cat.options("probe_sleep")
    assert (sleep.start_to_close, sleep.heartbeat) == (timedelta(seconds=60), timedelta(seconds=2))
    assert not read.local
    assert read.task_queue is None


def test_read_attempts_default_to_one() -> None:
    assert catalog().options("probe_echo").maximum_attempts == 1


def test_per_tool_settings_override_the_declaration() -> None:
    cat = catalog(
        timeouts={"probe_echo": seconds(30, 3)},
        task_queues={"probe_echo": "edge"},
    )
    options = cat.options("probe_echo")
    assert (options.start_to_close, options.heartbeat) == (
        timedelta(seconds=30),
        timedelta(seconds=3),
    )
    assert options.task_queue == "edge"
    assert cat.options("probe_boom").start_to_close == timedelta(seconds=5)
    assert cat.options("probe_boom").task_queue is None


def test_ask_user_has_no_activity_options() -> None:
    with pytest.raises(KeyError):
        catalog().options("ask_user")


def test_plan_unknown_tool_lists_the_available_ones() -> None:
    error = plan_error(catalog(enabled=["calculator", "probe_echo"]), "x" * 100, {})
    assert error.code is ErrorCode.UNKNOWN_TOOL
    assert error.message == f"unknown tool {'x' * 64!r}; available: calculator, probe_echo"


def test_plan_answers_a_tool_outside_the_profile_as_one_the_deployment_lacks() -> None:
    cat = catalog(enabled=["calculator", "probe_echo"], profiles={"p": ["calculator"]})

    def refused(tool: str) -> tuple[ErrorCode, str]:
        request = PlanInput(tool=tool, arguments={}, profile="p")
        outcome = cat.plan(request, default_ceiling(), frozenset())
        assert outcome.plan is None
        assert outcome.error is not None
        return outcome.error.code, outcome.error.message.replace(repr(tool), "NAME")

    outside = refused("probe_echo")
    assert outside == (ErrorCode.UNKNOWN_TOOL, "unknown tool NAME; available: calculator")
    assert refused(f"no_such_tool_{uuid.uuid4().hex}") == outside


def test_plan_invalid_arguments_name_every_fixable_argument() -> None:
    error = plan_error(catalog(), "probe_echo", {"bogus": 1, "text": 5, "size": -1})
    assert error.code is ErrorCode.INVALID_ARGUMENTS
    assert error.fixable_args == ["text", "size", "bogus"]
    assert error.message.startswith("probe_echo: invalid arguments: text: Input should be")
    assert "size: Input should be greater than or equal to 0" in error.message
    assert "bogus: Extra inputs are not permitted" in error.message


def test_plan_refuses_numbers_json_cannot_carry_as_invalid_arguments() -> None:
    cat = catalog([count_spec()])
    error = plan_error(cat, "probe_count", {"n": 2**60})
    assert error.code is ErrorCode.INVALID_ARGUMENTS
    assert error.fixable_args == ["n"]
    assert plan(cat, "probe_count", {"n": 2**53 - 1}).arguments == {"n": 2**53 - 1}


def test_plan_normalises_arguments_and_digests_them() -> None:
    planned = plan(catalog(), "probe_echo", {"text": "hi", "size": None})
    assert planned.arguments == {"text": "hi", "size": 0}
    canonical = b'{"arguments":{"size":0,"text":"hi"},"tool":"probe_echo"}'
    assert rfc8785.dumps({"tool": "probe_echo", "arguments": {"text": "hi", "size": 0}}) == (
        canonical
    )
    assert planned.digest == hashlib.sha256(canonical).hexdigest()
    assert planned.digest == call_digest("probe_echo", planned.arguments)


def test_plan_call_hands_over_the_arguments_it_digested() -> None:
    cat = catalog()
    request = PlanInput(tool="probe_echo", arguments={"text": "hi", "size": None})
    outcome, args = cat.plan_call(request, default_ceiling(), frozenset())
    assert outcome == cat.plan(request, default_ceiling(), frozenset())
    assert isinstance(args, EchoArgs)
    assert outcome.plan is not None
    assert call_digest("probe_echo", args.model_dump(mode="json")) == outcome.plan.digest
    invalid = PlanInput(tool="probe_echo", arguments={"text": 5})
    assert cat.plan_call(invalid, default_ceiling(), frozenset()).args is None


def test_digest_binds_tool_and_arguments_not_their_spelling() -> None:
    cat = catalog()
    same = {
        plan(cat, "probe_echo", {"text": "hi"}).digest,
        plan(cat, "probe_echo", {"size": 0, "text": "hi"}).digest,
        plan(cat, "probe_echo", {"size": None, "text": "hi"}).digest,
    }
    assert len(same) == 1
    assert plan(cat, "probe_echo", {"text": "hj"}).digest not in same
    assert plan(cat, "probe_boom", {"text": "hi"}).digest not in same


def test_digest_uses_rfc8785_for_unicode_and_numbers() -> None:
    arguments: dict[str, Any] = {"z": [1.0, 1e21, 0.1], "é": "\u2028", "a": {"b": None}}
    expected = hashlib.sha256(rfc8785.dumps({"arguments": arguments, "tool": "t"})).hexdigest()
    assert call_digest("t", arguments) == expected
    assert rfc8785.dumps(arguments) == ('{"a":{"b":null},"z":[1,1e+21,0.1],"é":"\u2028"}'.encode())


def test_plan_capabilities_come_from_the_arguments() -> None:
    def needs(args: EchoArgs) -> list[str]:
        return ["network.write", "network.read"] if args.size else ["network.read", "network.read"]

    cat = catalog([echo(capabilities=needs)])
    assert plan(cat, "probe_echo", {"size": 1}).capabilities == ["network.read", "network.write"]
    assert plan(cat, "probe_echo", {}).capabilities == ["network.read"]


def test_plan_refuses_undeclared_capabilities_from_a_function() -> None:
    cat = catalog([echo(capabilities=lambda args: ["network.reed"])])
    error = plan_error(cat, "probe_echo", {})
    assert error.code is ErrorCode.INTERNAL
    assert error.message == "probe_echo: undeclared capabilities network.reed"


def test_plan_records_the_ceiling_verdicts() -> None:
    ceiling = CapabilityPolicy(rules={"network.*": Effect.DENY}, tools={"probe_echo": Effect.ALLOW})
    planned = plan(catalog(), "probe_echo", {}, ceiling=ceiling)
    assert planned.ceiling == [
        Verdict(subject="network.read", effect=Effect.DENY, rule="network.*", source="deployment"),
        Verdict(
            subject="tool:probe_echo",
            effect=Effect.ALLOW,
            rule="tool:probe_echo",
            source="deployment",
        ),
    ]
    assert plan(catalog(), "probe_write", {"token": "t"}).ceiling == [
        Verdict(
            subject="filesystem.write",
            effect=Effect.REQUIRE_APPROVAL,
            rule="filesystem.write",
            source="deployment",
        )
    ]


def test_plan_side_effect_and_prepare() -> None:
    cat = catalog()
    write = plan(cat, "probe_write", {"token": "t"})
    read = plan(cat, "probe_echo", {})
    assert (write.side_effect, write.prepare) == (SideEffect.WRITE, True)
    assert (read.side_effect, read.prepare) == (SideEffect.READ, False)


@pytest.mark.parametrize(
    ("settings", "tool", "local_tools", "request_queue", "local", "queue"),
    [
        ({}, "calculator", {"calculator"}, None, True, None),
        ({}, "calculator", set(), None, False, None),
        ({"local_pure_tools": False}, "calculator", {"calculator"}, None, False, None),
        ({"task_queues": {"calculator": "m"}}, "calculator", {"calculator"}, None, False, "m"),
        ({}, "calculator", {"calculator"}, "req", False, "req"),
        ({}, "probe_echo", {"probe_echo"}, None, False, None),
        ({"task_queues": {"probe_echo": "edge"}}, "probe_echo", set(), "req", False, "req"),
        ({"task_queues": {"probe_echo": "edge"}}, "probe_echo", set(), None, False, "edge"),
    ],
)  # fmt: skip
def test_plan_local_flag_and_task_queue(
    settings: dict[str, Any],
    tool: str,
    local_tools: set[str],
    request_queue: str | None,
    local: bool,
    queue: str | None,
) -> None:
    arguments = {"expression": "1"} if tool == "calculator" else {}
    planned = plan(
        catalog(**settings), tool, arguments, local=frozenset(local_tools), task_queue=request_queue
    )
    assert planned.activity is not None
    assert planned.activity.local is local
    assert planned.activity.task_queue == queue


def test_question_timeout_only_for_ask_user() -> None:
    cat = catalog(question_timeout=timedelta(seconds=42))
    asked = plan(cat, "ask_user", {"question": "Proceed?"})
    assert asked.activity is None
    assert asked.question_timeout == timedelta(seconds=42)
    assert asked.capabilities == ["user.interact"]
    assert plan(cat, "calculator", {"expression": "1"}).question_timeout is None
    assert plan(cat, "probe_echo", {}).question_timeout is None


def test_default_ceiling_requires_approval_exactly_for_writes() -> None:
    ceiling = default_ceiling()
    assert ceiling.default_effect is Effect.ALLOW
    assert ceiling.tools == {}
    assert ceiling.rules == dict.fromkeys(WRITE_CAPABILITIES, Effect.REQUIRE_APPROVAL)
    for capability, kind in CAPABILITIES.items():
        effect, _ = policy.match(ceiling, capability)
        assert (effect is Effect.REQUIRE_APPROVAL) == (kind is SideEffect.WRITE), capability


def test_definitions_cover_every_enabled_tool_with_a_strict_schema() -> None:
    cat = catalog(enabled=["probe_echo", "calculator", "ask_user"])
    definitions = cat.definitions()
    assert [d["name"] for d in definitions] == ["probe_echo", "calculator", "ask_user"]
    for definition in definitions:
        spec = SPECS[definition["name"]]
        assert definition["description"] == spec.description
        schema = definition["input_schema"]
        assert schema == strict_schema(spec.arguments)
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])
    echo_schema = definitions[0]["input_schema"]
    assert list(echo_schema["properties"]) == ["text", "size"]


def test_builtin_definitions_match_the_builtin_specs() -> None:
    cat = Catalog(BUILTIN_TOOLS, CatalogSettings(enabled=[s.name for s in BUILTIN_TOOLS]))
    definitions = cat.definitions()
    assert [d["name"] for d in definitions] == [s.name for s in BUILTIN_TOOLS]
    assert all(d["input_schema"]["additionalProperties"] is False for d in definitions)


def test_nested_tool_args_with_defaults_are_accepted() -> None:
    class GoodInner(ToolArgs):
        a: int
        b: int = Field(default=1, ge=0)

    class GoodNested(ToolArgs):
        inner: list[GoodInner] | None = None

    cat = catalog([count_spec("probe_nested", GoodNested)])
    planned = plan(cat, "probe_nested", {"inner": [{"a": 2, "b": None}]})
    assert planned.arguments == {"inner": [{"a": 2, "b": 1}]}


def test_arguments_over_the_payload_bound_end_at_plan_naming_the_largest() -> None:
    # No limit of the tool's own stops this text: the catalog's bound does, before anything runs.
    cat = catalog(enabled=["probe_echo"])
    big = {"text": "x" * MAX_ARGUMENTS_BYTES, "size": 1}
    outcome = cat.plan(PlanInput(tool="probe_echo", arguments=big), default_ceiling(), frozenset())
    assert outcome.plan is None
    assert outcome.error is not None
    assert outcome.error.code is ErrorCode.INVALID_ARGUMENTS
    assert outcome.error.fixable_args == ["text"]
    assert f"at most {MAX_ARGUMENTS_BYTES} are accepted" in outcome.error.message
    fits = {"text": "x" * (MAX_ARGUMENTS_BYTES - 100)}
    assert cat.plan(
        PlanInput(tool="probe_echo", arguments=fits), default_ceiling(), frozenset()
    ).plan

"""Probe tools for workflow tests: real activities with controllable behaviour.

They are declared with ``ToolSpec`` like the built-ins and registered under their own names, so
the workflow under test is exactly the production one.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Literal

from pydantic import Field

from toolcalls.activities.base import CallContext, ToolArgs, ToolResult
from toolcalls.activities.core import CORE_TOOLS
from toolcalls.activities.errors import tool_error
from toolcalls.activities.families import BUILTIN_FAMILIES, BUILTIN_TOOLS
from toolcalls.activities.family import AnyFamily, Family, NoSettings, Resources
from toolcalls.activities.heartbeat import Heartbeat
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.workflows.models.approval import Prepared, PreviewArtifact
from toolcalls.workflows.models.call import ErrorCode, SideEffect


class SleepArgs(ToolArgs):
    seconds: float = Field(ge=0, le=60)
    undo: bool = False
    """On cancellation, report the effect undone (``changed: false``), as a rolled-back write."""


class SleepResult(ToolResult):
    ticks: int


class FailArgs(ToolArgs):
    code: ErrorCode
    retryable: bool = False


class EchoArgs(ToolArgs):
    text: str = ""
    size: int = Field(default=0, ge=0, le=4_000_000)


class EchoResult(ToolResult):
    text: str


class WriteArgs(ToolArgs):
    token: str


class WriteResult(ToolResult):
    token: str
    idempotency_key: str
    approved_by: str | None


class MethodArgs(ToolArgs):
    method: Literal["GET", "POST"]


class MethodResult(ToolResult):
    method: str


def method_capabilities(args: MethodArgs) -> tuple[str, ...]:
    """Like an HTTP tool: reading for GET, writing for POST."""
    return ("network.read",) if args.method == "GET" else ("network.write",)


class ProbeTools:
    """Activities whose behaviour the tests choose; ``runs`` counts executions per tool."""

    def __init__(self) -> None:
        self.runs: dict[str, int] = {}
        self.expected: dict[str, str] = {}
        """Token ``probe_write`` must still find at execution (its precondition)."""
        self.prepare_delay = 0.0
        """Seconds ``prepare_probe_write`` takes, to hold a call in the preparing phase."""
        self.prepare_failures: dict[str, ErrorCode] = {}
        """Tokens whose preview ``prepare_probe_write`` fails, with the code it fails with."""

    def _count(self, name: str) -> None:
        self.runs[name] = self.runs.get(name, 0) + 1

    async def probe_sleep(self, args: SleepArgs, call: CallContext) -> SleepResult:
        """Sleep while heartbeating; on cancellation return the ticks so far as partial output."""
        self._count("probe_sleep")
        ticks = 0
        async with Heartbeat(ticks=0) as beat:
            try:
                while ticks < args.seconds * 10:
                    await asyncio.sleep(0.1)
                    ticks += 1
                    beat.update(ticks=ticks)
            except asyncio.CancelledError:
                if args.undo:
                    raise tool_error(
                        ErrorCode.CANCELED,
                        "probe_sleep: canceled; undone, nothing was changed",
                        output={"ticks": ticks, "changed": False},
                    ) from None
                raise tool_error(
                    ErrorCode.CANCELED, "probe_sleep: canceled", output={"ticks": ticks}
                ) from None
        return SleepResult(ticks=ticks)

    async def probe_stall(self, args: SleepArgs, call: CallContext) -> SleepResult:
        """A write that never heartbeats: it looks exactly like a lost worker."""
        self._count("probe_stall")
        await asyncio.sleep(args.seconds)
        return SleepResult(ticks=0)

    async def probe_slow_read(self, args: SleepArgs, call: CallContext) -> SleepResult:
        self._count("probe_slow_read")
        await asyncio.sleep(args.seconds)
        return SleepResult(ticks=0)

    async def probe_echo(self, args: EchoArgs, call: CallContext) -> EchoResult:
        self._count("probe_echo")
        return EchoResult(text=args.text + "x" * args.size)

    async def probe_boom(self, args: EchoArgs, call: CallContext) -> EchoResult:
        self._count("probe_boom")
        raise RuntimeError(f"boom: {args.text}")

    async def probe_fail(self, args: FailArgs, call: CallContext) -> EchoResult:
        """Fail with the error code the test asks for, with a partial output."""
        self._count("probe_fail")
        raise tool_error(
            args.code,
            f"probe_fail: {args.code.value}",
            fixable_args=["code"],
            retryable=args.retryable,
            output={"partial": True},
        )

    async def probe_nap(self, args: SleepArgs, call: CallContext) -> SleepResult:
        """Sleep without heartbeating: cancellation can never reach it."""
        self._count("probe_nap")
        await asyncio.sleep(args.seconds)
        return SleepResult(ticks=round(args.seconds * 10))

    async def probe_method(self, args: MethodArgs, call: CallContext) -> MethodResult:
        self._count("probe_method")
        return MethodResult(method=args.method)

    async def prepare_probe_write(self, args: WriteArgs, call: CallContext) -> Prepared:
        if self.prepare_delay:
            await asyncio.sleep(self.prepare_delay)
        code = self.prepare_failures.get(args.token)
        if code is not None:
            raise tool_error(code, f"probe_write: no preview of {args.token!r}")
        return Prepared(
            preview=[PreviewArtifact(kind="diff", title="change", text=f"+{args.token}\n")],
            precondition={"token": self.expected.get(args.token, args.token)},
        )

    async def probe_write(self, args: WriteArgs, call: CallContext) -> WriteResult:
        self._count("probe_write")
        now = self.expected.get(args.token, args.token)
        # Without an approval there was no preview, so nothing to hold the tool to.
        if call.precondition is not None and call.precondition != {"token": now}:
            raise tool_error(ErrorCode.PRECONDITION_FAILED, "probe_write: changed since preview")
        return WriteResult(
            token=args.token,
            idempotency_key=call.idempotency_key,
            approved_by=call.approval.approver if call.approval else None,
        )


def _spec(
    name: str,
    args: type[ToolArgs],
    result: type[ToolResult],
    side_effect: SideEffect,
    capabilities: tuple[str, ...],
    start_to_close: float,
    heartbeat: float | None = None,
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=f"test probe {name}",
        arguments=args,
        result=result,
        side_effect=side_effect,
        capabilities=capabilities,
        timeouts=Timeouts(
            start_to_close=timedelta(seconds=start_to_close),
            heartbeat=timedelta(seconds=heartbeat) if heartbeat else None,
        ),
        implementation=ProbeTools,
    )


PROBE_TOOLS = (
    ToolSpec(
        name="probe_method",
        description="test probe probe_method",
        arguments=MethodArgs,
        result=MethodResult,
        side_effect=SideEffect.WRITE,
        capabilities=method_capabilities,
        capability_sets=(("network.read",), ("network.write",)),
        timeouts=Timeouts(start_to_close=timedelta(seconds=5)),
        implementation=ProbeTools,
    ),
    _spec("probe_fail", FailArgs, EchoResult, SideEffect.READ, ("network.read",), 5),
    _spec("probe_nap", SleepArgs, SleepResult, SideEffect.READ, ("network.read",), 8),
    _spec("probe_sleep", SleepArgs, SleepResult, SideEffect.WRITE, ("process.execute",), 60, 2),
    _spec("probe_stall", SleepArgs, SleepResult, SideEffect.WRITE, ("process.execute",), 30, 1),
    _spec("probe_slow_read", SleepArgs, SleepResult, SideEffect.READ, ("network.read",), 1),
    _spec("probe_echo", EchoArgs, EchoResult, SideEffect.READ, ("network.read",), 5),
    _spec("probe_boom", EchoArgs, EchoResult, SideEffect.READ, ("network.read",), 5),
    _spec("probe_write", WriteArgs, WriteResult, SideEffect.WRITE, ("filesystem.write",), 5),
)
ALL_TOOLS = (*BUILTIN_TOOLS, *PROBE_TOOLS)
"""Every tool a test worker knows."""


def _build_probes(settings: NoSettings, resources: Resources) -> list[object]:
    return [ProbeTools()] if resources.serves(ProbeTools) else []


PROBES = Family(name="probes", settings=NoSettings, tools=PROBE_TOOLS, build=_build_probes)
"""The probe tools as a family of their own, declared like the built-ins."""
ALL_FAMILIES: tuple[AnyFamily, ...] = (*BUILTIN_FAMILIES, PROBES)
"""Every family a test worker knows."""
ALL_TOOL_NAMES = [spec.name for spec in (*CORE_TOOLS, *PROBE_TOOLS)]
"""The tools test workers enable by default: the ones that need no configuration."""

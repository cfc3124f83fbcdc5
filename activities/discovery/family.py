"""The discovery family: ``search_tools`` and ``read_tool``, pure tools over the catalog."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from toolcalls.activities.discovery.tools import (
    DiscoveryTools,
    ReadToolArgs,
    ReadToolResult,
    SearchToolsArgs,
    SearchToolsResult,
)
from toolcalls.activities.family import Family, NoSettings, Resources
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.workflows.models.call import SideEffect

DISCOVERY_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="search_tools",
        description=(
            "Find the tools you may use in this session: literal words (any case) matched against "
            "tool names, descriptions and capabilities. Returns up to max_results (1-50) names "
            "with a one-line summary, best match first; read_tool gives a tool's full definition."
        ),
        arguments=SearchToolsArgs,
        result=SearchToolsResult,
        side_effect=SideEffect.PURE,
        capabilities=(),
        timeouts=Timeouts(start_to_close=timedelta(seconds=5)),
        implementation=DiscoveryTools,
        sees_catalog=True,
    ),
    ToolSpec(
        name="read_tool",
        description=(
            "The full definition (name, description, JSON Schema of the arguments) of a tool you "
            "may use in this session, in the anthropic, openai or mcp shape, so it can be added to "
            "the tools of your next turn. Unknown and unavailable tools get the same answer."
        ),
        arguments=ReadToolArgs,
        result=ReadToolResult,
        side_effect=SideEffect.PURE,
        capabilities=(),
        timeouts=Timeouts(start_to_close=timedelta(seconds=5)),
        implementation=DiscoveryTools,
        sees_catalog=True,
    ),
)


def _build(settings: NoSettings, resources: Resources) -> Iterable[object]:
    if not resources.serves(DiscoveryTools):
        return []
    assert resources.catalog is not None  # the worker builds families with its catalog
    return [DiscoveryTools(resources.catalog)]


DISCOVERY = Family(name="discovery", settings=NoSettings, tools=DISCOVERY_TOOLS, build=_build)

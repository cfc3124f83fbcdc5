"""``search_tools`` and ``read_tool``: what a model may find out about the other tools.

What it can touch: the deployment's catalog, in memory. How it is confined: each call sees only
the tools its plan found it may use (``CallContext.visible_tools``: the request's profile, and no
tool that the request's policy or the ceiling denies outright). Everything else is invisible in
the same way: an unknown tool, one outside the profile and one the ceiling or the policy denies
all give the same answer, so discovery never reveals what a caller may not use. (A direct call of
a denied tool of the profile is denied with its rule instead: docs/profiles.md says why.)
"""

from __future__ import annotations

from pydantic import Field

from toolcalls.activities.base import CallContext, ToolArgs, ToolResult
from toolcalls.activities.catalog import Catalog
from toolcalls.activities.definitions import DefinitionFormat, capability_sets, definition, summary
from toolcalls.activities.errors import tool_error
from toolcalls.activities.spec import ToolSpec
from toolcalls.workflows.models.call import ErrorCode

MAX_QUERY_CHARS = 200
MAX_RESULTS = 50
DEFAULT_RESULTS = 10
NAME_WEIGHT, WORD_WEIGHT, DESCRIPTION_WEIGHT, CAPABILITY_WEIGHT = 8, 4, 2, 1
"""How much a match counts where it is found: in the name, as the name, in the description, in a
capability."""


class SearchToolsArgs(ToolArgs):
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="Words to look for (literal, any case) in tool names, descriptions and "
        "capabilities, 1-200 characters.",
    )
    max_results: int = Field(
        default=DEFAULT_RESULTS,
        ge=1,
        le=MAX_RESULTS,
        description="How many tools to return, 1-50 (default 10).",
    )


class ToolSummary(ToolResult):
    name: str
    summary: str


class SearchToolsResult(ToolResult):
    items: list[ToolSummary]
    more_results: bool


class ReadToolArgs(ToolArgs):
    name: str = Field(min_length=1, max_length=64, description="The tool's name.")
    format: DefinitionFormat = Field(
        default="anthropic",
        description="The definition's shape: anthropic (input_schema), openai (parameters, "
        "strict) or mcp (inputSchema).",
    )


class ReadToolResult(ToolResult):
    definition: dict[str, object]


class DiscoveryTools:
    """The discovery tools over one deployment's catalog."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def _visible(self, call: CallContext) -> list[ToolSpec]:
        names = call.visible_tools or []
        return [spec for name in names if (spec := self.catalog.get(name)) is not None]

    async def search_tools(self, args: SearchToolsArgs, call: CallContext) -> SearchToolsResult:
        """The visible tools whose name, description or capabilities hold the query's words,
        best matches first."""
        words = [word for word in args.query.lower().split() if word]
        scored = []
        for spec in self._visible(call):
            score = _score(spec, words)
            if score:
                scored.append((-score, spec.name, spec))
        scored.sort()
        items = [ToolSummary(name=spec.name, summary=summary(spec)) for _, _, spec in scored]
        return SearchToolsResult(
            items=items[: args.max_results], more_results=len(items) > args.max_results
        )

    async def read_tool(self, args: ReadToolArgs, call: CallContext) -> ReadToolResult:
        """The full definition of one visible tool."""
        found = {spec.name: spec for spec in self._visible(call)}.get(args.name)
        if found is None:
            # The same answer for a tool that does not exist, one outside the profile and one
            # the ceiling or the policy denies: nothing about what the caller may not use.
            raise tool_error(
                ErrorCode.INVALID_ARGUMENTS,
                f"read_tool: no tool named {args.name!r} is available to this call",
                fixable_args=["name"],
            )
        return ReadToolResult(definition=definition(found, args.format))


def _score(spec: ToolSpec, words: list[str]) -> int:
    name = spec.name.lower()
    parts = set(name.split("_"))
    description = spec.description.lower()
    capabilities = " ".join(sorted({cap for caps in capability_sets(spec) for cap in caps})).lower()
    score = 0
    for word in words:
        found = 0
        if word in name:
            found += NAME_WEIGHT + (WORD_WEIGHT if word in parts or word == name else 0)
        found += DESCRIPTION_WEIGHT * description.count(word)
        if word in capabilities:
            found += CAPABILITY_WEIGHT
        if not found:
            return 0  # every word must match somewhere
        score += found
    return score

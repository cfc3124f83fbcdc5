"""``search_tools`` over a real deployment's catalog: which tools a query finds, in what order,
with what summary. Each call is planned by the catalog first, as the plan activity plans it, so
the tools searched are the ones the plan recorded for the call."""

from __future__ import annotations

from typing import Any

from toolcalls.activities.base import CallContext
from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog
from toolcalls.activities.discovery.tools import DiscoveryTools, SearchToolsArgs
from toolcalls.workflows.models.call import CapabilityPolicy, Effect, PlanInput

READ_FILE = (
    "Read a UTF-8 text file inside the configured roots: up to max_chars (1-20,000) Unicode "
    "characters from offset."
)
LIST_FILES = (
    "List a directory inside the configured roots, or its tree (recursive), in filesystem order: "
    "entries whose names match a glob, typed file, dir or other (symlinks and special files, "
    "never followed)."
)
SEARCH_FILES = (
    "Find literal text (not a regex) in the files below a directory inside the configured roots, "
    "or in one file: paths, one-based line numbers and up to 500 characters of each matching line."
)


async def search(
    catalog: Catalog,
    query: str,
    *,
    ceiling: CapabilityPolicy | None = None,
    profile: str | None = None,
    **more: Any,
) -> tuple[list[tuple[str, str]], bool]:
    """The (name, summary) pairs and ``more_results`` of one planned ``search_tools`` call."""
    arguments = {"query": query, **more}
    outcome = catalog.plan(
        PlanInput(tool="search_tools", arguments=arguments, profile=profile),
        ceiling or default_ceiling(),
        frozenset(),
    )
    assert outcome.plan is not None, outcome.error
    call = CallContext("wf", "c", "wf:c", None, None, visible_tools=outcome.plan.visible_tools)
    result = await DiscoveryTools(catalog).search_tools(
        SearchToolsArgs.model_validate(arguments), call
    )
    return [(item.name, item.summary) for item in result.items], result.more_results


async def test_a_name_match_ranks_first_and_ties_go_by_name(catalog: Catalog) -> None:
    # read_file has "file" as a whole word of its name; list_files and search_files only hold
    # it ("files"), with equal scores, so they come in name order.
    assert await search(catalog, "file") == (
        [("read_file", READ_FILE), ("list_files", LIST_FILES), ("search_files", SEARCH_FILES)],
        False,
    )


async def test_every_word_counts_and_must_match_somewhere(catalog: Catalog) -> None:
    assert await search(catalog, "file calendar") == ([], False)  # no tool holds both
    found, _ = await search(catalog, "file search")
    assert [name for name, _ in found] == ["search_files"]
    # Words are matched as literal text: search_files holds "read" in "unreadable", which puts
    # it above list_files (tied on "file" alone); read_file holds it in its name, far above.
    found, _ = await search(catalog, "read file")
    assert [name for name, _ in found] == ["read_file", "search_files", "list_files"]
    found, _ = await search(catalog, "read file search")
    assert [name for name, _ in found] == ["search_files"]


async def test_words_are_literal_and_of_any_case(catalog: Catalog) -> None:
    assert await search(catalog, "FILE") == await search(catalog, "file")
    assert await search(catalog, "URL") == (
        [
            (
                "fetch_url",
                "Fetch a public http or https URL and return its readable text (HTML as text "
                "with its title; plain text, Markdown, CSV, JSON and XML as they are), at most "
                "max_chars characters (1-50000, default 12000).",
            )
        ],
        False,
    )
    assert await search(catalog, "file*") == ([], False)  # not a glob
    # A word inside a description counts: ask_user's holds "time" (in "timed_out"), below
    # current_datetime, which holds it in its name.
    found, _ = await search(catalog, "time")
    assert found == [
        ("current_datetime", "The current date and time in an IANA timezone (default UTC)."),
        ("ask_user", "Ask the user a question and wait for the answer."),
    ]


async def test_max_results_cuts_the_list_and_says_there_is_more(catalog: Catalog) -> None:
    assert await search(catalog, "file", max_results=2) == (
        [("read_file", READ_FILE), ("list_files", LIST_FILES)],
        True,
    )
    assert await search(catalog, "file", max_results=3) == (
        [("read_file", READ_FILE), ("list_files", LIST_FILES), ("search_files", SEARCH_FILES)],
        False,
    )


async def test_a_profile_and_the_ceiling_narrow_what_is_searched(catalog: Catalog) -> None:
    assert await search(catalog, "file", profile="reads") == ([("read_file", READ_FILE)], False)
    denied = CapabilityPolicy(tools={"read_file": Effect.DENY}, default_effect=Effect.ALLOW)
    assert await search(catalog, "file", ceiling=denied) == (
        [("list_files", LIST_FILES), ("search_files", SEARCH_FILES)],
        False,
    )

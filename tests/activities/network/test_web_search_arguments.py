"""``web_search`` arguments as the plan sees them: limits, normalisation, the catalog entry."""

from __future__ import annotations

from typing import Any

import pytest

from activities.capabilities import default_ceiling
from activities.catalog import Catalog, CatalogSettings
from activities.network import SEARCH_TOOLS
from activities.network.search import WebSearchArgs, WebSearchResult, WebSearchTools
from workflows.models import ErrorCode, PlanInput, SideEffect, ToolError

CATALOG = Catalog(SEARCH_TOOLS, CatalogSettings(enabled=["web_search"]))


def plan(**arguments: Any) -> dict[str, Any]:
    """The normalised arguments the plan records, or an AssertionError with its refusal."""
    outcome = CATALOG.plan(
        PlanInput(tool="web_search", arguments=arguments), default_ceiling(), frozenset()
    )
    assert outcome.plan is not None, outcome.error
    return outcome.plan.arguments


def refusal(**arguments: Any) -> ToolError:
    outcome = CATALOG.plan(
        PlanInput(tool="web_search", arguments=arguments), default_ceiling(), frozenset()
    )
    assert outcome.error is not None, outcome.plan
    assert outcome.error.code is ErrorCode.INVALID_ARGUMENTS
    return outcome.error


def test_the_catalog_declares_a_network_read_with_a_heartbeat() -> None:
    (spec,) = SEARCH_TOOLS
    assert (spec.name, spec.implementation, spec.arguments, spec.result) == (
        "web_search",
        WebSearchTools,
        WebSearchArgs,
        WebSearchResult,
    )
    assert spec.side_effect is SideEffect.READ
    assert spec.capabilities == ("network.read",)
    assert spec.timeouts is not None
    assert spec.timeouts.heartbeat is not None
    options = CATALOG.options("web_search")
    assert options.maximum_attempts == 1
    outcome = CATALOG.plan(
        PlanInput(tool="web_search", arguments={"query": "x"}), default_ceiling(), frozenset()
    )
    assert outcome.plan is not None
    assert outcome.plan.capabilities == ["network.read"]
    (definition,) = CATALOG.definitions()
    properties = definition["input_schema"]["properties"]
    assert set(properties) == {"query", "max_results", "freshness", "engine"}


def test_defaults_and_null_meaning_the_default() -> None:
    expected = {"query": "q", "max_results": 5, "engine": "brave", "freshness": "any"}
    assert plan(query="q") == expected
    assert plan(query="q", max_results=None, freshness=None, engine=None) == expected


def test_the_query_is_stripped_and_its_whitespace_collapsed() -> None:
    # CR/LF and tabs never reach a provider: one space between words.
    assert plan(query="  a\r\nb\tc  ")["query"] == "a b c"
    assert plan(query="x" * 400)["query"] == "x" * 400
    assert plan(query=" " * 10 + "x" * 400 + " " * 10)["query"] == "x" * 400
    assert plan(query=" ".join(["w"] * 50))["query"] == " ".join(["w"] * 50)


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("", "at least 1 character"),
        (" \n\t ", "at least 1 character"),
        ("x" * 401, "at most 400 characters"),
        ("x" * 100_000, "at most 400 characters"),
        (" ".join(["w"] * 51), "51 words; the limit is 50"),
        ("a\x00b", "control characters"),
        ("a\x1bb", "control characters"),
    ],
)
def test_bad_queries_are_refused_before_any_request(query: str, problem: str) -> None:
    error = refusal(query=query)
    assert error.fixable_args == ["query"]
    assert problem in error.message


@pytest.mark.parametrize(
    ("arguments", "argument"),
    [
        ({"max_results": 0}, "max_results"),
        ({"max_results": 11}, "max_results"),
        ({"freshness": "hour"}, "freshness"),
        ({"engine": "google"}, "engine"),
        ({"engine": "wikipedia", "freshness": "week"}, "freshness"),
        ({"headers": {"X-Subscription-Token": "mine"}}, "headers"),
    ],
)
def test_other_limits_name_the_argument_to_change(arguments: dict[str, Any], argument: str) -> None:
    error = refusal(query="q", **arguments)
    assert error.fixable_args == [argument]


def test_wikipedia_refuses_freshness_with_a_reason() -> None:
    error = refusal(query="q", engine="wikipedia", freshness="day")
    assert 'engine "wikipedia" supports only "any"' in error.message
    assert plan(query="q", engine="wikipedia", freshness="any")["engine"] == "wikipedia"
    assert plan(query="q", engine="duckduckgo", freshness="year")["freshness"] == "year"

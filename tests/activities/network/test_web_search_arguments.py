"""``web_search`` arguments as the plan sees them: limits, normalisation, the catalog entry."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.activities.network import SEARCH_TOOLS
from toolcalls.activities.network.search import WebSearchArgs, WebSearchResult, WebSearchTools
from toolcalls.worker.config import build_catalog, parse_config
from toolcalls.workflows.models.call import ErrorCode, PlanInput, PlanOutcome, SideEffect, ToolError

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


def deployment(**web_search: Any) -> Catalog:
    """The catalog of a deployment enabling ``web_search`` with these ``[web_search]`` keys."""
    return build_catalog(parse_config({"tools": ["web_search"], "web_search": web_search}))


def deployment_plan(catalog: Catalog, **arguments: Any) -> PlanOutcome:
    return catalog.plan(
        PlanInput(tool="web_search", arguments=arguments), default_ceiling(), frozenset()
    )


def test_the_schema_offers_only_the_configured_engines_and_defaults_to_the_first() -> None:
    catalog = deployment(engines=["wikipedia", "duckduckgo"])
    (definition,) = catalog.definitions()
    engine = definition["input_schema"]["properties"]["engine"]
    assert engine["anyOf"][0] == {"type": "string", "enum": ["wikipedia", "duckduckgo"]}
    assert 'null means the default, "wikipedia"' in engine["description"]
    # A deployment without Brave never advertises it, in any part of the definition.
    assert "brave" not in json.dumps(definition).lower()
    assert "one explicitly chosen engine: wikipedia (the default;" in definition["description"]
    planned = deployment_plan(catalog, query="q").plan
    assert planned is not None
    assert planned.arguments["engine"] == "wikipedia"
    refused = deployment_plan(catalog, query="q", engine="brave").error
    assert refused is not None
    assert (refused.code, refused.fixable_args) == (ErrorCode.INVALID_ARGUMENTS, ["engine"])
    assert "'wikipedia' or 'duckduckgo'" in refused.message


def test_one_engine_is_the_only_choice_and_the_description_names_no_other() -> None:
    catalog = deployment(engines=["duckduckgo"])
    (definition,) = catalog.definitions()
    properties = definition["input_schema"]["properties"]
    assert properties["engine"]["anyOf"][0] == {"type": "string", "const": "duckduckgo"}
    text = json.dumps(definition).lower()
    assert "brave" not in text
    assert "wikipedia" not in text
    assert "falls back" not in definition["description"]
    assert definition["description"].startswith("Search the web with duckduckgo (keyless")
    planned = deployment_plan(catalog, query="q", freshness="day").plan
    assert planned is not None
    assert (planned.arguments["engine"], planned.arguments["freshness"]) == ("duckduckgo", "day")


def test_the_default_deployment_offers_every_engine_brave_first() -> None:
    catalog = deployment()
    (definition,) = catalog.definitions()
    engine = definition["input_schema"]["properties"]["engine"]
    assert engine["anyOf"][0]["enum"] == ["brave", "duckduckgo", "wikipedia"]
    assert definition == CATALOG.definitions()[0]
    assert deployment(engines=["brave", "duckduckgo", "wikipedia"]).get("web_search") == (
        CATALOG.get("web_search")
    )

"""What a model reads about the tools is plain text: no reStructuredText from the docstrings.

The model-facing definitions (``toolcalls tools --json``, ``Catalog.definitions()``) carry each
tool's description and a JSON Schema whose ``description`` keys come from field descriptions and
from the argument models' docstrings. Docstrings are written for Sphinx-minded readers, so RST
markup (````name````, ``:class:`Name```) leaks into the schema unless the docstring avoids it.
Every variant a configuration can advertise is checked: git with and without writes,
``execute_command`` with ``allow_env`` and a declared ``[[http]]`` tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.activities.spec import ToolSpec
from toolcalls.worker.config import Config, advertised_specs, parse_config

RST = re.compile(r"``|:[a-z]+:`|`_")
"""Inline literals (````x````), roles (``:class:`X```) and references (```x`_``)."""

CONFIGURED = {
    "git": {"allow_write": True},
    "process": {"allow_env": ["PYTHONPATH"]},
    "http": [{"name": "application_api", "base_url": "https://api.example.com/v1"}],
}
"""Settings under which the families advertise their other argument models."""


def _definitions(specs: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    # Built directly, not with ``build_catalog``: a full catalog needs no roots, files or hosts.
    catalog = Catalog(specs, CatalogSettings(enabled=[spec.name for spec in specs]))
    return catalog.definitions()


def _descriptions(node: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every ``description`` string in a definition, with the path that leads to it."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                yield where, value
            yield from _descriptions(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _descriptions(value, f"{where}[{index}]")


DEFAULT_SPECS = advertised_specs(Config())
CONFIGURED_SPECS = advertised_specs(parse_config(CONFIGURED))
DEFAULT = _definitions(DEFAULT_SPECS)
CONFIGURED_DEFINITIONS = _definitions(CONFIGURED_SPECS)


def _cases() -> Iterator[Any]:
    for label, definitions in (("default", DEFAULT), ("configured", CONFIGURED_DEFINITIONS)):
        for definition in definitions:
            name = definition["name"]
            yield pytest.param(definition, id=f"{label}-{name}")


def test_the_catalogs_hold_every_advertised_variant() -> None:
    default = {spec.name: spec.arguments for spec in DEFAULT_SPECS}
    configured = {spec.name: spec.arguments for spec in CONFIGURED_SPECS}
    assert {"database_schema", "query_database", "git", "execute_command"} <= set(default)
    assert set(configured) == set(default) | {"application_api"}
    assert configured["git"] is not default["git"]
    assert configured["execute_command"] is not default["execute_command"]


@pytest.mark.parametrize("definition", list(_cases()))
def test_no_description_a_model_reads_has_rst_markup(definition: dict[str, Any]) -> None:
    marked = [
        f"{where}: {text!r}"
        for where, text in _descriptions(definition, definition["name"])
        if RST.search(text)
    ]
    assert not marked, "RST markup in model-facing text:\n" + "\n".join(marked)


def test_database_schema_says_it_takes_no_arguments_in_plain_text() -> None:
    (definition,) = [d for d in DEFAULT if d["name"] == "database_schema"]
    assert definition["input_schema"]["description"] == "database_schema takes no arguments."

"""The definitions a deployment exports: every tool a configuration can enable has a strict
schema, in each provider's shape."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from toolcalls.activities.families import BUILTIN_FAMILIES
from toolcalls.activities.schema import strict_problems, strict_schema
from toolcalls.worker.config import Config, build_catalog, parse_config

HTTP_TABLES: list[dict[str, Any]] = [
    {
        "name": "shop_api",
        "base_url": "https://api.example.com/v1/",
        "allowed_methods": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
    },
    {"name": "http_request", "base_url": "https://status.example.com/"},
]


def full_config(tmp_path: Path, *, writes: bool = True, **sections: Any) -> Config:
    """Every tool of every family enabled, with writes allowed where a setting allows them."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    database = tmp_path / "app.sqlite"
    sqlite3.connect(database).close()
    declared = [spec.name for family in BUILTIN_FAMILIES for spec in family.tools]
    data: dict[str, Any] = {
        "tools": [*declared, *(t["name"] for t in HTTP_TABLES if t["name"] not in declared)],
        "state_dir": str(tmp_path / "state"),
        "process": {"roots": [str(work)], "allow_env": ["PYTHONPATH"]},
        "shell": {"cwd": str(work)},
        "git": {"cwd": str(work), "allow_write": writes},
        "files": {"roots": [str(work)], "checkpoints": str(tmp_path / "changes.db")},
        "storage": {"database": str(tmp_path / "values.db"), "allow_write": True},
        "web_search": {"engines": ["wikipedia", "duckduckgo"]},
        "http": HTTP_TABLES if writes else [{**t, "allowed_methods": ["GET"]} for t in HTTP_TABLES],
        "documents": {"roots": [str(work)]},
        "database": {"path": str(database)},
        "calendar": {"backend": "google", "token_env": "CALENDAR_TOKEN"},
        "email": {"backend": "gmail", "token_env": "MAIL_TOKEN", "sender": "me@example.com"},
        **sections,
    }
    return parse_config(data)


@pytest.mark.parametrize("writes", [True, False], ids=["writes", "read-only"])
def test_every_tool_of_a_full_configuration_has_a_strict_schema(
    tmp_path: Path, writes: bool
) -> None:
    config = full_config(tmp_path, writes=writes)
    definitions = build_catalog(config).definitions()
    names = [d["name"] for d in definitions]
    assert names == config.tools
    assert {"set_value", "git", "web_search", "shop_api", "http_request"} <= set(names)
    problems = {d["name"]: strict_problems(d["input_schema"]) for d in definitions}
    assert problems == {name: [] for name in names}


def test_each_format_has_its_providers_shape(tmp_path: Path) -> None:
    catalog = build_catalog(full_config(tmp_path))
    specs = list(catalog)
    anthropic = catalog.definitions("anthropic")
    openai = catalog.definitions("openai")
    mcp = catalog.definitions("mcp")
    assert catalog.definitions() == anthropic
    assert len(anthropic) == len(openai) == len(mcp) == len(specs)
    for spec, a, o, m in zip(specs, anthropic, openai, mcp, strict=True):
        schema = strict_schema(spec.arguments)
        assert a == {"name": spec.name, "description": spec.description, "input_schema": schema}
        assert o == {
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": schema,
            "strict": True,
        }
        assert m == {"name": spec.name, "description": spec.description, "inputSchema": schema}
        assert list(o) == ["type", "name", "description", "parameters", "strict"]


def test_an_unknown_format_is_refused(tmp_path: Path) -> None:
    catalog = build_catalog(full_config(tmp_path))
    with pytest.raises(ValueError, match="unknown definition format 'gemini'; one of anthropic, "):
        catalog.definitions("gemini")  # type: ignore[arg-type]

"""``[[http]]`` tables: validation, the catalog entries they add, and the families built."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from toolcalls.activities.network.http_api import HttpTools
from toolcalls.activities.schema import strict_schema
from toolcalls.worker.config import ConfigError, build_catalog, load_config, parse_config
from toolcalls.worker.plugin import build_instances
from toolcalls.workflows.models.call import SideEffect

API = {"name": "app_api", "base_url": "https://api.example.com/v1"}


def problems(**data: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        build_catalog(parse_config(data))
    return str(caught.value)


def test_a_table_declares_a_tool_enabled_by_listing_it(tmp_path: Path) -> None:
    file = tmp_path / "toolcalls.toml"
    file.write_text(
        'tools = ["app_api", "status_api"]\n'
        "[activities]\nread_attempts = 3\n"
        '[[http]]\nname = "app_api"\nbase_url = "https://API.example.com/v1"\n'
        'allowed_methods = ["GET", "POST"]\ndescription = "The application\'s items."\n'
        'headers_from_env = { Authorization = "APP_TOKEN" }\ntimeout_seconds = 20\n'
        '[[http]]\nname = "status_api"\nbase_url = "http://10.1.2.3:8080"\nallow_http = true\n'
    )
    config = load_config(file)
    catalog = build_catalog(config)
    app, status = catalog.get("app_api"), catalog.get("status_api")
    assert app is not None
    assert status is not None
    assert app.side_effect is SideEffect.WRITE
    assert status.side_effect is SideEffect.READ
    # A write-class tool gets one attempt even for its GETs; a read-only tool may be retried.
    assert catalog.options("app_api").maximum_attempts == 1
    assert catalog.options("status_api").maximum_attempts == 3
    # timeout_seconds, the DNS lookup's own 10 s bound, and a 10 s margin.
    assert catalog.options("app_api").start_to_close == timedelta(seconds=40)
    assert catalog.options("app_api").heartbeat == timedelta(seconds=10)
    assert app.has_prepare
    assert status.has_prepare
    schema = strict_schema(app.arguments)
    assert schema["properties"]["method"]["anyOf"][0]["enum"] == ["GET", "POST"]
    assert sorted(schema["properties"]) == ["body", "method", "path", "query"]
    assert app.description.startswith("The application's items. Call the HTTP API at ")
    assert "https://api.example.com/v1/" in app.description
    definitions = {d["name"]: d for d in catalog.definitions()}
    assert set(definitions) == {"app_api", "status_api"}
    assert "APP_TOKEN" not in str(definitions)


def test_each_tool_gets_its_own_family_and_settings() -> None:
    config = parse_config(
        {
            "tools": ["app_api", "http_request"],
            "http": [API, {"base_url": "https://other.example.org/"}],
        }
    )
    catalog = build_catalog(config)
    families = build_instances(config, catalog, catalog.names)
    built: dict[str, Any] = {
        spec.name: families[spec.implementation]
        for spec in catalog
        if spec.implementation is not None
    }
    assert set(built) == {"app_api", "http_request"}
    assert all(isinstance(family, HttpTools) for family in built.values())
    assert built["app_api"]._settings.base_url == "https://api.example.com/v1/"
    assert built["http_request"]._settings.base_url == "https://other.example.org/"
    assert callable(built["app_api"].app_api)
    assert callable(built["http_request"].prepare_http_request)
    app = catalog.get("app_api")
    assert app is not None
    assert build_instances(config, catalog, ["app_api"]).keys() == {app.implementation}


def test_names_must_be_unique_and_not_builtin() -> None:
    message = problems(
        tools=["app_api", "read_file"],
        http=[API, API, {**API, "name": "read_file"}],
    )
    assert "http.1.name: app_api is also declared by http.0" in message
    assert "http.2.name: read_file is a builtin tool's name; choose another" in message


def test_a_declared_tool_must_be_listed_and_a_listed_one_declared() -> None:
    assert "http.0.name: app_api is declared but not enabled; add it to tools" in problems(
        http=[API]
    )
    assert "tools: http_request needs an [[http]] table with its base_url" in problems(
        tools=["http_request"]
    )


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ({"base_url": "http://api.example.com/"}, "http.0.base_url: base_url is plain http"),
        ({"base_url": "https://u:p@api.example.com/"}, "http.0.base_url: base_url must not"),
        ({"base_url": "https://api.example.com/?k=1"}, "http.0.base_url: base_url must not"),
        ({"base_url": "https://api.example.com/a/../b"}, "http.0.base_url: base_url path"),
        ({"headers": {"Host": "evil.com"}}, "http.0.headers: Host is set by the tool"),
        ({"headers": {"X-A": "1\r\nX-B: 2"}}, "http.0.headers: X-A: contains U+000D"),
        ({"headers": {"Bad Name": "1"}}, "http.0.headers: 'Bad Name' is not a valid header"),
        ({"headers_from_env": {"Authorization": "1X"}}, "http.0.headers_from_env: '1X'"),
        (
            {"headers": {"Authorization": "x"}, "headers_from_env": {"authorization": "T"}},
            "http.0.headers_from_env: authorization is also in headers",
        ),
        (
            {"headers": {"X-Key": "x"}, "idempotency_header": "x-key"},
            "http.0.idempotency_header: x-key is also a configured header",
        ),
        ({"allowed_methods": ["GET", "TRACE"]}, "http.0.allowed_methods.1"),
        ({"allowed_methods": []}, "http.0.allowed_methods"),
        ({"name": "Bad-Name"}, "http.0.name"),
        ({"max_response_bytes": 2_000_000}, "http.0.max_response_bytes"),
        ({"max_request_bytes": 1_048_577}, "http.0.max_request_bytes"),
        ({"timeout_seconds": 301}, "http.0.timeout_seconds"),
        ({"proxy": "http://x"}, "http.0.proxy: unknown key"),
    ],
)
def test_bad_tables_name_their_key(table: dict[str, Any], key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"tools": ["app_api"], "http": [{**API, **table}]})
    assert key in str(caught.value)

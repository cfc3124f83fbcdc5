"""``docker/``: the compose file's structure, the build context's ignore file, and the namespace
setup script run for real against the session's dev server.

``docker compose config`` is not available here, so the compose file is parsed with PyYAML and
the structure the cluster relies on is checked: the order of the one-shot setup steps, the images
Temporal recommends for a self-hosted cluster, the healthchecks the ordering waits on.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tomllib
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.testing import WorkflowEnvironment

from toolcalls.worker.devserver import temporal_binary
from toolcalls.workflows.models.call import SEARCH_ATTRIBUTES

DOCKER = Path(__file__).resolve().parents[1] / "docker"
COMPOSE_FILE = DOCKER / "compose.yaml"
COMPOSE: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))
SERVICES: dict[str, Any] = COMPOSE["services"]
SETUP_TIMEOUT = 120
"""Seconds the namespace script may take against the dev server: generous, to catch a hang."""


def _depends_on(name: str) -> dict[str, str]:
    """A service's dependencies and the condition each waits for."""
    depends = SERVICES[name].get("depends_on", {})
    if isinstance(depends, list):  # the short form waits only for the start
        return dict.fromkeys(depends, "service_started")
    return {service: spec["condition"] for service, spec in depends.items()}


def _all_dependencies(name: str) -> set[str]:
    found: set[str] = set()
    pending = [name]
    while pending:
        for dependency in _depends_on(pending.pop()):
            if dependency not in found:
                found.add(dependency)
                pending.append(dependency)
    return found


def _script(name: str) -> str:
    """The shell text a service runs: its command, or the script file its entrypoint names."""
    service = SERVICES[name]
    command = service.get("command", [])
    text = "\n".join(command) if isinstance(command, list) else str(command)
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if target in service.get("entrypoint", []):
            text += (DOCKER / source).read_text(encoding="utf-8")
    return text


def test_the_services() -> None:
    assert set(SERVICES) == {
        "postgresql",
        "temporal-schema",
        "temporal",
        "temporal-namespace",
        "temporal-ui",
        "worker",
        "prometheus",
        "grafana",
    }
    assert SERVICES["worker"]["deploy"]["replicas"] == 2
    assert "8080" in SERVICES["temporal-ui"]["ports"][0]
    assert SERVICES["temporal"]["ports"] == ["7233:7233"]
    # The namespace set up is the one the workers use, on the same server.
    setup, worker = SERVICES["temporal-namespace"]["environment"], SERVICES["worker"]["environment"]
    assert setup["NAMESPACE"] == worker["TEMPORAL_NAMESPACE"]
    assert setup["TEMPORAL_ADDRESS"] == worker["TEMPORAL_ADDRESS"] == "temporal:7233"


def test_the_images_are_the_server_and_admin_tools_not_auto_setup() -> None:
    images = {name: service.get("image", "") for name, service in SERVICES.items()}
    assert not [image for image in images.values() if "auto-setup" in image]
    assert "tctl" not in COMPOSE_FILE.read_text(encoding="utf-8")
    assert images["temporal"].startswith("temporalio/server:")
    assert images["temporal-schema"].startswith("temporalio/admin-tools:")
    assert images["temporal-namespace"].startswith("temporalio/admin-tools:")
    # One release for the server and its tools: the schema versions are the server's.
    assert images["temporal"].split(":")[1] == images["temporal-schema"].split(":")[1]
    assert images["temporal-ui"].startswith("temporalio/ui:")
    assert images["prometheus"].startswith("prom/prometheus:")
    assert images["grafana"].startswith("grafana/grafana:")
    pinned = [image for image in images.values() if image]
    assert all(":" in image and not image.endswith(":latest") for image in pinned)


def test_the_setup_steps_run_in_order() -> None:
    assert _depends_on("temporal-schema") == {"postgresql": "service_healthy"}
    assert _depends_on("temporal") == {"temporal-schema": "service_completed_successfully"}
    assert _depends_on("temporal-namespace") == {"temporal": "service_healthy"}
    assert _depends_on("worker") == {"temporal-namespace": "service_completed_successfully"}
    assert _depends_on("temporal-ui") == {"temporal": "service_healthy"}
    assert _all_dependencies("worker") == {
        "postgresql",
        "temporal-schema",
        "temporal",
        "temporal-namespace",
    }


def test_every_awaited_health_has_a_healthcheck() -> None:
    awaited = {
        dependency
        for name in SERVICES
        for dependency, condition in _depends_on(name).items()
        if condition == "service_healthy"
    }
    assert awaited == {"postgresql", "temporal"}
    for name in awaited:
        test = SERVICES[name]["healthcheck"]["test"]
        assert test[0] in ("CMD", "CMD-SHELL")
        assert len(test) > 1
    assert "temporal operator cluster health" in _script("temporal-namespace")


def test_the_schema_step_sets_up_both_databases_with_the_postgres12_plugin() -> None:
    service = SERVICES["temporal-schema"]
    assert service["environment"]["SQL_PLUGIN"] == "postgres12"
    assert service["environment"]["SQL_HOST"] == "postgresql"
    steps = re.findall(
        r"temporal-sql-tool --db (\S+) (create|setup-schema|update-schema)(.*)",
        _script("temporal-schema"),
    )
    assert [(db, step) for db, step, _ in steps] == [
        (db, step)
        for db in ("temporal", "temporal_visibility")
        for step in ("create", "setup-schema", "update-schema")
    ]
    updates = [rest.split() for _, step, rest in steps if step == "update-schema"]
    assert updates == [
        ["-d", "/etc/temporal/schema/postgresql/v12/temporal/versioned"],
        ["-d", "/etc/temporal/schema/postgresql/v12/visibility/versioned"],
    ]
    assert SERVICES["temporal"]["environment"]["DB"] == "postgres12"


def test_mounted_files_exist() -> None:
    sources = [
        volume.split(":")[0]
        for service in SERVICES.values()
        for volume in service.get("volumes", [])
        if volume.startswith("./")
    ]
    assert sorted(sources) == [
        "./create-namespace.sh",
        "./dynamicconfig.yaml",
        "./grafana/dashboards",
        "./grafana/provisioning",
        "./prometheus.yml",
        "./toolcalls.toml",
    ]
    assert all((DOCKER / source).exists() for source in sources)


def test_prometheus_scrapes_every_worker_on_the_port_the_workers_serve() -> None:
    deployment = tomllib.loads((DOCKER / "toolcalls.toml").read_text(encoding="utf-8"))
    host, _, port = deployment["telemetry"]["prometheus"].rpartition(":")
    assert host == "0.0.0.0"  # reachable from the prometheus container
    scrape = yaml.safe_load((DOCKER / "prometheus.yml").read_text(encoding="utf-8"))
    [job] = scrape["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    # The service name resolves to every replica's address.
    assert job["dns_sd_configs"] == [{"names": ["worker"], "type": "A", "port": int(port)}]
    mount = SERVICES["prometheus"]["volumes"][0].split(":")[:2]
    assert mount == ["./prometheus.yml", "/etc/prometheus/prometheus.yml"]
    # The worker's healthcheck asks /readyz on the same port.
    probe = " ".join(SERVICES["worker"]["healthcheck"]["test"])
    assert f"http://127.0.0.1:{port}/readyz" in probe
    assert _depends_on("prometheus") == {"worker": "service_started"}
    assert _depends_on("grafana") == {"prometheus": "service_started"}


def test_grafana_is_provisioned_with_the_dashboard_over_prometheus() -> None:
    grafana = DOCKER / "grafana"
    [source] = yaml.safe_load(
        (grafana / "provisioning/datasources/prometheus.yaml").read_text(encoding="utf-8")
    )["datasources"]
    assert source["url"] == "http://prometheus:9090"
    [provider] = yaml.safe_load(
        (grafana / "provisioning/dashboards/toolcalls.yaml").read_text(encoding="utf-8")
    )["providers"]
    mounts = dict(volume.split(":")[:2] for volume in SERVICES["grafana"]["volumes"])
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    dashboard = json.loads((grafana / "dashboards/toolcalls.json").read_text(encoding="utf-8"))
    uids = {
        target["datasource"]["uid"] for panel in dashboard["panels"] for target in panel["targets"]
    }
    assert uids == {source["uid"]}
    names = set(re.findall(r"\btoolcalls_[a-z_]+", json.dumps(dashboard)))
    # Every metric of ours is on the dashboard, and only names that exist.
    assert {name.removesuffix("_bucket") for name in names} >= set(dashboard_metrics())


def dashboard_metrics() -> list[str]:
    """Our metrics as Prometheus shows them: counters end in ``_total``."""
    from toolcalls.activities import telemetry as activity_metrics
    from toolcalls.workflows.call import telemetry as workflow_metrics

    histograms = {workflow_metrics.APPROVAL_WAIT, activity_metrics.TOOL_DURATION}
    return [
        name if name in histograms else f"{name}_total"
        for name in (*workflow_metrics.WORKFLOW_METRICS, *activity_metrics.ACTIVITY_METRICS)
    ]


def _pattern(pattern: str) -> re.Pattern[str]:
    """A ``.dockerignore`` pattern as Docker reads it: ``*`` and ``?`` stop at ``/``, ``**``
    crosses directories, ``[...]`` is a character class."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[" and "]" in pattern[i:]:
            close = pattern.index("]", i)
            out, i = out + pattern[i : close + 1], close + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def _ignored(path: str, patterns: list[str]) -> bool:
    """Whether ``.dockerignore`` keeps ``path`` out of the context: a pattern that matches the
    path or one of its directories excludes it, and the last matching pattern wins."""
    parts = path.split("/")
    prefixes = ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
    verdict = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        regex = _pattern(pattern.removeprefix("!").strip("/"))
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            verdict = not negated
    return verdict


def test_the_build_context_ignores_the_virtualenv_and_keeps_what_the_image_copies() -> None:
    build = SERVICES["worker"]["build"]
    context = (DOCKER / build["context"]).resolve()
    dockerfile = context / build["dockerfile"]
    assert dockerfile.is_file()
    ignore = context / ".dockerignore"
    patterns = [
        line.strip()
        for line in ignore.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for unwanted in (
        ".venv/bin/python",
        ".git/HEAD",
        ".toolcalls/temporal.db",
        "activities/__pycache__/catalog.cpython-311.pyc",
        ".pytest_cache/README.md",
        ".mypy_cache/3.11/cache.db",
        ".ruff_cache/content",
        ".hypothesis/examples/x",
        "toolcalls.egg-info/PKG-INFO",
    ):
        assert _ignored(unwanted, patterns), unwanted
    copied = re.findall(r"^COPY (.+) \S+$", dockerfile.read_text(encoding="utf-8"), re.MULTILINE)
    sources = [source for line in copied for source in line.split()]
    assert sources == [
        "pyproject.toml",
        "README.md",
        "activities",
        "workflows",
        "worker",
        "toolcalls",
    ]
    for source in sources:
        assert (context / source).exists()
        assert not _ignored(source, patterns), source
        assert not _ignored(f"{source}/__init__.py", patterns), source


async def _run_setup(namespace: str, address: str, bin_dir: Path) -> tuple[int, str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TEMPORAL_")},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "TEMPORAL_ADDRESS": address,
        "NAMESPACE": namespace,
    }
    process = await asyncio.create_subprocess_exec(
        "sh",
        str(DOCKER / "create-namespace.sh"),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), SETUP_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return process.returncode, output.decode(errors="replace")


@pytest.fixture
def cli_dir(tmp_path: Path) -> Path:
    """A directory whose ``temporal`` is the project's CLI, for the script's PATH."""
    (tmp_path / "temporal").symlink_to(temporal_binary())
    return tmp_path


async def test_the_namespace_script_registers_what_the_workflow_publishes(
    env: WorkflowEnvironment, cli_dir: Path
) -> None:
    address = env.client.service_client.config.target_host
    namespace = f"compose-{uuid.uuid4().hex[:12]}"

    code, output = await _run_setup(namespace, address, cli_dir)
    assert code == 0, output
    listed = await env.client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    registered = {
        name: IndexedValueType.Name(kind) for name, kind in listed.custom_attributes.items()
    }
    # The script's list is the workflow's: names and types.
    assert registered == {
        key.name: IndexedValueType.Name(IndexedValueType.ValueType(int(key.indexed_value_type)))
        for key in SEARCH_ATTRIBUTES
    }

    code, again = await _run_setup(namespace, address, cli_dir)  # an existing cluster: no-op
    assert code == 0, again
    assert "Search attributes have been added" not in again
    assert "successfully registered" not in again

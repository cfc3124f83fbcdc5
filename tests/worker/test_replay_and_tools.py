"""``toolcalls replay`` and ``toolcalls tools``: the commands that need no server.

The replayed history is a real one: a call made with ``toolcalls call`` through a real worker,
exported with the real ``temporal workflow show --output json``, then altered the way a changed
workflow would disagree with it.
"""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from tests.record_histories import HISTORIES
from tests.support.harness import make_config, running_worker
from tests.worker.support import (
    TOOLCALLS,
    hermetic_env,
    one_line,
    run,
    toolcalls,
    write_config,
)
from toolcalls.activities.catalog import DEFAULT_TOOLS
from toolcalls.activities.schema import strict_problems
from toolcalls.worker.config import build_catalog, load_config
from toolcalls.worker.devserver import temporal_binary

UNREACHABLE = "127.0.0.1:1"
"""Where the commands would connect if they tried (``TEMPORAL_ADDRESS``): they need no server."""


async def exported_history(
    tmp_path: Path, client: Client, address: str, task_queue: str
) -> tuple[str, dict[str, Any]]:
    """Run a ``probe_echo`` call (plan marker and a regular activity), export its history."""
    workflow_id = f"cli-replay-{uuid.uuid4()}"
    async with running_worker(client, make_config(task_queue)):
        done = await toolcalls(
            tmp_path,
            *("call", "probe_echo", '{"text": "hi"}', "--id", workflow_id),
            *("--task-queue", task_queue, "--address", address),
        )
    assert done.code == 0, done.stderr
    show = await asyncio.create_subprocess_exec(
        *(temporal_binary(), "workflow", "show", "-w", workflow_id, "--output", "json"),
        *("--address", address, "--namespace", "default"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(show.communicate(), 60)
    assert show.returncode == 0, err.decode()
    history: dict[str, Any] = json.loads(out)
    return workflow_id, history


def altered(history: dict[str, Any], event_type: str, change: Any) -> dict[str, Any]:
    """A copy of ``history`` with ``change`` applied to the first event of ``event_type``."""
    edited = copy.deepcopy(history)
    event = next(e for e in edited["events"] if e["eventType"] == f"EVENT_TYPE_{event_type}")
    change(event)
    return edited


def save(tmp_path: Path, name: str, history: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(history), encoding="utf-8")
    return str(path)


def rename_activity(event: dict[str, Any]) -> None:
    event["activityTaskScheduledEventAttributes"]["activityType"]["name"] = "probe_renamed"


def rename_marker(event: dict[str, Any]) -> None:
    event["markerRecordedEventAttributes"]["markerName"] = "not_a_local_activity"


def rename_workflow_type(event: dict[str, Any]) -> None:
    event["workflowExecutionStartedEventAttributes"]["workflowType"]["name"] = "SomeoneElses"


async def test_replay_reports_ok_and_nondeterministic(
    tmp_path: Path, client: Client, env: WorkflowEnvironment, task_queue: str
) -> None:
    address = env.client.service_client.config.target_host
    workflow_id, history = await exported_history(tmp_path, client, address, task_queue)
    types = [event["eventType"] for event in history["events"]]
    assert "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED" in types
    assert "EVENT_TYPE_MARKER_RECORDED" in types
    # The file's name is not the workflow id: the id comes from the history.
    files = [
        save(tmp_path, "good.json", history),
        save(
            tmp_path, "activity.json", altered(history, "ACTIVITY_TASK_SCHEDULED", rename_activity)
        ),
        save(tmp_path, "marker.json", altered(history, "MARKER_RECORDED", rename_marker)),
        save(
            tmp_path,
            "other.json",
            altered(history, "WORKFLOW_EXECUTION_STARTED", rename_workflow_type),
        ),
    ]

    done = await toolcalls(tmp_path, "replay", *files, env=_offline(tmp_path))
    assert done.code == 1
    assert one_line(done.stderr) == "toolcalls: replay: 3 of 4 histories did not replay"
    lines = done.stdout.splitlines()
    assert len(lines) == 4
    events = len(history["events"])
    assert lines[0] == f"ok               {files[0]} ({workflow_id}, {events} events)"
    assert lines[1].startswith(
        f"nondeterministic {files[1]} ({workflow_id}, {events} events): [TMPRL1100] "
        "Nondeterminism error: Activity type of scheduled event 'probe_renamed' does not match "
        "activity type of activity command 'probe_echo'"
    )
    assert lines[2].startswith(f"nondeterministic {files[2]} ({workflow_id}, {events} events): ")
    assert "Nondeterminism error" in lines[2]
    assert lines[3] == (
        f"failed           {files[3]} ({workflow_id}, {events} events): "
        "a SomeoneElses history, not ToolCallWorkflow"
    )

    as_json = await toolcalls(tmp_path, "replay", files[0], "--json", env=_offline(tmp_path))
    assert (as_json.code, as_json.stderr) == (0, "")
    assert json.loads(as_json.stdout) == [
        {
            "file": files[0],
            "verdict": "ok",
            "workflow_id": workflow_id,
            "events": events,
            "reason": None,
        }
    ]


def test_replay_of_the_recorded_histories_is_clean(tmp_path: Path) -> None:
    files = sorted(str(path) for path in HISTORIES.glob("*.json"))
    assert files
    done = run([TOOLCALLS, "replay", *files], tmp_path, timeout=60, TEMPORAL_ADDRESS=UNREACHABLE)
    assert (done.returncode, done.stderr) == (0, "")
    verdicts = [line.split()[:2] for line in done.stdout.splitlines()]
    assert verdicts == [["ok", file] for file in files]


def test_replay_of_unreadable_files_exits_2(tmp_path: Path) -> None:
    good = str(HISTORIES / "allowed.json")
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    (tmp_path / "empty.json").write_text('{"events": []}', encoding="utf-8")
    (tmp_path / "list.json").write_text("[1, 2]", encoding="utf-8")
    (tmp_path / "late.json").write_text(
        json.dumps({"events": json.loads(Path(good).read_text())["events"][1:]}), encoding="utf-8"
    )
    names = ["broken.json", "empty.json", "list.json", "late.json", "missing.json"]
    done = run(
        [TOOLCALLS, "replay", good, *names, "--json"], tmp_path, TEMPORAL_ADDRESS=UNREACHABLE
    )
    assert done.returncode == 2
    assert one_line(done.stderr) == "toolcalls: replay: 5 of 6 files unreadable"
    reports = json.loads(done.stdout)
    assert [(r["file"], r["verdict"]) for r in reports] == [
        (good, "ok"),
        *((name, "unreadable") for name in names),
    ]
    reasons = [r["reason"] for r in reports[1:]]
    assert reasons[0].startswith("not JSON: ")
    assert reasons[1:3] == ["not a workflow history: no events"] * 2
    assert reasons[3] == "not a workflow history: it does not begin with the workflow's start"
    assert reasons[4] == "cannot read: No such file or directory"


def test_tools_lists_the_configured_catalog(tmp_path: Path) -> None:
    config = write_config(tmp_path, 'tools = ["calculator", "ask_user"]\n')
    done = run(
        [TOOLCALLS, "tools", "--config", str(config)], tmp_path, TEMPORAL_ADDRESS=UNREACHABLE
    )
    assert (done.returncode, done.stderr) == (0, "")
    rows = [line.split(maxsplit=3) for line in done.stdout.splitlines()]
    assert [row[:3] for row in rows] == [
        ["calculator", "pure", "-"],
        ["ask_user", "pure", "user.interact"],
    ]
    assert rows[0][3].startswith("Evaluate an arithmetic expression exactly")

    as_json = run(
        [TOOLCALLS, "tools", "--config", str(config), "--json"],
        tmp_path,
        TEMPORAL_ADDRESS=UNREACHABLE,
    )
    assert (as_json.returncode, as_json.stderr) == (0, "")
    definitions = json.loads(as_json.stdout)
    assert definitions == build_catalog(load_config(config)).definitions()
    assert [d["name"] for d in definitions] == ["calculator", "ask_user"]
    for definition in definitions:
        assert definition["description"]
        _assert_strict(definition["input_schema"])

    default = run([TOOLCALLS, "tools", "--json"], tmp_path, TEMPORAL_ADDRESS=UNREACHABLE)
    assert [d["name"] for d in json.loads(default.stdout)] == list(DEFAULT_TOOLS)


def test_tools_prints_each_providers_format(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        'tools = ["calculator", "set_value", "web_search", "shop_api"]\n'
        "[storage]\nallow_write = true\n"
        '[web_search]\nengines = ["wikipedia"]\n'
        '[[http]]\nname = "shop_api"\nbase_url = "https://api.example.com/v1/"\n'
        'allowed_methods = ["GET", "POST"]\n',
    )
    catalog = build_catalog(load_config(config))
    printed = {}
    for format in ("openai", "anthropic", "mcp"):
        done = run(
            [TOOLCALLS, "tools", "--config", str(config), "--format", format],
            tmp_path,
            TEMPORAL_ADDRESS=UNREACHABLE,
        )
        assert (done.returncode, done.stderr) == (0, "")
        printed[format] = json.loads(done.stdout)
        assert printed[format] == catalog.definitions(format)
    names = ["calculator", "set_value", "web_search", "shop_api"]
    for tool in printed["openai"]:
        assert (tool["type"], tool["strict"]) == ("function", True)
        assert strict_problems(tool["parameters"]) == [], tool["name"]
    assert [t["name"] for t in printed["openai"]] == names
    assert [sorted(t) for t in printed["mcp"]] == [["description", "inputSchema", "name"]] * 4
    assert [t["inputSchema"] for t in printed["mcp"]] == [
        t["parameters"] for t in printed["openai"]
    ]
    # --json is the anthropic format, as it always was.
    as_json = run(
        [TOOLCALLS, "tools", "--config", str(config), "--json"],
        tmp_path,
        TEMPORAL_ADDRESS=UNREACHABLE,
    )
    assert json.loads(as_json.stdout) == printed["anthropic"]
    assert [sorted(t) for t in printed["anthropic"]] == [
        ["description", "input_schema", "name"]
    ] * 4
    unknown = run(
        [TOOLCALLS, "tools", "--config", str(config), "--format", "gemini"],
        tmp_path,
        TEMPORAL_ADDRESS=UNREACHABLE,
    )
    assert unknown.returncode == 2
    assert "invalid choice: 'gemini'" in unknown.stderr


def test_tools_exports_a_profile_in_every_format(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        'tools = ["calculator", "current_datetime", "search_tools", "read_tool"]\n'
        '[profiles.small]\ntools = ["calculator", "discovery.*"]\n',
    )
    catalog = build_catalog(load_config(config))
    for format in ("openai", "anthropic", "mcp"):
        done = run(
            [TOOLCALLS, "tools", "--config", str(config), "--profile", "small", "--format", format],
            tmp_path,
            TEMPORAL_ADDRESS=UNREACHABLE,
        )
        assert (done.returncode, done.stderr) == (0, "")
        printed = json.loads(done.stdout)
        assert printed == catalog.definitions(format, "small")
        assert [tool["name"] for tool in printed] == ["calculator", "search_tools", "read_tool"]
    text = run(
        [TOOLCALLS, "tools", "--config", str(config), "--profile", "small"],
        tmp_path,
        TEMPORAL_ADDRESS=UNREACHABLE,
    )
    assert text.stdout.splitlines()[0] == (
        f"profile small (snapshot {catalog.profile_digest('small')})"
    )
    assert "current_datetime" not in text.stdout
    missing = run(
        [TOOLCALLS, "tools", "--config", str(config), "--profile", "big"],
        tmp_path,
        TEMPORAL_ADDRESS=UNREACHABLE,
    )
    assert (missing.returncode, missing.stderr) == (
        2,
        "toolcalls: tools: no profile 'big'; profiles: small\n",
    )


def _assert_strict(schema: Any) -> None:
    """Every object in the schema is closed and requires every one of its properties."""
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            assert schema["additionalProperties"] is False, schema
            assert sorted(schema["required"]) == sorted(schema["properties"]), schema
        for value in schema.values():
            _assert_strict(value)
    elif isinstance(schema, list):
        for value in schema:
            _assert_strict(value)


def _offline(tmp_path: Path) -> dict[str, str]:
    return hermetic_env(tmp_path, TEMPORAL_ADDRESS=UNREACHABLE)

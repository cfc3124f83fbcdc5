"""execute_command and run_shell before anything runs: arguments, resolution, previews, config.

Plans go through the real catalog; previews through the family's ``prepare`` methods, which read
the real files and directories the tests make.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from tests.support.processes import SYSTEM_PATH, call, executable, make_tools
from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.activities.families import BUILTIN_TOOLS
from toolcalls.activities.processes.command_args import (
    MAX_ARG_BYTES,
    MAX_EXEC_BYTES,
    ExecuteCommandArgs,
    RunShellArgs,
)
from toolcalls.activities.processes.commands import ProcessTools
from toolcalls.activities.processes.ledger import ProcessLedger
from toolcalls.worker.config import ConfigError, build_catalog, parse_config
from toolcalls.worker.plugin import build_instances
from toolcalls.workflows.models.call import ErrorCode, PlanInput, ToolError

PYTHON = f"{SYSTEM_PATH.split(':')[0]}/python3"
PYTHON_REAL = os.path.realpath(PYTHON)
CATALOG = Catalog(BUILTIN_TOOLS, CatalogSettings(enabled=["execute_command", "run_shell"]))


def plan_error(tool: str, arguments: dict[str, Any]) -> ToolError:
    outcome = CATALOG.plan(
        PlanInput(tool=tool, arguments=arguments), default_ceiling(), frozenset()
    )
    assert outcome.error is not None, outcome
    return outcome.error


def command(root: Path, argv: list[str], **more: Any) -> ExecuteCommandArgs:
    return ExecuteCommandArgs.model_validate(
        {"argv": argv, "cwd": str(root), "env": [f"PATH={SYSTEM_PATH}"], **more}
    )


async def refusal(tools: ProcessTools, args: ExecuteCommandArgs) -> ApplicationError:
    with pytest.raises(ApplicationError) as info:
        await tools.prepare_execute_command(args, call())
    return info.value


def fixable(error: ApplicationError) -> list[str]:
    details = error.details[0]
    assert isinstance(details, dict)
    return list(details["fixable_args"])


@pytest.mark.parametrize(
    ("arguments", "fixable_args", "message"),
    [
        ({"argv": ["/bin/echo", "a\x00b"]}, ["argv"], "argv[1]: contains a NUL byte"),
        ({"argv": []}, ["argv"], "argv: List should have at least 1 item"),
        ({"argv": [""]}, ["argv"], "argv[0] is empty"),
        ({"env": ["A=x\x00y"]}, ["env"], "contains a NUL byte"),
        ({"env": ["A\x00B=x"]}, ["env"], "contains a NUL byte"),
        ({"env": ["NOEQUALS"]}, ["env"], "is not NAME=value"),
        ({"env": ["=x"]}, ["env"], "is not NAME=value"),
        ({"env": ["A=1", "A=2"]}, ["env"], "A is given twice"),
        ({"cwd": "../.."}, ["cwd"], "'../..' is not an absolute path"),
        ({"cwd": "/tmp/a\x00b"}, ["cwd"], "contains a NUL byte"),
        ({"cwd": "/tmp/a\ud800"}, ["cwd"], "not valid Unicode text"),
        ({"timeout_seconds": 0}, ["timeout_seconds"], "greater than 0"),
        ({"max_output_bytes": -1}, ["max_output_bytes"], "greater than 0"),
        ({"argv": ["/bin/echo", "x" * (MAX_ARG_BYTES + 1)]}, ["argv"], "the limit is 131071"),
        (
            {"argv": ["/bin/echo", *["x" * 100_000] * 3]},
            ["env"],
            f"argv and env together are 300013 bytes; the limit is {MAX_EXEC_BYTES}",
        ),
    ],
)
def test_bad_arguments_are_refused_at_plan(
    arguments: dict[str, Any], fixable_args: list[str], message: str
) -> None:
    base = {"argv": ["/bin/echo"], "cwd": "/tmp", "env": []}
    error = plan_error("execute_command", {**base, **arguments})
    assert error.code is ErrorCode.INVALID_ARGUMENTS
    assert error.fixable_args == fixable_args
    assert message in error.message
    assert error.message.startswith("execute_command: invalid arguments: ")


@pytest.mark.parametrize(
    ("command_text", "message"),
    [("   ", "the command is blank"), ("echo a\x00b", "contains a NUL byte")],
)
def test_bad_shell_commands_are_refused_at_plan(command_text: str, message: str) -> None:
    error = plan_error("run_shell", {"command": command_text})
    assert error.code is ErrorCode.INVALID_ARGUMENTS
    assert error.fixable_args == ["command"]
    assert message in error.message


def test_env_as_an_object_is_normalised_like_the_list_form() -> None:
    from_list = CATALOG.plan(
        PlanInput(
            tool="execute_command",
            arguments={"argv": ["/bin/true"], "cwd": "/tmp", "env": ["B=2", "A=x=y"]},
        ),
        default_ceiling(),
        frozenset(),
    )
    from_object = CATALOG.plan(
        PlanInput(
            tool="execute_command",
            arguments={"argv": ["/bin/true"], "cwd": "/tmp", "env": {"B": "2", "A": "x=y"}},
        ),
        default_ceiling(),
        frozenset(),
    )
    assert from_list.plan is not None
    assert from_object.plan is not None
    assert from_list.plan.arguments["env"] == {"B": "2", "A": "x=y"}
    assert from_list.plan.digest == from_object.plan.digest
    assert from_list.plan.capabilities == ["process.execute"]
    assert from_list.plan.arguments["timeout_seconds"] is None
    assert from_list.plan.arguments["max_output_bytes"] is None


def test_declared_capabilities_and_options() -> None:
    shell = CATALOG.plan(
        PlanInput(tool="run_shell", arguments={"command": "true"}), default_ceiling(), frozenset()
    )
    assert shell.plan is not None
    assert shell.plan.capabilities == ["process.execute", "shell.execute"]
    assert shell.plan.side_effect.value == "write"
    assert shell.plan.prepare
    activity = shell.plan.activity
    assert activity is not None
    assert activity.maximum_attempts == 1
    assert activity.heartbeat is not None
    assert activity.start_to_close.total_seconds() > 300 + 2


async def test_preview_shows_the_resolved_executable_cwd_env_and_limits(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "link").symlink_to(root / "real")
    tools = make_tools(tmp_path, root)
    prepared = await tools.prepare_execute_command(
        command(root / "link", ["python3", "-c", "print(1)"], timeout_seconds=5),
        call(),
    )
    python = PYTHON
    [artifact] = prepared.preview
    assert artifact.kind == "process"
    assert artifact.text is not None
    assert f"cwd:     {root / 'real'}" in artifact.text
    assert f"argv:    {python} -c 'print(1)'" in artifact.text
    assert f"runs:    {PYTHON_REAL}" in artifact.text
    assert f"PATH={SYSTEM_PATH}" in artifact.text
    assert "5 s, then SIGTERM" in artifact.text
    assert "65536 bytes" in artifact.text
    assert prepared.precondition is not None
    assert prepared.precondition["spec"] == {
        "argv": [python, "-c", "print(1)"],
        "cwd": str(root / "real"),
        "env": {"PATH": SYSTEM_PATH},
        "timeout_seconds": 5.0,
        "max_output_bytes": 65536,
    }
    assert artifact.data is not None
    assert artifact.data["spec"] == prepared.precondition["spec"]
    assert artifact.data["executable"] == PYTHON_REAL


async def test_empty_env_is_shown_as_inheriting_nothing(tmp_path: Path) -> None:
    tools = make_tools(tmp_path)
    prepared = await tools.prepare_execute_command(
        ExecuteCommandArgs(argv=["/usr/bin/env"], cwd=str(tmp_path / "root"), env={}), call()
    )
    assert prepared.preview[0].text is not None
    assert "env:     (empty: nothing inherited)" in prepared.preview[0].text


async def test_bare_names_are_looked_up_only_in_the_given_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = make_tools(tmp_path)
    root = tmp_path / "root"
    private = executable(tmp_path / "private" / "only-here", "echo hi")
    # The worker's own PATH finds the program; the command's environment does not.
    monkeypatch.setenv("PATH", f"{private.parent}:{os.environ['PATH']}")
    error = await refusal(tools, command(root, ["only-here"]))
    assert error.type == ErrorCode.INVALID_ARGUMENTS.value
    assert fixable(error) == ["argv", "env"]
    assert "'only-here' not found in the PATH of env" in error.message

    found = await tools.prepare_execute_command(
        command(root, ["only-here"], env=[f"PATH=/nonexistent:{private.parent}"]), call()
    )
    assert found.precondition is not None
    assert found.precondition["spec"]["argv"] == [str(private)]


async def test_relative_path_entries_are_not_searched(tmp_path: Path) -> None:
    tools = make_tools(tmp_path)
    root = tmp_path / "root"
    executable(root / "bin" / "tool", "echo hi")
    for path in ("bin", "", "."):
        error = await refusal(tools, command(root, ["tool"], env=[f"PATH={path}"]))
        assert "only absolute entries are searched" in error.message


async def test_bare_name_without_path_in_env_is_a_clear_error(tmp_path: Path) -> None:
    tools = make_tools(tmp_path)
    error = await refusal(tools, command(tmp_path / "root", ["ls"], env=[]))
    assert error.type == ErrorCode.INVALID_ARGUMENTS.value
    assert fixable(error) == ["argv", "env"]
    assert error.message == (
        "execute_command: argv[0]: 'ls' is a bare name and env has no PATH: give a path, or a "
        "PATH in env"
    )


async def test_explicit_relative_path_is_resolved_against_cwd(tmp_path: Path) -> None:
    tools = make_tools(tmp_path)
    root = tmp_path / "root"
    tool = executable(root / "sub" / "bin" / "tool", "echo hi")
    prepared = await tools.prepare_execute_command(
        command(root / "sub", ["./bin/tool", "x"], env=[]), call()
    )
    assert prepared.precondition is not None
    assert prepared.precondition["spec"]["argv"] == [f"{root / 'sub'}/./bin/tool", "x"]
    assert prepared.precondition["executable"] == str(tool)


async def test_the_executable_must_be_a_regular_executable_file(tmp_path: Path) -> None:
    tools = make_tools(tmp_path)
    root = tmp_path / "root"
    (root / "plain").write_text("echo hi\n", encoding="utf-8")
    (root / "adir").mkdir()
    cases = {
        str(root / "plain"): "not executable",
        str(root / "adir"): "not a regular file",
        str(root / "missing"): "no such file or directory",
        "/dev/null": "not a regular file",
    }
    for path, reason in cases.items():
        error = await refusal(tools, command(root, [path]))
        assert error.message == f"execute_command: argv[0]: {path}: {reason}"
        assert fixable(error) == ["argv"]


async def test_cwd_outside_the_roots_is_refused(tmp_path: Path) -> None:
    tools = make_tools(tmp_path)
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    (root / "file").write_text("", encoding="utf-8")
    cases = {
        str(outside): f"cwd: {outside}: not inside a configured root",
        str(root / "escape"): f"cwd: {root / 'escape'} (resolves to {outside}): not inside",
        f"{root}/../outside": "not inside a configured root",
        str(root / "missing"): "no such file or directory",
        str(root / "file"): "not a directory",
        f"{tmp_path}/root-sibling": "no such file or directory",
    }
    for cwd, message in cases.items():
        error = await refusal(tools, command(Path(cwd), ["/bin/true"]))
        assert message in error.message, error.message
        assert fixable(error) == ["cwd"]


async def test_a_root_given_through_a_link_still_confines(tmp_path: Path) -> None:
    real = tmp_path / "real-root"
    (real / "inside").mkdir(parents=True)
    (tmp_path / "root-link").symlink_to(real)
    tools = make_tools(tmp_path, tmp_path / "root-link")
    prepared = await tools.prepare_execute_command(
        command(tmp_path / "root-link" / "inside", ["/bin/true"]), call()
    )
    assert prepared.precondition is not None
    assert prepared.precondition["spec"]["cwd"] == str(real / "inside")


async def test_deployment_ceilings_bound_the_requested_limits(tmp_path: Path) -> None:
    tools = make_tools(tmp_path, max_timeout_seconds=120, max_output_bytes=1000)
    root = tmp_path / "root"
    error = await refusal(
        tools, command(root, ["/bin/true"], timeout_seconds=121, max_output_bytes=1001)
    )
    assert error.type == ErrorCode.INVALID_ARGUMENTS.value
    assert fixable(error) == ["timeout_seconds", "max_output_bytes"]
    assert error.message == (
        "execute_command: timeout_seconds: 121 is over this deployment's limit of 120; "
        "max_output_bytes: 1001 is over this deployment's limit of 1000"
    )
    within = await tools.prepare_execute_command(
        command(root, ["/bin/true"], timeout_seconds=120, max_output_bytes=1000), call()
    )
    assert within.precondition is not None
    assert within.precondition["spec"]["timeout_seconds"] == 120


async def test_default_limits_are_cut_to_lower_ceilings(tmp_path: Path) -> None:
    root = tmp_path / "root"
    low = make_tools(tmp_path, max_timeout_seconds=30, max_output_bytes=1000)
    cut = await low.prepare_execute_command(command(root, ["/bin/true"]), call())
    assert cut.precondition is not None
    assert cut.precondition["spec"]["timeout_seconds"] == 30
    assert cut.precondition["spec"]["max_output_bytes"] == 1000
    high = make_tools(tmp_path)
    default = await high.prepare_execute_command(command(root, ["/bin/true"]), call())
    assert default.precondition is not None
    assert default.precondition["spec"]["timeout_seconds"] == 60
    assert default.precondition["spec"]["max_output_bytes"] == 65536


async def test_run_shell_preview_uses_the_deployment_shell(tmp_path: Path) -> None:
    tools = make_tools(tmp_path, shell={"env": {"PATH": SYSTEM_PATH, "LANG": "C"}})
    prepared = await tools.prepare_run_shell(RunShellArgs(command="ls | wc -l"), call())
    assert prepared.precondition is not None
    assert prepared.precondition["spec"] == {
        "argv": ["/bin/sh", "-c", "ls | wc -l"],
        "cwd": str(tmp_path / "root"),
        "env": {"PATH": SYSTEM_PATH, "LANG": "C"},
        "timeout_seconds": 60.0,
        "max_output_bytes": 65536,
    }
    assert prepared.preview[0].text is not None
    assert "argv:    /bin/sh -c 'ls | wc -l'" in prepared.preview[0].text


async def test_run_shell_default_env_is_only_the_default_path(tmp_path: Path) -> None:
    tools = make_tools(tmp_path)
    prepared = await tools.prepare_run_shell(RunShellArgs(command="true"), call())
    assert prepared.precondition is not None
    assert prepared.precondition["spec"]["env"] == {"PATH": os.defpath}


async def test_run_shell_with_a_vanished_directory_is_a_configuration_error(
    tmp_path: Path,
) -> None:
    tools = make_tools(tmp_path, shell={"cwd": tmp_path / "gone"})
    with pytest.raises(ApplicationError) as info:
        await tools.prepare_run_shell(RunShellArgs(command="true"), call())
    assert info.value.type == ErrorCode.CONFIGURATION_ERROR.value
    assert info.value.message == (
        f"run_shell: shell.cwd: {tmp_path / 'gone'}: no such file or directory"
    )


def config(tmp_path: Path, **sections: Any) -> dict[str, Any]:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    return {
        "tools": ["execute_command", "run_shell"],
        "state_dir": str(tmp_path / "state"),
        "process": {"roots": [str(root)]},
        "shell": {"cwd": str(root)},
        **sections,
    }


def problems(tmp_path: Path, data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        build_catalog(parse_config(data, "test.toml"), source="test.toml")
    return str(info.value)


def test_a_complete_configuration_builds_the_family_and_its_ledger(tmp_path: Path) -> None:
    parsed = parse_config(config(tmp_path))
    catalog = build_catalog(parsed)
    families = build_instances(parsed, catalog, ["execute_command", "run_shell"])
    tools = families[ProcessTools]
    assert isinstance(tools, ProcessTools)
    assert tools.ledger.directory == tmp_path / "state" / "process-groups"
    assert tools.ledger.directory.is_dir()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"process": {}}, "process.roots: execute_command needs at least one root"),
        ({"process": {"roots": ["rel/dir"]}}, "process.roots.0: 'rel/dir' is not an absolute path"),
        ({"process": {"roots": ["/nonexistent/x"]}}, "process.roots.0: /nonexistent/x: not an"),
        ({"shell": {}}, "shell.cwd: run_shell needs the shell's working directory"),
        ({"shell": {"cwd": "/nonexistent/y"}}, "shell.cwd: /nonexistent/y: no such file"),
        ({"shell": {"cwd": "{root}", "shell": "/bin/nope"}}, "shell.shell: /bin/nope: no such"),
        (
            {"shell": {"cwd": "{root}", "shell": "zsh-not-here"}},
            "shell.shell: 'zsh-not-here' not found in the PATH of shell.env",
        ),
        (
            {"shell": {"cwd": "{root}", "env": {"A": "x\u0000"}}},
            "shell.env: ['A']: a name must be nonempty",
        ),
        (
            {"shell": {"cwd": "{root}", "timeout_seconds": 301}},
            "shell.timeout_seconds: at most 300, not 301",
        ),
        (
            {
                "activities": {
                    "timeouts": {
                        "execute_command": {"start_to_close_seconds": 60, "heartbeat_seconds": 5}
                    }
                }
            },
            "process.max_timeout_seconds: 300 s with a kill grace of 2 s does not fit "
            "execute_command's start_to_close of 60 s (activities.timeouts.execute_command)",
        ),
        (
            {"shell": {"cwd": "{root}", "timeout_seconds": 300, "kill_grace_seconds": 40}},
            "shell.timeout_seconds: 300 s with a kill grace of 40 s does not fit run_shell's "
            "start_to_close of 330 s",
        ),
    ],
)
def test_configuration_problems_name_their_key(
    tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    data = config(tmp_path)
    root = str(tmp_path / "root")
    for section, values in change.items():
        data[section] = {k: root if v == "{root}" else v for k, v in values.items()}
    assert expected in problems(tmp_path, data)


def test_host_resources_are_checked_only_where_the_tools_run(tmp_path: Path) -> None:
    data = config(
        tmp_path,
        process={"roots": ["/on/the/tool/host"]},
        shell={"cwd": "/on/the/tool/host"},
        activities={"task_queues": {"execute_command": "host", "run_shell": "host"}},
    )
    build_catalog(parse_config(data))
    data["worker"] = {"queue": "host"}
    message = problems(tmp_path, data)
    assert "process.roots.0: /on/the/tool/host: not an existing directory" in message
    assert "shell.cwd: /on/the/tool/host: no such file or directory" in message


def test_a_longer_activity_timeout_allows_a_longer_ceiling(tmp_path: Path) -> None:
    data = config(
        tmp_path,
        process={"roots": [str(tmp_path / "root")], "max_timeout_seconds": 900},
        activities={
            "timeouts": {
                "execute_command": {"start_to_close_seconds": 960, "heartbeat_seconds": 10}
            }
        },
    )
    assert "execute_command" in build_catalog(parse_config(data))
    data["activities"]["timeouts"]["execute_command"]["start_to_close_seconds"] = 903
    assert "process.max_timeout_seconds: 900 s" in problems(tmp_path, data)


def test_building_the_family_reaps_the_ledger(tmp_path: Path) -> None:
    ledger = ProcessLedger(tmp_path / "ledger")
    # An entry whose group is long gone: reaping removes it without killing anything.
    (ledger.directory / "999999999").write_text("{}", encoding="ascii")
    make_tools(tmp_path)
    assert list(ledger.directory.iterdir()) == []

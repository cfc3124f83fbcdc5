"""execute_command's environment: variables that load code are refused unless allowed by name.

Plans go through the real catalog, previews and runs through the family with real processes; one
call goes through a real ToolCallWorkflow to show the refusal comes before any approval.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.exceptions import ApplicationError

from tests.support.harness import make_config, run_call, running_worker
from tests.support.processes import SYSTEM_PATH, activity_env, call, make_tools
from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.activities.families import BUILTIN_TOOLS
from toolcalls.activities.processes.code_env import FAMILIES, loads_code
from toolcalls.activities.processes.command_args import (
    ExecuteCommandArgs,
    RunShellArgs,
    execute_command_args,
)
from toolcalls.activities.processes.settings import ProcessSettings
from toolcalls.worker.config import ConfigError, parse_config
from toolcalls.workflows.models.call import CallStatus, ErrorCode, EventKind, PlanInput, PlanOutcome

CODE_LOADING = [
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "LD_BIND_NOW",
    "ld_preload",
    "Ld_Audit",
    "DYLD_INSERT_LIBRARIES",
    "GLIBC_TUNABLES",
    "GCONV_PATH",
    "GETCONF_DIR",
    "MALLOC_TRACE",
    "OPENSSL_CONF",
    "BASH_ENV",
    "ENV",
    "ZDOTDIR",
    "BASH_FUNC_ls%%",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "IFS",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "PYTHONWARNINGS",
    "PYTHONBREAKPOINT",
    "pythonpath",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "NODE_OPTIONS",
    "NODE_PATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "LUA_INIT",
    "LUA_INIT_5_4",
    "LUA_PATH_5_4",
    "PHPRC",
    "DOTNET_STARTUP_HOOKS",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_KEY_0",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_GLOBAL",
    "GIT_EXEC_PATH",
    "GIT_SSH_COMMAND",
    "GIT_TEMPLATE_DIR",
    "EDITOR",
    "PAGER",
    "LESSOPEN",
]
ORDINARY = [
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "PWD",
    "USER",
    "LDFLAGS",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONIOENCODING",
    "GIT_AUTHOR_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_TERMINAL_PROMPT",
    "NODE_ENV",
    "JAVA_HOME",
    "XDG_CONFIG_HOME",
]
"""Needed by ordinary commands, and near misses of the refused names (LDFLAGS, NODE_ENV...)."""


def plan(arguments: dict[str, Any], catalog: Catalog | None = None) -> PlanOutcome:
    catalog = catalog or Catalog(BUILTIN_TOOLS, CatalogSettings(enabled=["execute_command"]))
    return catalog.plan(
        PlanInput(tool="execute_command", arguments=arguments), default_ceiling(), frozenset()
    )


def arguments(*env: str) -> dict[str, Any]:
    return {"argv": ["/bin/true"], "cwd": "/tmp", "env": [f"PATH={SYSTEM_PATH}", *env]}


def allowing(*names: str) -> Catalog:
    """The catalog of a deployment that allows ``names``: it advertises their arguments model."""
    specs = [
        dataclasses.replace(spec, arguments=execute_command_args(names))
        if spec.arguments is ExecuteCommandArgs
        else spec
        for spec in BUILTIN_TOOLS
    ]
    return Catalog(specs, CatalogSettings(enabled=["execute_command"]))


@pytest.mark.parametrize("name", CODE_LOADING)
def test_a_variable_that_loads_code_is_refused_at_plan(name: str) -> None:
    outcome = plan(arguments(f"{name}=/tmp/x"))
    assert outcome.error is not None, outcome
    assert outcome.error.code is ErrorCode.INVALID_ARGUMENTS
    assert outcome.error.fixable_args == ["env"]
    assert f"env: {name} (" in outcome.error.message
    assert "process.allow_env" in outcome.error.message


def test_ordinary_variables_pass_the_plan() -> None:
    outcome = plan(arguments(*(f"{name}=x" for name in ORDINARY if name != "PATH")))
    assert outcome.error is None, outcome.error
    assert [loads_code(name) for name in ORDINARY] == [None] * len(ORDINARY)


def test_every_offending_variable_is_named_once_and_ordinary_ones_are_not() -> None:
    outcome = plan(
        arguments("LANG=C", "LD_PRELOAD=/tmp/x.so", "HOME=/tmp", "NODE_OPTIONS=--require=/x")
    )
    assert outcome.error is not None
    assert outcome.error.message == (
        "execute_command: invalid arguments: env: LD_PRELOAD (dynamic loader), NODE_OPTIONS "
        "(node): refused: such variables make programs load or run code that argv does not "
        "show; remove them (a deployment can allow names in process.allow_env)"
    )


def test_every_family_has_a_reason_and_names_no_variable_twice() -> None:
    seen = [name for family in FAMILIES for name in (*family.names, *family.prefixes)]
    assert len(seen) == len(set(seen))
    assert all(family.why and family.what for family in FAMILIES)
    assert all(name == name.upper() for name in seen)


def test_a_deployment_that_allows_a_name_passes_it_at_plan_and_nothing_else() -> None:
    catalog = allowing("PYTHONPATH")
    assert plan(arguments("PYTHONPATH=/srv/lib"), catalog).error is None
    # Allowed by exact name: another spelling, or another of the family, is still refused.
    for other in ("pythonpath", "PYTHONHOME", "LD_PRELOAD"):
        error = plan(arguments("PYTHONPATH=/srv/lib", f"{other}=/x"), catalog).error
        assert error is not None
        assert f"env: {other} (" in error.message
        assert "PYTHONPATH (" not in error.message


def test_allowing_the_same_names_gives_the_same_model() -> None:
    assert execute_command_args([]) is ExecuteCommandArgs
    assert execute_command_args(["PYTHONPATH", "LD_PRELOAD"]) is execute_command_args(
        ["LD_PRELOAD", "PYTHONPATH"]
    )


@pytest.mark.parametrize("name", ["PYTHON_PATH", "HOME", ""])
def test_allowing_a_name_that_is_never_refused_is_a_configuration_error(
    tmp_path: Path, name: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"process": {"roots": [str(tmp_path)], "allow_env": ["PYTHONPATH", name]}})
    assert str(info.value) == (
        f"configuration: process.allow_env: {name!r}: not refused by execute_command; only "
        "names that load code need allowing"
    )
    assert ProcessSettings(allow_env=["PYTHONPATH", "ld_preload"]).allow_env == [
        "PYTHONPATH",
        "ld_preload",
    ]


def startup_hook(tmp_path: Path) -> tuple[Path, Path]:
    """A PYTHONPATH directory whose ``sitecustomize`` writes a marker: code the argv never names."""
    lib = tmp_path / "lib"
    lib.mkdir()
    marker = tmp_path / "loaded"
    (lib / "sitecustomize.py").write_text(
        f"open({str(marker)!r}, 'w').write('loaded')\n", encoding="utf-8"
    )
    return lib, marker


def python_args(root: Path, lib: Path, model: type[ExecuteCommandArgs]) -> ExecuteCommandArgs:
    return model.model_validate(
        {
            "argv": ["python3", "-c", "print('ran')"],
            "cwd": str(root),
            "env": [f"PATH={SYSTEM_PATH}", f"PYTHONPATH={lib}"],
        }
    )


async def test_the_worker_settings_refuse_what_its_own_deployment_does_not_allow(
    tmp_path: Path,
) -> None:
    # The plan ran with a model that allows PYTHONPATH; this worker's settings do not.
    lib, marker = startup_hook(tmp_path)
    tools = make_tools(tmp_path)
    args = python_args(tmp_path / "root", lib, execute_command_args(["PYTHONPATH"]))
    for step in (tools.prepare_execute_command, tools.execute_command):
        with pytest.raises(ApplicationError) as info:
            await activity_env().run(step, args, call())
        assert info.value.type == ErrorCode.INVALID_ARGUMENTS.value
        assert info.value.details[0]["fixable_args"] == ["env"]
        assert info.value.message.startswith("execute_command: env: PYTHONPATH (python): refused")
    assert not marker.exists()


async def test_an_allowed_variable_runs_and_the_preview_marks_it(tmp_path: Path) -> None:
    lib, marker = startup_hook(tmp_path)
    tools = make_tools(tmp_path, allow_env=["PYTHONPATH"])
    args = python_args(tmp_path / "root", lib, execute_command_args(["PYTHONPATH"]))
    prepared = await tools.prepare_execute_command(args, call())
    [artifact] = prepared.preview
    assert artifact.text is not None
    lines = artifact.text.splitlines()
    assert "env:     [call]: given by the call, not set by the deployment" in lines
    assert f"  [call] PATH={SYSTEM_PATH}" in lines
    assert (
        f"  [call] PYTHONPATH={lib}   <- loads code (python): allowed by process.allow_env" in lines
    )
    assert artifact.data is not None
    assert artifact.data["caller_env"] == ["PATH", "PYTHONPATH"]
    result = await activity_env().run(tools.execute_command, args, call(prepared.precondition))
    assert (result.exit_code, result.stdout) == (0, "ran\n")
    assert marker.read_text(encoding="utf-8") == "loaded"


async def test_a_variable_name_cannot_pass_for_a_line_of_the_preview(tmp_path: Path) -> None:
    tools = make_tools(tmp_path)
    args = ExecuteCommandArgs(
        argv=["/bin/true"], cwd=str(tmp_path / "root"), env={"A\n  [call] B": "1"}
    )
    prepared = await tools.prepare_execute_command(args, call())
    text = prepared.preview[0].text
    assert text is not None
    assert "  [call] 'A\n  [call] B'=1" in text


async def test_run_shell_environment_is_the_deployments_and_unmarked(tmp_path: Path) -> None:
    tools = make_tools(tmp_path, shell={"env": {"PATH": SYSTEM_PATH, "LD_LIBRARY_PATH": "/opt"}})
    prepared = await tools.prepare_run_shell(RunShellArgs(command="true"), call())
    text = prepared.preview[0].text
    assert text is not None
    assert "env:     set by the deployment" in text.splitlines()
    assert "  LD_LIBRARY_PATH=/opt" in text.splitlines()
    assert "[call]" not in text
    data = prepared.preview[0].data
    assert data is not None
    assert data["caller_env"] == []


async def test_a_refused_variable_ends_the_call_at_plan_before_any_approval(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    lib, marker = startup_hook(tmp_path)
    config = make_config(
        task_queue,
        tools=["execute_command"],
        state_dir=str(tmp_path / "state"),
        process={"roots": [str(root)]},
    )
    request = {
        "argv": ["python3", "-c", "print('ran')"],
        "cwd": str(root),
        "env": [f"PATH={SYSTEM_PATH}", f"PYTHONPATH={lib}", f"LD_PRELOAD={lib}/x.so"],
    }
    async with running_worker(client, config):
        result = await run_call(client, task_queue, "execute_command", request)
    assert result.status is CallStatus.FAILED
    assert result.error is not None
    assert result.error.code is ErrorCode.INVALID_ARGUMENTS
    assert result.error.fixable_args == ["env"]
    assert "env: PYTHONPATH (python), LD_PRELOAD (dynamic loader): refused" in result.error.message
    kinds = [event.kind for event in result.events]
    assert EventKind.PLANNED not in kinds
    assert EventKind.APPROVAL_REQUESTED not in kinds
    assert not marker.exists()


async def test_a_deployment_allowing_a_name_runs_the_call_with_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    # The deployment's own configuration advertises the allowing model (the family's advertise),
    # so the name passes plan, the call runs, and the hook it names loads.
    root = tmp_path / "root"
    root.mkdir()
    lib, marker = startup_hook(tmp_path)
    config = make_config(
        task_queue,
        tools=["execute_command"],
        state_dir=str(tmp_path / "state"),
        process={"roots": [str(root)], "allow_env": ["PYTHONPATH"]},
        ceiling={"rules": {"process.execute": "allow"}},
    )
    request = {
        "argv": ["python3", "-c", "print('ran')"],
        "cwd": str(root),
        "env": [f"PATH={SYSTEM_PATH}", f"PYTHONPATH={lib}"],
    }
    async with running_worker(client, config):
        result = await run_call(client, task_queue, "execute_command", request)
    assert result.status is CallStatus.COMPLETED, result.error
    assert result.output is not None
    assert result.output["stdout"] == "ran\n"
    assert marker.read_text() == "loaded"

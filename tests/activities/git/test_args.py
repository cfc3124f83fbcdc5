"""``git``'s arguments, capabilities, schema and configuration: refused at plan, before any policy.

The plan here is the catalog's own ``plan`` (what the plan activity runs) on the deployment's
catalog, so a refusal shown here is one that ends a call before authorization.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from tests.support.processes import executable
from toolcalls.activities.base import CallContext
from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.processes.git import GitArgs, GitReadArgs, GitTools
from toolcalls.activities.processes.settings import GitSettings
from toolcalls.worker.config import Config, ConfigError, build_catalog, parse_config
from toolcalls.workflows.models.call import CallPlan, ErrorCode, PlanInput, ToolError


def config(tmp_path: Path, **git: Any) -> Config:
    return parse_config(
        {
            "tools": ["git"],
            "state_dir": str(tmp_path / "state"),
            "git": {"cwd": str(tmp_path), **git},
        }
    )


def plan(cfg: Config, arguments: dict[str, Any]) -> CallPlan | ToolError:
    outcome = build_catalog(cfg).plan(
        PlanInput(tool="git", arguments=arguments), default_ceiling(), frozenset()
    )
    result = outcome.plan or outcome.error
    assert result is not None
    return result


def refusal(cfg: Config, arguments: dict[str, Any]) -> ToolError:
    outcome = plan(cfg, arguments)
    assert isinstance(outcome, ToolError), outcome
    assert outcome.code is ErrorCode.INVALID_ARGUMENTS
    return outcome


@pytest.mark.parametrize(
    ("arguments", "fixable", "reason"),
    [
        ({"operation": "status", "message": "hi"}, ["message"], "status does not take message"),
        (
            {"operation": "status", "revision": "HEAD"},
            ["revision"],
            "status does not take revision",
        ),
        ({"operation": "status", "staged": True}, ["staged"], "status does not take staged"),
        ({"operation": "status", "max_count": 3}, ["max_count"], "status does not take max_count"),
        ({"operation": "diff", "max_count": 3}, ["max_count"], "diff does not take max_count"),
        ({"operation": "log", "staged": True}, ["staged"], "log does not take staged"),
        ({"operation": "show", "message": "m"}, ["message"], "show does not take message"),
        ({"operation": "commit"}, ["message"], "commit needs message"),
        ({"operation": "commit", "message": " \n\t"}, ["message"], "message is blank"),
        (
            {"operation": "commit", "message": "m", "paths": ["a"]},
            ["paths"],
            "commit does not take paths",
        ),
        ({"operation": "add"}, ["paths"], "add needs paths"),
        ({"operation": "add", "paths": []}, ["paths"], "add needs paths"),
        ({"operation": "add", "paths": ["a"], "revision": "HEAD"}, ["revision"], "add does not"),
        ({"operation": "log", "max_count": 0}, ["max_count"], "greater than or equal to 1"),
        ({"operation": "log", "max_count": 101}, ["max_count"], "less than or equal to 100"),
        ({"operation": "status", "paths": ["/etc/passwd"]}, ["paths"], "must be relative"),
        ({"operation": "add", "paths": ["a/../../x"]}, ["paths"], "must not contain '..'"),
        ({"operation": "diff", "paths": [".."]}, ["paths"], "must not contain '..'"),
        ({"operation": "add", "paths": ["a\x00b"]}, ["paths"], "NUL"),
        ({"operation": "diff", "paths": [""]}, ["paths"], "a path is empty"),
        ({"operation": "status", "paths": ["a\ud800"]}, ["paths"], "not valid Unicode text"),
        ({"operation": "log", "revision": "a\ud800"}, ["revision"], "not valid Unicode text"),
        ({"operation": "diff", "revision": "--output=/tmp/x"}, ["revision"], "start with '-'"),
        ({"operation": "log", "revision": "-p"}, ["revision"], "start with '-'"),
        ({"operation": "show", "revision": "HEAD -p"}, ["revision"], "whitespace"),
        ({"operation": "show", "revision": "HEAD\n--output=x"}, ["revision"], "whitespace"),
        ({"operation": "show", "revision": ""}, ["revision"], "revision is empty"),
        ({"operation": "show", "revision": "a" * 257}, ["revision"], "longer than 256"),
        ({"operation": "commit", "message": "a\x00b"}, ["message"], "NUL"),
        ({"operation": "push"}, ["operation"], "'status', 'diff', 'log', 'show', 'add' or"),
        ({"operation": "status", "flags": ["-x"]}, ["flags"], "Extra inputs are not permitted"),
    ],
)
def test_unsupported_calls_end_at_plan(
    tmp_path: Path, arguments: dict[str, Any], fixable: list[str], reason: str
) -> None:
    error = refusal(config(tmp_path, allow_write=True), arguments)
    assert error.fixable_args == fixable
    assert reason in error.message
    assert error.message.startswith("git: invalid arguments: ")


def test_every_bad_path_is_named_at_once(tmp_path: Path) -> None:
    error = refusal(
        config(tmp_path, allow_write=True),
        {"operation": "add", "paths": ["ok", "/abs", "x/../y", "fine/too"]},
    )
    assert error.fixable_args == ["paths"]
    assert "'/abs': must be relative" in error.message
    assert "'x/../y': must not contain '..'" in error.message
    assert "'ok'" not in error.message


def test_several_problems_are_all_fixable(tmp_path: Path) -> None:
    error = refusal(
        config(tmp_path, allow_write=True),
        {"operation": "status", "revision": "HEAD", "message": "m", "staged": True},
    )
    assert error.fixable_args == ["revision", "staged", "message"]


@pytest.mark.parametrize(
    ("arguments", "capabilities"),
    [
        ({"operation": "status"}, ["git.read", "process.execute"]),
        (
            {"operation": "diff", "staged": True, "revision": "HEAD~1"},
            ["git.read", "process.execute"],
        ),
        ({"operation": "log", "max_count": 100, "paths": ["a b"]}, ["git.read", "process.execute"]),
        ({"operation": "show", "revision": "v1.0:src/a.py"}, ["git.read", "process.execute"]),
        ({"operation": "add", "paths": ["a", ".", "dir/"]}, ["git.write", "process.execute"]),
        (
            {"operation": "commit", "message": "-m looks like an option"},
            ["git.write", "process.execute"],
        ),
    ],
)
def test_capabilities_follow_the_operation(
    tmp_path: Path, arguments: dict[str, Any], capabilities: list[str]
) -> None:
    planned = plan(config(tmp_path, allow_write=True), arguments)
    assert isinstance(planned, CallPlan), planned
    assert planned.capabilities == capabilities
    assert planned.side_effect.value == "write"
    assert planned.prepare is True
    assert planned.activity is not None
    assert planned.activity.maximum_attempts == 1
    assert planned.activity.heartbeat is not None


def test_null_means_the_default_and_defaults_are_not_options(tmp_path: Path) -> None:
    planned = plan(
        config(tmp_path),
        {
            "operation": "status",
            "paths": None,
            "revision": None,
            "staged": None,
            "message": None,
            "max_count": None,
        },
    )
    assert isinstance(planned, CallPlan)
    assert planned.arguments == {
        "operation": "status",
        "paths": None,
        "revision": None,
        "staged": False,
        "message": None,
        "max_count": 10,
    }
    # The normalised arguments (every field present) validate again, as execute does.
    assert GitReadArgs.model_validate(planned.arguments).operation == "status"


def test_without_allow_write_add_and_commit_do_not_exist(tmp_path: Path) -> None:
    read_only = config(tmp_path)
    (definition,) = build_catalog(read_only).definitions()
    operation = definition["input_schema"]["properties"]["operation"]
    assert operation["enum"] == ["status", "diff", "log", "show"]
    assert "add" not in definition["description"].split()
    for arguments in (
        {"operation": "add", "paths": ["a"]},
        {"operation": "commit", "message": "m"},
    ):
        error = refusal(read_only, arguments)
        assert error.fixable_args == ["operation"]
        assert "'status', 'diff', 'log' or 'show'" in error.message
    (writable,) = build_catalog(config(tmp_path, allow_write=True)).definitions()
    assert writable["input_schema"]["properties"]["operation"]["enum"] == [
        "status",
        "diff",
        "log",
        "show",
        "add",
        "commit",
    ]
    assert "commit (all staged changes" in writable["description"]


async def test_the_family_refuses_writes_when_the_deployment_does(tmp_path: Path) -> None:
    """Even handed the writable model directly, a read-only ``GitTools`` does not run add."""
    tools = GitTools(GitSettings(cwd=tmp_path))
    context = CallContext("wf", "c", "wf:c", None, None)
    for method in (tools.git, tools.prepare_git):
        with pytest.raises(ApplicationError) as info:
            await method(GitArgs(operation="add", paths=["a"]), context)
        assert info.value.type == ErrorCode.INVALID_ARGUMENTS.value
        assert info.value.details[0]["fixable_args"] == ["operation"]
        assert info.value.message == (
            "git: add: writing is disabled in this deployment (use status, diff, log or show)"
        )


@pytest.mark.parametrize(
    ("git", "problem"),
    [
        ({"cwd": None}, "git.cwd: git needs the repository directory"),
        ({"cwd": "relative/repo"}, "git.cwd: relative/repo is not an absolute path"),
        (
            {"cwd": "/no/such/repository"},
            "git.cwd: /no/such/repository is not an existing directory",
        ),
        ({"executable": "no-such-git-binary"}, "git.executable: 'no-such-git-binary' is not an"),
        ({"executable": "/etc/passwd"}, "git.executable: '/etc/passwd' is not an executable file"),
        (
            {"env": {"LANG": "C"}},
            "git.executable: 'git' is not an executable file (git.env has no PATH)",
        ),
        ({"env": {"PATH": "/usr/bin", "GIT_DIR": "/x"}}, "git.env.GIT_DIR: git's variables"),
        ({"env": {"PATH": "/usr/bin", "git_exec_path": "/x"}}, "git.env.git_exec_path:"),
        ({"timeout_seconds": 301}, "git.timeout_seconds: at most 300"),
        ({"kill_grace_seconds": 11}, "git.kill_grace_seconds: at most 10"),
        ({"max_output_bytes": 2_000_000}, "git.max_output_bytes: at most 1048576"),
    ],
)
def test_configuration_problems_name_their_key(
    tmp_path: Path, git: dict[str, Any], problem: str
) -> None:
    section = {key: value for key, value in {"cwd": str(tmp_path), **git}.items() if value}
    data: dict[str, Any] = {"tools": ["git"], "state_dir": str(tmp_path), "git": section}
    with pytest.raises(ConfigError) as info:
        build_catalog(parse_config(data), source="deploy.toml")
    assert str(info.value).startswith("deploy.toml: ")
    assert problem in str(info.value)


def test_a_worker_that_does_not_run_git_does_not_need_the_repository(tmp_path: Path) -> None:
    data = {
        "tools": ["git"],
        "git": {"cwd": "/on/the/git/host/only", "executable": "/on/the/git/host/git"},
        "activities": {"task_queues": {"git": "git-host"}},
    }
    assert build_catalog(parse_config(data)).names == ["git"]
    # Still an error on the host that runs it.
    on_host = {**data, "worker": {"queue": "git-host"}}
    with pytest.raises(ConfigError, match=r"git\.cwd: /on/the/git/host/only is not an existing"):
        build_catalog(parse_config(on_host))


def test_an_explicit_executable_is_resolved_to_an_absolute_path(tmp_path: Path) -> None:
    wrapper = executable(tmp_path / "bin" / "my-git", 'exec git "$@"')
    tools = GitTools(GitSettings(cwd=tmp_path, executable=str(wrapper)))
    assert tools.executable == str(wrapper)
    found = GitTools(
        GitSettings(cwd=tmp_path, env={"PATH": str(tmp_path / "bin")}, executable="my-git")
    )
    assert found.executable == str(wrapper)
    with pytest.raises(ValueError, match=r"git\.env\.GIT_WORK_TREE"):
        GitTools(GitSettings(cwd=tmp_path, env={"PATH": "/usr/bin", "GIT_WORK_TREE": "/"}))

"""What ``toolcalls --help``, ``COMMAND --help``, ``--version`` and usage errors tell a person."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

from tests.worker.support import TOOLCALLS, one_line, run
from toolcalls.worker import cli_help
from toolcalls.worker.cli_parser import _parser

COMMANDS = list(cli_help.COMMANDS)


def help_of(*command: str) -> str:
    """``toolcalls COMMAND --help`` as the parser prints it (the subprocess tests below check
    that the real command prints the same parser's text)."""
    parser = _parser()
    for name in command:
        parser = next(
            action.choices[name]
            for action in parser._actions
            if isinstance(action.choices, dict) and name in action.choices
        )
    return parser.format_help()


def test_the_command_list_names_every_command_with_its_line(tmp_path: Path) -> None:
    done = run([TOOLCALLS, "--help"], tmp_path)
    assert done.returncode == 0
    for name in COMMANDS:
        assert re.search(rf"^    {re.escape(name)}\s+\S", done.stdout, re.MULTILINE), name
    assert "TOOLCALLS_CONFIG" in done.stdout
    assert "exit status: 0 success, 1 " in done.stdout


@pytest.mark.parametrize(
    "command",
    [
        *[(name,) for name in COMMANDS],
        ("grants", "list"),
        ("grants", "revoke"),
        ("connections", "list"),
        ("connections", "revoke"),
        ("policy", "test"),
    ],
)
def test_every_command_says_what_it_does_and_gives_an_example(command: tuple[str, ...]) -> None:
    text = help_of(*command)
    usage, description = text.split("\n\n")[:2]
    assert usage.startswith(f"usage: toolcalls {' '.join(command)}")
    assert "\n" not in description.strip(), description
    assert len(description) > 20
    example = text.split("\nexample:\n", 1)[1]
    assert re.search(rf"^  (.*\| )?toolcalls {' '.join(command)}\b", example, re.MULTILINE)
    if "--config" in text:
        options = text.split("\noptions:\n", 1)[1]
        config_help = options.split("  --config FILE", 1)[1].split("\n  -", 1)[0]
        assert "$TOOLCALLS_CONFIG" in config_help, config_help


def test_tool_and_workflow_id_are_explained() -> None:
    assert "TOOL                  the tool's name, as `toolcalls tools` lists them" in help_of(
        "call"
    )
    for command in ("show", "approve", "deny", "answer"):
        text = " ".join(help_of(command).split())
        assert "WORKFLOW_ID the call's workflow id, as `call --no-wait` printed it" in text


def test_version(tmp_path: Path) -> None:
    done = run([TOOLCALLS, "--version"], tmp_path)
    assert done.returncode == 0
    assert done.stdout == f"toolcalls {importlib.metadata.version('toolcalls')}\n"


def test_a_missing_subcommand_names_the_ones_that_exist(tmp_path: Path) -> None:
    done = run([TOOLCALLS, "grants"], tmp_path)
    assert done.returncode == 2
    usage, reason = done.stderr.strip().split("\n")
    assert usage == "usage: toolcalls grants [-h] COMMAND ..."
    assert reason == "toolcalls grants: choose a command: list, revoke"


def test_the_inbox_usage_shows_hash_password_as_a_second_form(tmp_path: Path) -> None:
    done = run([TOOLCALLS, "inbox", "--help"], tmp_path)
    assert done.returncode == 0
    usage = done.stdout.split("\n\n", 1)[0]
    assert "{hash-password}" not in done.stdout
    assert usage.splitlines()[-1] == "       toolcalls inbox hash-password < PASSWORD_FILE"
    assert "hash-password" not in " ".join(usage.splitlines()[:-1])


def test_the_real_command_prints_the_parsers_help(tmp_path: Path) -> None:
    done = run([TOOLCALLS, "call", "--help"], tmp_path, COLUMNS="80")
    assert done.returncode == 0
    assert " ".join(done.stdout.split()) == " ".join(help_of("call").split())
    assert one_line(done.stdout.split("\n\n")[1]) == cli_help.COMMANDS["call"].line

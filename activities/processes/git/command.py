"""What ``git`` runs: each operation's argv, and the switches that keep repository config inert.

Repository configuration can name programs for git to run: hooks, ``core.fsmonitor``, filter
drivers, diff drivers and textconv, pagers, editors, ssh commands, credential helpers, signature
verifiers, transports that a partial clone's lazy fetch would use. Command-line configuration
beats every file, so each of those gets a harmless value here (``-c`` options, and for filter
drivers, whose names are free text, ``GIT_CONFIG_KEY_<n>`` variables); options on the operations
turn off external diff, textconv, signature display and submodule recursion; the environment drops
system and global configuration and every prompt. Paths go after ``--`` as ``:(literal)``
pathspecs and revisions after ``--end-of-options``, so neither can become an option or a glob.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from toolcalls.activities.processes.git.args import GitCall
from toolcalls.activities.processes.settings import GitSettings

EMPTY_HOME = "/nonexistent"
"""``HOME`` and ``XDG_CONFIG_HOME`` for git: a fixed path with nothing in it, so the approved
environment is the same on every worker (a per-process temporary directory would not be)."""

SAFE_ENV: Mapping[str, str] = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "false",
    "HOME": EMPTY_HOME,
    "XDG_CONFIG_HOME": EMPTY_HOME,
}
"""Always set, whatever the deployment's ``git.env`` says."""

SAFE_CONFIG: Sequence[tuple[str, str]] = (
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("credential.helper", ""),
    ("commit.gpgSign", "false"),
    ("log.showSignature", "false"),
    # Empty makes git fail rather than run anything if an external diff were ever allowed;
    # every diffing operation also passes --no-ext-diff.
    ("diff.external", ""),
    # None of the operations needs a transport; a partial clone's lazy fetch would use one
    # (and with it ssh commands, credential helpers, ext:: programs).
    ("protocol.allow", "never"),
    ("protocol.ext.allow", "never"),
    ("protocol.file.allow", "never"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    # Auto maintenance after a commit detaches a gc that would outlive the process group.
    ("maintenance.auto", "false"),
    ("gc.auto", "0"),
    ("color.ui", "never"),
    # A command's own colour setting beats color.ui; status and commit have no --no-color.
    ("color.status", "never"),
    ("color.advice", "never"),
)
"""``-c`` overrides before every operation."""

_FILTER_KEYS: Sequence[tuple[str, str]] = (
    ("clean", ""),
    ("smudge", ""),
    ("process", ""),
    ("required", "false"),
)
"""An empty command is no filter at all; ``required`` would otherwise make that an error."""

FILTER_LISTING = ("config", "--null", "--name-only", "--get-regexp", r"^filter\.")
"""Lists the repository's filter driver keys (includes followed). Reading config runs nothing."""

_NO_EXTERNAL_DIFF = ("--no-color", "--no-ext-diff", "--no-textconv", "--submodule=short")
_NO_SIGNATURES = ("--no-show-signature", "--pretty=medium")
# ``dirty`` still reports a submodule whose commit changed, without running git inside it.
_NO_SUBMODULE_WORKTREES = "--ignore-submodules=dirty"


def env_problems(env: Mapping[str, str] | None) -> list[str]:
    """Deployment variables the tool refuses: git's own, which would change what runs."""
    return [
        f"git.env.{key}: git's variables are set by the tool"
        for key in sorted(env or {})
        if key.upper().startswith("GIT_")
    ]


def environment(settings: GitSettings) -> dict[str, str]:
    """The deployment's environment with the safety variables and the commit identity on top."""
    env = dict(settings.env) if settings.env is not None else {"PATH": os.defpath}
    env.update(SAFE_ENV)
    env.update(
        GIT_AUTHOR_NAME=settings.author_name,
        GIT_AUTHOR_EMAIL=settings.author_email,
        GIT_COMMITTER_NAME=settings.author_name,
        GIT_COMMITTER_EMAIL=settings.author_email,
    )
    return env


def filter_drivers(listing: str) -> list[str]:
    """Driver names from ``FILTER_LISTING``'s output (``filter.<name>.<key>`` NUL-separated)."""
    names = set()
    for key in listing.split("\0"):
        driver, dot, _ = key.removeprefix("filter.").rpartition(".")
        if key.startswith("filter.") and dot and driver:
            names.add(driver)
    return sorted(names)


def filter_overrides(drivers: Sequence[str]) -> dict[str, str]:
    """Variables that blank every listed driver's commands (as ``-c`` would, for any name)."""
    env: dict[str, str] = {}
    entries = [(f"filter.{d}.{key}", value) for d in drivers for key, value in _FILTER_KEYS]
    if entries:
        env["GIT_CONFIG_COUNT"] = str(len(entries))
    for index, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def global_options() -> list[str]:
    """Options before the subcommand: no pager, and every ``SAFE_CONFIG`` override."""
    options = ["--no-pager"]
    for key, value in SAFE_CONFIG:
        options += ["-c", f"{key}={value}"]
    return options


def _literal(paths: Sequence[str] | None) -> list[str]:
    return [f":(literal){path}" for path in paths or ()]


def operation_argv(args: GitCall) -> list[str]:
    """The subcommand and its arguments for one validated call."""
    paths = _literal(args.paths)
    match args.operation:
        case "status":
            return ["status", "--short", "--branch", _NO_SUBMODULE_WORKTREES, "--", *paths]
        case "diff":
            staged = ["--cached"] if args.staged else []
            revision = [args.revision] if args.revision else []
            return [
                "diff",
                *_NO_EXTERNAL_DIFF,
                _NO_SUBMODULE_WORKTREES,
                *staged,
                "--end-of-options",
                *revision,
                "--",
                *paths,
            ]
        case "log":
            return [
                "log",
                "--no-color",
                *_NO_SIGNATURES,
                f"--max-count={args.max_count}",
                "--end-of-options",
                args.revision or "HEAD",
                "--",
                *paths,
            ]
        case "show":
            return [
                "show",
                *_NO_EXTERNAL_DIFF,
                *_NO_SIGNATURES,
                "--end-of-options",
                args.revision or "HEAD",
                "--",
                *paths,
            ]
        case "add":
            return ["add", "--all", "--", *paths]
        case "commit":
            assert args.message is not None
            message = f"--message={args.message}"
            return ["commit", "--no-verify", "--no-gpg-sign", "--no-edit", message]
    raise AssertionError(f"unknown git operation {args.operation!r}")

"""Repository configuration that names programs: none of them runs through the ``git`` tool.

Each hostile setting points at a script that leaves a marker when it runs. Where git would run it
during one of the tool's operations, a control run with plain git shows the marker appearing,
so a passing test means the tool's switches stopped it, not that git never needed it.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.gitrepo import Repo, git_tools, marker_script, ran, run_git


@dataclass
class Lab:
    """A repository with one commit, and the scripts and markers of hostile settings."""

    repo: Repo
    bin: Path
    markers: Path

    def program(self, name: str, *, passthrough: bool = False) -> str:
        return marker_script(self.bin, self.markers, name, passthrough=passthrough)

    def ran(self) -> list[str]:
        return ran(self.markers)

    def reset(self) -> None:
        shutil.rmtree(self.markers, ignore_errors=True)
        self.markers.mkdir()


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    repo = Repo.init(tmp_path / "repo")
    repo.commit("first", **{"a.txt": "a\n", "b.bin": "b\n", "d.dat": "d\n"})
    lab = Lab(repo, tmp_path / "bin", tmp_path / "markers")
    lab.markers.mkdir()
    return lab


async def every_operation(lab: Lab, **settings: Any) -> None:
    """All six operations through the tool on a changed file; each must succeed."""
    lab.repo.write("a.txt", "a\nchanged\n")
    tools = git_tools(lab.repo, **settings)
    for arguments in (
        {"operation": "status"},
        {"operation": "diff"},
        {"operation": "add", "paths": ["a.txt"]},
        {"operation": "diff", "staged": True},
        {"operation": "commit", "message": "through the tool"},
        {"operation": "log", "max_count": 1},
        {"operation": "show"},
    ):
        result = await run_git(tools, **arguments)
        assert result.exit_code == 0, (arguments, result.stderr)
    assert lab.repo.git("log", "-1", "--format=%s") == "through the tool\n"


async def test_fsmonitor_does_not_run(lab: Lab) -> None:
    lab.repo.config("core.fsmonitor", lab.program("fsmonitor"))
    lab.repo.run("status")
    assert lab.ran() == ["fsmonitor"]
    lab.reset()
    await every_operation(lab)
    assert lab.ran() == []


HOOKS = (
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "reference-transaction",
    "post-index-change",
)


@pytest.mark.parametrize("where", [".git/hooks", "hooks"])
async def test_no_hook_runs(lab: Lab, where: str) -> None:
    if where == "hooks":
        lab.repo.config("core.hooksPath", "hooks")
    for hook in HOOKS:
        marker_script(lab.repo.path / where, lab.markers, hook, passthrough=False)
    lab.repo.write("a.txt", "control\n")
    lab.repo.git("add", "a.txt")
    lab.repo.git("commit", "-q", "-m", "control")
    assert lab.ran() == sorted(HOOKS)
    lab.reset()
    await every_operation(lab)
    assert lab.ran() == []


def configure_filters(lab: Lab) -> None:
    """Filter drivers for every tracked file, one with ``=`` in its name, one from an include."""
    repo = lab.repo
    repo.commit(
        "attributes", **{".gitattributes": "*.txt filter=x\n*.dat filter=y=z\n*.bin filter=in.c\n"}
    )
    for key in ("clean", "smudge"):
        repo.config(f"filter.x.{key}", lab.program(f"x-{key}", passthrough=True))
    repo.config("filter.x.required", "true")
    repo.config("filter.y=z.process", lab.program("y=z-process"))
    repo.config("filter.y=z.required", "true")
    included = repo.path.parent / "included.config"
    included.write_text(
        f'[filter "in.c"]\n\tclean = {lab.program("in.c-clean", passthrough=True)}\n'
    )
    repo.config("include.path", str(included))


async def test_filter_drivers_do_not_run_and_content_is_staged_as_is(lab: Lab) -> None:
    configure_filters(lab)
    repo = lab.repo
    # Every file changed, so plain git must run each driver: an unchanged file's clean filter
    # runs only when git cannot trust its index entry's timestamps ("racily clean").
    repo.write("a.txt", "a\nchanged\n")
    repo.write("d.dat", "d\nchanged\n")
    repo.write("b.bin", "b\nchanged\n")
    repo.run("diff")
    repo.run("add", "--all")
    assert {"x-clean", "y=z-process", "in.c-clean"} <= set(lab.ran())
    repo.git("reset", "-q")
    lab.reset()
    tools = git_tools(repo)
    for arguments in (
        {"operation": "status"},
        {"operation": "diff"},
        {"operation": "add", "paths": ["d.dat", "b.bin"]},
    ):
        result = await run_git(tools, **arguments)
        assert result.exit_code == 0, (arguments, result.stderr)
    await every_operation(lab)
    assert lab.ran() == []
    assert repo.git("show", "HEAD:d.dat") == "d\nchanged\n"
    assert repo.git("show", "HEAD:a.txt") == "a\nchanged\n"


async def test_diff_drivers_external_diff_and_textconv_do_not_run(lab: Lab) -> None:
    repo = lab.repo
    repo.commit("attributes", **{".gitattributes": "*.txt diff=tc\n*.bin diff=ext\n"})
    repo.config("diff.tc.textconv", lab.program("textconv", passthrough=True))
    repo.config("diff.ext.command", lab.program("diff-command"))
    repo.config("diff.external", lab.program("diff-external"))
    repo.write("a.txt", "a\nchanged\n")
    repo.write("b.bin", "b\nchanged\n")
    repo.run("diff")
    repo.run("diff", "--no-ext-diff")
    assert lab.ran() == ["diff-command", "diff-external", "textconv"]
    lab.reset()
    tools = git_tools(repo)
    diff = await run_git(tools, operation="diff")
    assert "+changed" in diff.stdout
    assert diff.stdout.count("diff --git") == 2
    await run_git(tools, operation="add", paths=["a.txt", "b.bin"])
    await run_git(tools, operation="commit", message="drivers")
    show = await run_git(tools, operation="show")
    assert show.stdout.count("+changed") == 2
    assert lab.ran() == []


def signed_commit(repo: Repo) -> str:
    """A commit carrying a (fake) signature, so verifying it runs ``gpg.program``."""
    tree = repo.git("write-tree").strip()
    parent = repo.rev("HEAD")
    body = (
        f"tree {tree}\nparent {parent}\nauthor Test <test@example.com> 1577934245 +0000\n"
        "committer Test <test@example.com> 1577934245 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    path = repo.path.parent / "commit-object"
    path.write_text(body, encoding="utf-8")
    commit = repo.git("hash-object", "-t", "commit", "-w", str(path)).strip()
    repo.git("update-ref", "HEAD", commit)
    return commit


async def test_signatures_are_neither_made_nor_verified(lab: Lab) -> None:
    repo = lab.repo
    commit = signed_commit(repo)
    repo.config("gpg.program", lab.program("gpg"))
    repo.config("log.showSignature", "true")
    repo.config("commit.gpgSign", "true")
    repo.run("log", "-1")
    assert lab.ran() == ["gpg"]
    lab.reset()
    repo.config("log.showSignature", "false")
    repo.config("format.pretty", "format:%h %G?")
    repo.run("log", "-1")
    assert lab.ran() == ["gpg"]
    lab.reset()
    repo.config("log.showSignature", "true")
    tools = git_tools(repo)
    log = await run_git(tools, operation="log", max_count=1)
    assert log.stdout.startswith(f"commit {commit}\nAuthor: Test <test@example.com>\n")
    show = await run_git(tools, operation="show")
    assert show.stdout.startswith(f"commit {commit}\n")
    await every_operation(lab)
    assert lab.ran() == []
    assert "gpgsig" not in repo.git("cat-file", "commit", "HEAD")


async def test_pagers_editors_and_askpass_never_run(lab: Lab) -> None:
    """Pagers need a terminal and editors a message-less commit, which the tool never gives git;
    this guards against a change that would let either reach it."""
    repo = lab.repo
    for key in ("core.pager", "pager.status", "pager.log", "pager.show", "pager.diff"):
        repo.config(key, lab.program(key.replace(".", "-")))
    for key in ("core.editor", "sequence.editor", "core.askPass"):
        repo.config(key, lab.program(key.replace(".", "-")))
    await every_operation(lab)
    assert lab.ran() == []


async def test_the_deployment_home_cannot_bring_global_configuration(
    lab: Lab, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[core]\n\tfsmonitor = {lab.program('global-fsmonitor')}\n")
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "attributes").write_text("*.txt diff=home\n")
    env = {"PATH": os.defpath, "HOME": str(home)}
    plain = lab.repo.run("status", HOME=str(home), GIT_CONFIG_GLOBAL=str(home / ".gitconfig"))
    assert plain.returncode == 0
    assert lab.ran() == ["global-fsmonitor"]
    lab.reset()
    await every_operation(lab, env=env)
    assert lab.ran() == []


async def test_repository_colour_settings_put_no_escape_sequences_in_the_output(lab: Lab) -> None:
    repo = lab.repo
    for key in ("ui", "status", "advice", "diff", "decorate", "branch"):
        repo.config(f"color.{key}", "always")
    repo.write(".gitignore", "ignored\n")
    repo.write("ignored", "x\n")
    assert "\x1b[" in repo.git("status", "--short", "--branch")  # the control: plain git colours
    repo.write("a.txt", "a\nchanged\n")
    tools = git_tools(repo)
    outputs = [
        await run_git(tools, operation="status"),
        await run_git(tools, operation="add", paths=["ignored"]),  # refused, with hints
        await run_git(tools, operation="add", paths=["a.txt"]),
        await run_git(tools, operation="diff", staged=True),
        await run_git(tools, operation="commit", message="coloured"),
        await run_git(tools, operation="commit", message="nothing staged"),  # prints a status
        await run_git(tools, operation="log", max_count=1),
        await run_git(tools, operation="show"),
    ]
    assert "hint:" in outputs[1].stderr
    assert "Untracked files" in outputs[5].stdout
    assert [(r.stdout, r.stderr) for r in outputs if "\x1b" in r.stdout + r.stderr] == []

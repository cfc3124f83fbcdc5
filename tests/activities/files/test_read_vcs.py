"""``list_files`` and ``search_files`` leave version-control directories out unless
``include_vcs`` is set, and say so in ``skipped_reasons``; a path inside one is served as asked."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.filetrees import listing, make_files, search
from toolcalls.activities.files.read_models import ListFilesArgs, ListFilesResult, SearchFilesArgs
from toolcalls.activities.files.reading import FileReadTools
from toolcalls.activities.files.tree import MAX_ENTRIES

VCS_DIRECTORIES = {".git", ".hg", ".svn", ".bzr", "_darcs", ".pijul", ".jj", ".sl", "CVS", "_MTN"}
"""The set docs/tools-files.md names."""
OTHER_VCS = sorted(VCS_DIRECTORIES - {".git"})


@pytest.fixture
def project(root: Path) -> Path:
    """A real Git working tree with one commit, and the metadata directories of the others."""
    project = root / "project"
    project.mkdir()
    (project / "main.py").write_text("needle = 1\n")
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run([*git, "add", "main.py"], check=True)
    # The message lands as text in .git/COMMIT_EDITMSG and .git/logs/HEAD.
    subprocess.run([*git, "commit", "-q", "-m", "add the needle"], check=True)
    for name in OTHER_VCS:
        (project / "src" / name).mkdir(parents=True)
        (project / "src" / name / "state").write_text("needle in the history\n")
    return project


def paths(result: ListFilesResult, below: Path) -> set[str]:
    return {item.path.removeprefix(f"{below}/") for item in result.items}


async def test_listing_skips_vcs_directories_by_default(
    tools: FileReadTools, project: Path
) -> None:
    tree = await listing(tools, str(project), recursive=True, max_results=1_000)
    assert paths(tree, project) == {"main.py", "src"}
    assert tree.skipped_reasons == {"vcs_directory": len(VCS_DIRECTORIES)}
    assert tree.skipped == len(VCS_DIRECTORIES)
    assert tree.truncated is False
    # Not entered: only the entries themselves were visited.
    assert tree.scanned == 2 + len(VCS_DIRECTORIES)
    flat = await listing(tools, str(project))
    assert paths(flat, project) == {"main.py", "src"}
    assert flat.skipped_reasons == {"vcs_directory": 1}


async def test_include_vcs_lists_and_enters_them(tools: FileReadTools, project: Path) -> None:
    tree = await listing(tools, str(project), recursive=True, max_results=1_000, include_vcs=True)
    listed = paths(tree, project)
    assert {".git", ".git/HEAD", ".git/COMMIT_EDITMSG", ".git/objects"} <= listed
    assert {f"src/{name}/state" for name in OTHER_VCS} <= listed
    assert tree.skipped_reasons == {}


async def test_search_skips_vcs_directories_by_default(tools: FileReadTools, project: Path) -> None:
    found = await search(tools, str(project), "needle")
    assert [item.path for item in found.items] == [f"{project}/main.py"]
    assert found.skipped_reasons == {"vcs_directory": len(VCS_DIRECTORIES)}
    everything = await search(tools, str(project), "needle", include_vcs=True)
    hits = {item.path.removeprefix(f"{project}/") for item in everything.items}
    assert {"main.py", ".git/COMMIT_EDITMSG", ".git/logs/HEAD"} <= hits
    assert {f"src/{name}/state" for name in OTHER_VCS} <= hits
    assert "vcs_directory" not in everything.skipped_reasons


async def test_a_path_inside_a_vcs_directory_is_served_when_asked_for(
    tools: FileReadTools, project: Path
) -> None:
    inside = await listing(tools, f"{project}/.git")
    assert {"HEAD", "COMMIT_EDITMSG", "objects"} <= paths(inside, project / ".git")
    assert inside.skipped_reasons == {}
    found = await search(tools, f"{project}/.git", "needle")
    assert f"{project}/.git/COMMIT_EDITMSG" in {item.path for item in found.items}
    one = await search(tools, f"{project}/.git/COMMIT_EDITMSG", "needle")
    assert [item.text for item in one.items] == ["add the needle"]


async def test_only_directories_with_those_exact_names_are_skipped(
    tools: FileReadTools, root: Path
) -> None:
    # A worktree's .git is a file pointing elsewhere; a link is never entered anyway.
    (root / ".git").write_text("gitdir: /elsewhere/.git/worktrees/x\n")
    (root / ".hg").symlink_to("/etc")
    for name in (".github", ".GIT", "git", "svn", ".gitignore_dir"):
        (root / name).mkdir()
        (root / name / "f").write_text("x")
    result = await listing(tools, str(root), recursive=True)
    assert paths(result, root) == {
        ".git",
        ".hg",
        *(
            f"{name}{suffix}"
            for name in (".github", ".GIT", "git", "svn", ".gitignore_dir")
            for suffix in ("", "/f")
        ),
    }
    assert result.skipped_reasons == {}
    assert {item.type for item in result.items if item.path.endswith("/.hg")} == {"other"}


async def test_a_large_history_no_longer_uses_up_the_entry_limit(
    tools: FileReadTools, root: Path
) -> None:
    objects = root / ".git" / "objects"
    objects.mkdir(parents=True)
    make_files(objects, MAX_ENTRIES)
    (root / "README").write_text("needle\n")
    listed = await listing(tools, str(root), recursive=True)
    assert (paths(listed, root), listed.truncated) == ({"README"}, False)
    found = await search(tools, str(root), "needle")
    assert ([item.path for item in found.items], found.truncated) == ([f"{root}/README"], False)
    everything = await listing(tools, str(root), recursive=True, include_vcs=True)
    assert everything.truncated is True


def test_the_argument_is_optional_and_null_means_skip() -> None:
    for model, extra in ((ListFilesArgs, {}), (SearchFilesArgs, {"query": "q"})):
        assert model.model_validate({"path": "/w", **extra}).include_vcs is False
        assert (
            model.model_validate({"path": "/w", "include_vcs": None, **extra}).include_vcs is False
        )
        assert (
            model.model_validate({"path": "/w", "include_vcs": True, **extra}).include_vcs is True
        )

"""The six ``git`` operations on real repositories, with the exact output git gives.

Tests build repositories with plain git at a fixed date, so commit ids are the same on every run;
blob ids are computed here from the content, as git does.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest
from temporalio.exceptions import ApplicationError

from tests.support.gitrepo import Repo, git_tools, run_git
from toolcalls.activities.limits import MAX_PAYLOAD_BYTES
from toolcalls.activities.processes.commands import MAX_RESULT_BYTES
from toolcalls.activities.processes.settings import MAX_OUTPUT_BYTES
from toolcalls.workflows.models.call import ErrorCode

FIRST_DATE = "Date:   Thu Jan 2 03:04:05 2020 +0000"
AUTHOR = "Author: Test <test@example.com>"


def blob(text: str) -> str:
    """A blob's abbreviated id, computed as git computes it."""
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()[:7]


A, A_MORE, BYE, B = blob("a\n"), blob("a\nmore\n"), blob("bye\n"), blob("b\n")
NEW_B = (
    "diff --git a/b.txt b/b.txt\nnew file mode 100644\n"
    f"index 0000000..{B}\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+b\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """Two commits, the first with a file the work tree then deletes (overrides the folder's)."""
    repo = Repo.init(tmp_path / "repo")
    repo.commit("first", **{"a.txt": "a\n", "gone.txt": "bye\n"})
    repo.commit("second", **{"b.txt": "b\n"})
    return repo


def change(repo: Repo) -> None:
    repo.write("a.txt", "a\nmore\n")
    (repo.path / "gone.txt").unlink()
    repo.write("new.txt", "new\n")


async def test_status_is_short_with_the_branch(repo: Repo) -> None:
    change(repo)
    tools = git_tools(repo)
    result = await run_git(tools, operation="status")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "## main\n M a.txt\n D gone.txt\n?? new.txt\n"
    assert (result.truncated, result.timed_out, result.canceled) == (False, False, False)
    only = await run_git(tools, operation="status", paths=["a.txt", "new.txt"])
    assert only.stdout == "## main\n M a.txt\n?? new.txt\n"


async def test_paths_are_literal_not_globs_or_magic(repo: Repo) -> None:
    repo.write("*.txt", "star\n")
    repo.write(":(glob)x", "magic\n")
    repo.write("a.txt", "changed\n")
    tools = git_tools(repo)
    star = await run_git(tools, operation="status", paths=["*.txt"])
    assert star.stdout == "## main\n?? *.txt\n"
    magic = await run_git(tools, operation="status", paths=[":(glob)x"])
    assert magic.stdout == "## main\n?? :(glob)x\n"
    dash = await run_git(tools, operation="add", paths=["--output=x"])
    assert dash.exit_code == 128
    assert dash.stderr == "fatal: pathspec ':(literal)--output=x' did not match any files\n"
    assert not (repo.path / "x").exists()
    assert repo.git("status", "--short") == " M a.txt\n?? *.txt\n?? :(glob)x\n"


async def test_diff_of_the_working_tree_and_of_the_index(repo: Repo) -> None:
    change(repo)
    tools = git_tools(repo)
    worktree = await run_git(tools, operation="diff", paths=["a.txt"])
    a_patch = (
        "diff --git a/a.txt b/a.txt\n"
        f"index {A}..{A_MORE} 100644\n"
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n a\n+more\n"
    )
    assert (worktree.exit_code, worktree.stdout, worktree.stderr) == (0, a_patch, "")
    everything = await run_git(tools, operation="diff")
    gone_patch = (
        "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n"
        f"index {BYE}..0000000\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
    )
    assert everything.stdout == a_patch + gone_patch
    nothing_staged = await run_git(tools, operation="diff", staged=True)
    assert (nothing_staged.exit_code, nothing_staged.stdout) == (0, "")
    repo.git("add", "a.txt")
    staged = await run_git(tools, operation="diff", staged=True)
    assert staged.stdout == a_patch
    # The index against the first commit: a.txt changed, b.txt new; gone.txt is not staged.
    against = await run_git(tools, operation="diff", revision="HEAD~1", staged=True)
    assert against.stdout == a_patch + NEW_B


async def test_diff_between_revisions(repo: Repo) -> None:
    result = await run_git(git_tools(repo), operation="diff", revision="HEAD~1..HEAD")
    assert (result.exit_code, result.stdout) == (0, NEW_B)


def entry(repo: Repo, revision: str, message: str) -> str:
    return f"commit {repo.rev(revision)}\n{AUTHOR}\n{FIRST_DATE}\n\n    {message}\n"


async def test_log_defaults_to_head_and_ten_commits(repo: Repo) -> None:
    tools = git_tools(repo)
    result = await run_git(tools, operation="log")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == entry(repo, "HEAD", "second") + "\n" + entry(repo, "HEAD~1", "first")
    for n in range(3, 14):
        repo.commit(f"commit {n}", **{"c.txt": f"{n}\n"})
    ten = await run_git(tools, operation="log")
    assert ten.stdout.count("\ncommit ") + 1 == 10
    assert ten.stdout.startswith(entry(repo, "HEAD", "commit 13"))


async def test_log_with_max_count_revision_and_paths(repo: Repo) -> None:
    tools = git_tools(repo)
    one = await run_git(tools, operation="log", max_count=1)
    assert one.stdout == entry(repo, "HEAD", "second")
    older = await run_git(tools, operation="log", revision="HEAD~1")
    assert older.stdout == entry(repo, "HEAD~1", "first")
    touching = await run_git(tools, operation="log", paths=["b.txt"])
    assert touching.stdout == entry(repo, "HEAD", "second")


async def test_show_defaults_to_head(repo: Repo) -> None:
    result = await run_git(git_tools(repo), operation="show")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == entry(repo, "HEAD", "second") + "\n" + NEW_B


async def test_show_a_revision_limited_to_paths_and_a_blob(repo: Repo) -> None:
    tools = git_tools(repo)
    first = await run_git(tools, operation="show", revision="HEAD~1", paths=["a.txt"])
    assert first.stdout == entry(repo, "HEAD~1", "first") + (
        "\ndiff --git a/a.txt b/a.txt\nnew file mode 100644\n"
        f"index 0000000..{A}\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+a\n"
    )
    content = await run_git(tools, operation="show", revision="HEAD~1:gone.txt")
    assert content.stdout == "bye\n"


async def test_add_stages_the_paths_including_deletions(repo: Repo) -> None:
    change(repo)
    result = await run_git(git_tools(repo), operation="add", paths=["a.txt", "gone.txt"])
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    assert repo.git("status", "--short") == "M  a.txt\nD  gone.txt\n?? new.txt\n"


async def test_commit_commits_everything_staged_as_the_configured_identity(repo: Repo) -> None:
    change(repo)
    repo.git("add", "gone.txt")  # staged before the tool's own add: committed too
    tools = git_tools(repo, author_name="Agent Smith", author_email="agent@example.com")
    await run_git(tools, operation="add", paths=["a.txt"])
    result = await run_git(tools, operation="commit", message="third\n\nwith a body")
    assert (result.exit_code, result.stderr) == (0, "")
    short = repo.rev("HEAD")[:7]
    assert result.stdout == (
        f"[main {short}] third\n 2 files changed, 1 insertion(+), 1 deletion(-)\n"
        " delete mode 100644 gone.txt\n"
    )
    assert repo.git("log", "-1", "--format=%an <%ae>|%cn <%ce>|%P|%B") == (
        f"Agent Smith <agent@example.com>|Agent Smith <agent@example.com>|"
        f"{repo.rev('HEAD~1')}|third\n\nwith a body\n\n"
    )
    assert repo.git("status", "--short") == "?? new.txt\n"


async def test_a_message_that_looks_like_an_option_is_the_message(repo: Repo) -> None:
    repo.write("a.txt", "x\n")
    repo.git("add", "a.txt")
    result = await run_git(git_tools(repo), operation="commit", message="--amend")
    assert result.exit_code == 0
    assert repo.git("log", "--format=%s") == "--amend\nsecond\nfirst\n"


async def test_non_zero_exits_are_results(repo: Repo, tmp_path: Path) -> None:
    tools = git_tools(repo)
    nothing = await run_git(tools, operation="commit", message="empty")
    assert nothing.exit_code == 1
    assert "nothing to commit, working tree clean" in nothing.stdout
    unknown = await run_git(tools, operation="show", revision="no-such-branch")
    assert unknown.exit_code == 128
    assert "no-such-branch" in unknown.stderr
    outside = await run_git(git_tools(tmp_path), operation="status")
    assert outside.exit_code == 128
    assert "not a git repository" in outside.stderr


async def test_output_is_capped_by_the_deployment(repo: Repo) -> None:
    repo.commit("big", **{"big.txt": "".join(f"line {i}\n" for i in range(5000))})
    result = await run_git(git_tools(repo, max_output_bytes=1000), operation="show")
    assert result.exit_code == 0
    assert result.truncated is True
    assert len(result.stdout.encode()) + len(result.stderr.encode()) == 1000
    assert result.stdout.startswith(f"commit {repo.rev('HEAD')}\n")


async def test_the_commit_summary_reports_the_new_commit(repo: Repo) -> None:
    repo.write("b.txt", "b2\n")
    tools = git_tools(repo)
    await run_git(tools, operation="add", paths=["."])
    result = await run_git(tools, operation="commit", message="b2")
    match = re.fullmatch(
        r"\[main ([0-9a-f]{7})\] b2\n 1 file changed, 1 insertion\(\+\), 1 deletion\(-\)\n",
        result.stdout,
    )
    assert match is not None
    assert repo.rev("HEAD").startswith(match.group(1))


async def test_output_at_the_largest_cap_still_fits_the_payload_cap(repo: Repo) -> None:
    # Control characters are text to git but cost six bytes each in the result's JSON.
    repo.commit("big", **{"big.txt": "\x01\n" * 600_000})
    tools = git_tools(repo, max_output_bytes=MAX_OUTPUT_BYTES)
    result = await run_git(tools, operation="show", revision="HEAD:big.txt")
    assert result.exit_code == 0
    assert result.truncated is True
    assert len(result.model_dump_json().encode()) <= MAX_RESULT_BYTES < MAX_PAYLOAD_BYTES
    assert result.stdout.startswith("\x01\n\x01\n")


async def test_a_repository_removed_after_start_is_an_execution_failure(repo: Repo) -> None:
    tools = git_tools(repo)
    shutil.rmtree(repo.path)
    with pytest.raises(ApplicationError) as caught:
        await run_git(tools, operation="log")
    assert caught.value.type == ErrorCode.EXECUTION_FAILED.value
    assert caught.value.message.startswith("git: log: cannot run ")
    assert caught.value.message.endswith(f"in {repo.path}: no such file or directory")

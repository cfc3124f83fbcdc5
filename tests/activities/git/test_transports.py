"""No operation reaches a transport or recurses into a submodule.

The tool's operations never fetch, but a partial clone fetches missing objects lazily from its
promisor remote, through whatever transport, ssh command or credential helper the repository's
configuration names. Each case first shows plain git doing it, then the tool refusing. Submodules
carry their own configuration, which the superproject's overrides do not cover: the tool never
runs git inside one.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gitrepo import Repo, git_tools, marker_script, ran, run_git

SECRET = "secret\n"
SECRET_ID = hashlib.sha1(b"blob %d\0%s" % (len(SECRET), SECRET.encode())).hexdigest()


def partial_clone(path: Path, url: str, **config: str) -> Repo:
    """A repository that believes ``url`` (its promisor remote) has every object it lacks."""
    repo = Repo.init(path)
    repo.commit("first", **{"a.txt": "a\n"})
    settings = {
        "core.repositoryformatversion": "1",
        "extensions.partialClone": "origin",
        "remote.origin.promisor": "true",
        "remote.origin.url": url,
        **config,
    }
    for key, value in settings.items():
        repo.config(key, value)
    return repo


class _Unauthorized(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def unauthorized_url() -> Iterator[str]:
    """An HTTP server that asks for credentials, which makes git run its credential helper."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/repo.git"
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize("transport", ["ssh", "ext", "http"])
async def test_lazy_fetch_programs_do_not_run(
    tmp_path: Path, transport: str, unauthorized_url: str
) -> None:
    markers = tmp_path / "markers"
    program = marker_script(tmp_path / "bin", markers, transport, passthrough=False)
    url, config = {
        "ssh": ("ssh://git.example.invalid/repo.git", {"core.sshCommand": program}),
        "ext": (f"ext::{program}", {"protocol.ext.allow": "always"}),
        "http": (unauthorized_url, {"credential.helper": program}),
    }[transport]
    control = partial_clone(tmp_path / "control", url, **config)
    assert control.run("show", SECRET_ID).returncode == 128
    assert ran(markers) == [transport]
    (markers / transport).unlink()
    repo = partial_clone(tmp_path / "repo", url, **config)
    result = await run_git(git_tools(repo), operation="show", revision=SECRET_ID)
    # git's own exit is 128; the fetch child's early end can also cut it with SIGPIPE first.
    assert result.exit_code in (128, -13)
    assert f"transport '{transport}' not allowed" in result.stderr
    assert ran(markers) == []


async def test_file_urls_are_refused(tmp_path: Path) -> None:
    source = Repo.init(tmp_path / "source")
    source.commit("secret", **{"secret.txt": SECRET})
    source.config("uploadpack.allowFilter", "true")
    source.config("uploadpack.allowAnySHA1InWant", "true")
    url = f"file://{source.path}"
    control = partial_clone(tmp_path / "control", url, **{"protocol.file.allow": "always"})
    assert control.git("show", SECRET_ID) == SECRET
    assert packs(control) != []  # what the lazy fetch brought
    repo = partial_clone(tmp_path / "repo", url, **{"protocol.file.allow": "always"})
    result = await run_git(git_tools(repo), operation="show", revision=SECRET_ID)
    assert result.exit_code == 128
    assert "transport 'file' not allowed" in result.stderr
    assert SECRET not in result.stdout
    assert packs(repo) == []


def packs(repo: Repo) -> list[Path]:
    return sorted((repo.path / ".git" / "objects" / "pack").glob("*.pack"))


def superproject(tmp_path: Path, markers: Path) -> Repo:
    """A repository with a submodule whose own configuration has a clean filter."""
    inner = Repo.init(tmp_path / "inner")
    inner.commit("inner", **{"s.txt": "s\n", ".gitattributes": "*.txt filter=sub\n"})
    outer = Repo.init(tmp_path / "outer")
    outer.commit("outer", **{"t.txt": "t\n"})
    outer.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner.path), "sub")
    outer.git("commit", "-q", "-m", "submodule")
    sub = Repo(outer.path / "sub")
    program = marker_script(tmp_path / "bin", markers, "submodule-filter", passthrough=True)
    sub.config("filter.sub.clean", program)
    return outer


def touch(path: Path, seconds: int) -> None:
    """Change only the modification time: git must read the content to know it is unchanged."""
    os.utime(path, (seconds, seconds))


async def test_submodules_are_not_recursed(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    outer = superproject(tmp_path, markers)
    touch(outer.path / "sub" / "s.txt", 1_000_000_000)
    outer.run("status")
    assert ran(markers) == ["submodule-filter"]
    (markers / "submodule-filter").unlink()
    touch(outer.path / "sub" / "s.txt", 1_100_000_000)
    tools = git_tools(outer)
    status = await run_git(tools, operation="status")
    assert (status.exit_code, status.stdout) == (0, "## main\n")
    diff = await run_git(tools, operation="diff")
    assert (diff.exit_code, diff.stdout) == (0, "")
    assert ran(markers) == []


async def test_a_submodule_whose_commit_changed_is_still_reported(tmp_path: Path) -> None:
    outer = superproject(tmp_path, tmp_path / "markers")
    sub = Repo(outer.path / "sub")
    sub.git("config", "--unset", "filter.sub.clean")
    sub.commit("moved", **{"s.txt": "s2\n"})
    status = await run_git(git_tools(outer), operation="status")
    assert status.stdout == "## main\n M sub\n"

"""SECURITY-CASES "filesystem", read side: every refusal, through the tools and through ``Roots``.

Each case runs twice: with ``openat2`` (the kernel refuses links and escapes) and with the
component walk the module falls back to where ``openat2`` is missing.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.support.filetrees import (
    CALL,
    listing,
    read,
    read_tools,
    real_root,
    refusal,
    search,
)
from toolcalls.activities.files.paths import (
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    Located,
    PathError,
    Roots,
)
from toolcalls.activities.files.read_models import ReadFileArgs, ReadFileResult
from toolcalls.activities.files.reading import FileReadTools

INSIDE = "inside the root\n"


async def unchecked(tools: FileReadTools, path: str) -> ReadFileResult:
    """``read_file`` with arguments the model would have refused: the family checks again."""
    return await tools.read_file(ReadFileArgs.model_construct(path=path), CALL)


@pytest.fixture(params=["openat2", "walk"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = real_root(tmp_path)
    (root / "a").mkdir()
    (root / "a" / "f").write_text(INSIDE)
    (root / "a" / "evil").symlink_to("/etc/passwd")
    (root / "a" / "inner").symlink_to("f")
    return root


@pytest.fixture
def tools(root: Path, mode: str) -> Iterator[FileReadTools]:
    with read_tools(root, fallback=mode == "walk") as tools:
        assert tools.roots._openat2 is (mode == "openat2"), "this kernel should have openat2"
        yield tools


async def test_dotdot_escape_is_refused_lexically_and_by_the_kernel(
    tools: FileReadTools, root: Path
) -> None:
    with pytest.raises(ValidationError, match=r"has a '\.\.' component"):
        ReadFileArgs(path=f"{root}/../../etc/passwd")
    error = await refusal(unchecked(tools, f"{root}/../../etc/passwd"))
    assert error.message == f"read_file: {root}/../../etc/passwd: has a '..' component"
    assert error.details[0]["fixable_args"] == ["path"]
    # Past the lexical check, the open itself still refuses to climb out of the root.
    located = Located(f"{root}/../../etc/passwd", tools.roots.roots[0], "../../etc/passwd")
    with pytest.raises(PathError) as caught:
        tools.roots.open(located)
    assert caught.value.errno == errno.EXDEV


async def test_absolute_path_outside_the_roots_is_refused(tools: FileReadTools) -> None:
    error = await refusal(read(tools, "/etc/passwd"))
    assert error.message == "read_file: /etc/passwd: not inside a configured root"
    error = await refusal(unchecked(tools, "etc/passwd"))
    assert error.message == "read_file: etc/passwd: not absolute"


async def test_dotdot_inside_the_root_is_refused_even_where_the_kernel_would_allow_it(
    tools: FileReadTools, root: Path
) -> None:
    for path in (f"{root}/a/../../x", f"{root}/a/../a/f", f"{root}/a/./f", f"{root}//a/f"):
        with pytest.raises(ValidationError, match="component"):
            ReadFileArgs(path=path)
        error = await refusal(unchecked(tools, path))
        assert "component" in error.message, path
    assert (await read(tools, f"{root}/a/f")).content == INSIDE


async def test_symlink_out_of_the_root_is_refused(tools: FileReadTools, root: Path) -> None:
    error = await refusal(read(tools, f"{root}/a/evil"))
    assert error.message == f"read_file: {root}/a/evil: is or passes through a symbolic link"
    with pytest.raises(PathError) as caught:
        tools.roots.open(f"{root}/a/evil")
    assert caught.value.errno == errno.ELOOP


async def test_symlink_inside_the_root_is_refused_too(tools: FileReadTools, root: Path) -> None:
    error = await refusal(read(tools, f"{root}/a/inner"))
    assert "symbolic link" in error.message
    (root / "link_dir").symlink_to("a")
    error = await refusal(read(tools, f"{root}/link_dir/f"))
    assert "symbolic link" in error.message


async def test_nul_byte_is_refused_before_any_syscall(tools: FileReadTools, root: Path) -> None:
    (root / "a" / "a").write_text("the prefix a ctypes call would open\n")
    path = f"{root}/a/a\x00b"
    with pytest.raises(ValidationError, match="contains a NUL byte"):
        ReadFileArgs(path=path)
    # The family checks again, whatever the arguments model let through.
    error = await refusal(unchecked(tools, path))
    assert "contains a NUL byte" in error.message
    with pytest.raises(PathError, match="NUL"):
        tools.roots.open(path)


async def test_trailing_slash_on_a_file_is_a_clean_error(tools: FileReadTools, root: Path) -> None:
    error = await refusal(read(tools, f"{root}/a/f/"))
    assert error.message == f"read_file: {root}/a/f/: a component is not a directory"
    with pytest.raises(PathError) as caught:
        tools.roots.open(f"{root}/a/f/")
    assert caught.value.errno == errno.ENOTDIR


async def test_overlong_paths_and_names_are_clean_errors(tools: FileReadTools, root: Path) -> None:
    long_path = f"{root}/" + "/".join(["é" * 100] * 21)  # under 4,096 characters, not bytes
    assert len(long_path) < MAX_PATH_BYTES < len(long_path.encode())
    long_name = f"{root}/" + "n" * (MAX_NAME_BYTES + 1)
    with pytest.raises(ValidationError, match="longer than 4095 bytes"):
        ReadFileArgs(path=long_path)
    with pytest.raises(ValidationError, match="at most 4096 characters"):
        ReadFileArgs(path=f"{root}/" + "/".join(["d" * 200] * 21))
    with pytest.raises(ValidationError, match="component longer than 255 bytes"):
        ReadFileArgs(path=long_name)
    for path in (long_path, long_name):
        error = await refusal(unchecked(tools, path))
        assert "longer than" in error.message
    # Past the lexical checks, the kernel's own limit is reported cleanly too.
    located = Located(long_name, tools.roots.roots[0], "n" * (MAX_NAME_BYTES + 1))
    with pytest.raises(PathError) as caught:
        tools.roots.open(located)
    assert caught.value.errno == errno.ENAMETOOLONG
    assert caught.value.reason == "name too long"


async def test_unencodable_path_is_a_clean_error(tools: FileReadTools, root: Path) -> None:
    with pytest.raises(PathError, match="cannot be encoded"):
        tools.roots.locate(f"{root}/a/\ud800")
    error = await refusal(unchecked(tools, f"{root}/\ud800"))
    assert "cannot be encoded" in error.message


def _swap(root: Path, stop: threading.Event, swaps: list[int]) -> None:
    """Alternate ``root/a`` between a real directory and a symlink to ``/`` until ``stop``."""
    while not stop.is_set():
        os.rename(root / "a_dir", root / "a")
        os.rename(root / "a", root / "a_dir")
        os.rename(root / "a_link", root / "a")
        os.rename(root / "a", root / "a_link")
        swaps[0] += 1


def test_directory_swapped_for_a_symlink_never_leads_out(tools: FileReadTools, root: Path) -> None:
    (root / "a_dir" / "etc").mkdir(parents=True)
    (root / "a_dir" / "etc" / "passwd").write_text(INSIDE)
    (root / "a_link").symlink_to("/")
    (root / "a").rename(root / "elsewhere")
    stop = threading.Event()
    swaps = [0]
    swapper = threading.Thread(target=_swap, args=(root, stop, swaps))
    outcomes: dict[str, int] = {}
    contents: set[bytes] = set()
    link_refused = "is or passes through a symbolic link"

    def raced_enough(opens: int) -> bool:
        # At least 10,000 opens, and the race really ran (a loaded machine may starve the
        # swapper for a while): opens met the directory, the link, and many swaps.
        seen = outcomes.get("opened", 0) > 0 and outcomes.get(link_refused, 0) > 0
        return opens >= 10_000 and swaps[0] > 100 and seen

    deadline = time.monotonic() + 60
    opens = 0
    swapper.start()
    try:
        while not raced_enough(opens) and time.monotonic() < deadline:
            opens += 1
            try:
                fd = tools.roots.open(f"{root}/a/etc/passwd")
            except PathError as exc:
                outcomes[exc.reason] = outcomes.get(exc.reason, 0) + 1
                continue
            try:
                contents.add(os.read(fd, 4096))
            finally:
                os.close(fd)
            outcomes["opened"] = outcomes.get("opened", 0) + 1
    finally:
        stop.set()
        swapper.join()
    assert contents == {INSIDE.encode()}
    # The race really ran: opens met the directory, the link, and neither.
    assert outcomes.get("opened", 0) > 0
    assert outcomes.get(link_refused, 0) > 0
    assert swaps[0] > 100


async def test_special_files_are_refused_without_hanging(tools: FileReadTools, root: Path) -> None:
    os.mkfifo(root / "fifo")
    with socket.socket(socket.AF_UNIX) as server:
        cwd = os.getcwd()
        os.chdir(root)  # a socket path must be short; the name relative to the root is
        try:
            server.bind("sock")
        finally:
            os.chdir(cwd)
        names = ["fifo", "sock"]
        if os.geteuid() == 0:
            os.mknod(root / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
            names.append("null")
        for name in names:
            error = await refusal(read(tools, f"{root}/{name}"))
            assert error.message in (
                f"read_file: {root}/{name}: not a regular file",
                f"read_file: {root}/{name}: is a special file",
            )
            error = await refusal(search(tools, f"{root}/{name}", "x"))
            assert "not a regular file or directory" in error.message or "special" in error.message
        listed = await listing(tools, str(root))
        kinds = {Path(item.path).name: item.type for item in listed.items}
        assert kinds == {"a": "dir", **dict.fromkeys(names, "other")}
        # A search walks past them: they are not files, so neither searched nor skipped.
        found = await search(tools, str(root), "inside")
        assert [item.path for item in found.items] == [f"{root}/a/f"]
        assert found.skipped == 0


async def test_another_filesystem_below_a_root_is_refused(mode: str) -> None:
    # /proc is its own filesystem under /: RESOLVE_NO_XDEV, or the walk's device check, stops it.
    with read_tools(Path("/"), fallback=mode == "walk") as tools:
        error = await refusal(read(tools, "/proc/version"))
        assert error.message == (
            "read_file: /proc/version: leaves its root or crosses into another filesystem"
        )
        error = await refusal(listing(tools, "/proc"))
        assert "another filesystem" in error.message


@pytest.fixture
def mount(root: Path) -> Iterator[Path]:
    """A tmpfs mounted at ``root/a/mnt``, holding one file."""
    mount = root / "a" / "mnt"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(mount)], check=True)
    try:
        (mount / "secret").write_text("inside the root, but on another filesystem\n")
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
async def test_a_mount_point_inside_a_tree_is_skipped(
    tools: FileReadTools, root: Path, mount: Path
) -> None:
    listed = await listing(tools, str(root), recursive=True)
    assert f"{root}/a/mnt" in [item.path for item in listed.items]
    assert f"{root}/a/mnt/secret" not in [item.path for item in listed.items]
    assert listed.skipped_reasons == {"other_filesystem": 1}
    found = await search(tools, str(root), "filesystem")
    assert found.items == []
    assert found.skipped_reasons == {"other_filesystem": 1}
    error = await refusal(read(tools, f"{mount}/secret"))
    assert "another filesystem" in error.message


def test_roots_errors_name_the_problem(root: Path) -> None:
    roots = Roots([root])
    try:
        with pytest.raises(PathError, match="is a root, not an entry"):
            roots.open_parent(str(root))
        with pytest.raises(PathError, match="ends with a slash"):
            roots.open_parent(f"{root}/a/")
        fd = roots.open(f"{root}/a", os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in ("..", ".", "x/y", ""):
                with pytest.raises(PathError, match="not a single directory entry"):
                    roots.open_entry(fd, name, f"{root}/a/{name}")
            with pytest.raises(PathError) as caught:
                roots.open_entry(fd, "evil", f"{root}/a/evil")
            assert caught.value.errno == errno.ELOOP
        finally:
            os.close(fd)
    finally:
        roots.close()

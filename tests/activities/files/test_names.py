"""Portable names: every file and document tool that takes a path refuses components holding
characters that mean something else to a reader or to another system, at plan and again in the
activity; listings and searches leave existing names of that kind out; ``create_file`` also refuses
new names Windows or macOS could not hold; a root that breaks the rule is a configuration error."""

from __future__ import annotations

import os
import unicodedata
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from tests.support import documents, file_writes
from tests.support.filetrees import CALL, activity_env, listing, read, read_tools, search
from toolcalls.activities.base import ToolArgs
from toolcalls.activities.capabilities import default_ceiling
from toolcalls.activities.catalog import Catalog, CatalogSettings
from toolcalls.activities.documents import DOCUMENT_TOOLS
from toolcalls.activities.documents.models import ReadDocumentArgs, SearchDocumentArgs
from toolcalls.activities.files import FILE_TOOLS
from toolcalls.activities.files.paths import PathError, Roots
from toolcalls.activities.files.read_models import ListFilesArgs, ReadFileArgs, SearchFilesArgs
from toolcalls.activities.files.write_models import CreateFileArgs, EditFileArgs, ReplaceFileArgs
from toolcalls.worker.config import ConfigError, parse_config
from toolcalls.workflows.models.call import ErrorCode, PlanInput

REFUSED = {
    "newline": ("a\nb", "contains a control character (U+000A)"),
    "carriage return": ("a\rb", "contains a control character (U+000D)"),
    "tab": ("a\tb", "contains a control character (U+0009)"),
    "escape": ("a\x1b[31mb", "contains a control character (U+001B)"),
    "delete": ("a\x7fb", "contains a control character (U+007F)"),
    "c1 next line": ("a\x85b", "contains a control character (U+0085)"),
    "c1 csi": ("a\x9bb", "contains a control character (U+009B)"),
    "backslash": ("a\\b", "contains a backslash (the path separator on Windows)"),
    "right-to-left override": ("x\u202etxt.exe", "contains an invisible format character (U+202E)"),
    "left-to-right embedding": ("a\u202ab", "contains an invisible format character (U+202A)"),
    "right-to-left isolate": ("a\u2067b", "contains an invisible format character (U+2067)"),
    "pop directional isolate": ("a\u2069b", "contains an invisible format character (U+2069)"),
    "left-to-right mark": ("a\u200eb", "contains an invisible format character (U+200E)"),
    "arabic letter mark": ("a\u061cb", "contains an invisible format character (U+061C)"),
    "zero width space": ("a\u200bb", "contains an invisible format character (U+200B)"),
    "zero width joiner": ("a\u200db", "contains an invisible format character (U+200D)"),
    "word joiner": ("a\u2060b", "contains an invisible format character (U+2060)"),
    "byte order mark": ("\ufeffa", "contains an invisible format character (U+FEFF)"),
    "soft hyphen": ("a\u00adb", "contains an invisible format character (U+00AD)"),
    "tag character": ("a\U000e0041b", "contains an invisible format character (U+E0041)"),
    "line separator": ("a\u2028b", "contains a line separator (U+2028)"),
    "paragraph separator": ("a\u2029b", "contains a paragraph separator (U+2029)"),
}
PATH_TOOLS = [
    "read_file",
    "list_files",
    "search_files",
    "create_file",
    "replace_file",
    "edit_file",
    "read_document",
    "search_document",
]
ARGS: dict[str, type[ToolArgs]] = {
    "read_file": ReadFileArgs,
    "list_files": ListFilesArgs,
    "search_files": SearchFilesArgs,
    "create_file": CreateFileArgs,
    "replace_file": ReplaceFileArgs,
    "edit_file": EditFileArgs,
    "read_document": ReadDocumentArgs,
    "search_document": SearchDocumentArgs,
}
VISIBLE = ["plain.txt", "with space.txt", "caf\u00e9.md", "\u65e5\u672c\u3000x.txt", "a\u00a0b"]
"""Names every tool accepts: visible text, and wide and no-break spaces."""
EXISTING_ONLY = ["a:b", "con.txt", "notes.", "cafe\u0301.md"]
"""Names every tool accepts for what exists already, and ``create_file`` for no new entry."""
UNPORTABLE = {
    "colon": ("10:30.md", "the new name has ':', which Windows does not allow in a name"),
    "asterisk": ("a*b", "the new name has '*'"),
    "question mark": ("a?b", "the new name has '?'"),
    "quote": ('a"b', "the new name has '\"'"),
    "angle bracket": ("a<b", "the new name has '<'"),
    "pipe": ("a|b", "the new name has '|'"),
    "device": ("CON", "the new name 'CON' is a device name Windows reserves"),
    "device with extension": ("nul.tar.gz", "is a device name Windows reserves"),
    "device any case": ("Com1.txt", "is a device name Windows reserves"),
    "superscript port": ("lpt\u00b9", "is a device name Windows reserves"),
    "trailing dot": ("notes.", "the new name ends with a dot, which Windows drops"),
    "trailing space": ("notes.txt ", "the new name ends with a space, which Windows drops"),
    "decomposed": (
        "cafe\u0301.md",
        "the new name is not in Unicode normalization form C; write it as 'caf\u00e9.md'",
    ),
}


def arguments(tool: str, path: str) -> dict[str, Any]:
    extra: dict[str, dict[str, Any]] = {
        "search_files": {"query": "needle"},
        "create_file": {"content": "x"},
        "replace_file": {"content": "x"},
        "edit_file": {"old_text": "needle", "new_text": "pin"},
        "search_document": {"query": "needle"},
    }
    return {"path": path, **extra.get(tool, {})}


def plan_error(tool: str, path: str) -> tuple[ErrorCode, str, list[str]] | None:
    """What the plan of ``tool`` on ``path`` ends with: its error, ``None`` for a plan."""
    specs = (*FILE_TOOLS, *DOCUMENT_TOOLS)
    catalog = Catalog(specs, CatalogSettings(enabled=[spec.name for spec in specs]))
    request = PlanInput(tool=tool, arguments=arguments(tool, path))
    outcome = catalog.plan(request, default_ceiling(), frozenset())
    if outcome.error is None:
        return None
    return outcome.error.code, outcome.error.message, outcome.error.fixable_args


def raw_characters(name: str) -> set[str]:
    """The characters of ``name`` no message may carry raw (a backslash shows doubled)."""
    return {char for char in name if not char.isprintable()}


@pytest.mark.parametrize("tool", PATH_TOOLS)
@pytest.mark.parametrize("case", list(REFUSED))
def test_every_path_tool_refuses_the_characters_at_plan(tool: str, case: str) -> None:
    name, reason = REFUSED[case]
    for path in (f"/srv/work/{name}/notes.txt", f"/srv/work/{name}"):
        error = plan_error(tool, path)
        assert error is not None, path
        code, message, fixable = error
        assert code is ErrorCode.INVALID_ARGUMENTS
        assert fixable == ["path"]
        assert message.startswith(f"{tool}: invalid arguments: path: "), message
        assert reason in message
        assert not raw_characters(name) & set(message), message


@pytest.mark.parametrize("tool", PATH_TOOLS)
def test_visible_names_are_planned(tool: str) -> None:
    for name in VISIBLE + EXISTING_ONLY:
        assert plan_error(tool, f"/srv/work/{name}/notes.md") is None, name
        if tool != "create_file" or name in VISIBLE:
            assert plan_error(tool, f"/srv/work/{name}") is None, name


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "root"
    root.mkdir()
    for name, _ in REFUSED.values():
        # The kernel allows every one of these but "/": files of these names exist elsewhere.
        (root / name).write_text("needle\n")
    return root


@pytest.fixture
def files(root: Path) -> Iterator[file_writes.Files]:
    files = file_writes.Files(root.parent)
    yield files
    files.close()


@asynccontextmanager
async def executions(
    root: Path, files: file_writes.Files
) -> AsyncIterator[list[tuple[str, Callable[[str], Awaitable[Any]]]]]:
    """Each path tool (and each write's approval preview) run with arguments no plan checked."""
    async with documents.document_tools(root) as docs:
        with read_tools(root) as reads:
            writes = files.tools

            def run(
                tool: str, method: Callable[..., Awaitable[Any]], env: ActivityEnvironment
            ) -> tuple[str, Callable[[str], Awaitable[Any]]]:
                async def execute(path: str) -> Any:
                    args = ARGS[tool].model_construct(**arguments(tool, path))
                    return await env.run(method, args, CALL)

                return tool, execute

            yield [
                run("read_file", reads.read_file, activity_env()),
                run("list_files", reads.list_files, activity_env()),
                run("search_files", reads.search_files, activity_env()),
                *(
                    run(tool, getattr(writes, prefix + tool), activity_env())
                    for tool in ("create_file", "replace_file", "edit_file")
                    for prefix in ("prepare_", "")
                ),
                run("read_document", docs.read_document, documents.activity_env()),
                run("search_document", docs.search_document, documents.activity_env()),
            ]


@pytest.mark.parametrize("case", list(REFUSED))
async def test_every_path_tool_refuses_existing_names_in_the_activity_too(
    root: Path, files: file_writes.Files, case: str
) -> None:
    name, reason = REFUSED[case]
    before = sorted(os.listdir(root))
    async with executions(root, files) as tools:
        assert sorted({tool for tool, _ in tools}) == sorted(PATH_TOOLS)
        for tool, execute in tools:
            for path in (f"{root}/{name}", f"{root}/{name}/x.txt"):
                with pytest.raises(ApplicationError) as caught:
                    await execute(path)
                error = caught.value
                assert error.type == ErrorCode.INVALID_ARGUMENTS.value, (tool, error.message)
                assert error.details[0]["fixable_args"] == ["path"]
                assert error.message.startswith(f"{tool}: {root}/"), error.message
                assert error.message.endswith(f": {reason}"), error.message
                assert not raw_characters(name) & set(error.message), (tool, error.message)
    # Nothing was created, replaced or edited, and no change was recorded.
    assert sorted(os.listdir(root)) == before
    assert all((root / n).read_text() == "needle\n" for n, _ in REFUSED.values())
    assert files.leftovers() == []


async def test_a_refused_path_is_shown_escaped(root: Path) -> None:
    with read_tools(root) as tools:
        unchecked = ReadFileArgs.model_construct(path=f"{root}/x\u202etxt.exe\n\\")
        with pytest.raises(ApplicationError) as caught:
            await tools.read_file(unchecked, CALL)
    assert caught.value.message == (
        f"read_file: {root}/x\\u202etxt.exe\\x0a\\\\: "
        "contains an invisible format character (U+202E)"
    )


async def test_listing_and_search_leave_refused_names_out(root: Path) -> None:
    (root / "fine.txt").write_text("needle\n")
    hidden = root / "dir\u202e"
    hidden.mkdir()
    (hidden / "inner.txt").write_text("needle\n")
    (root / "sub").mkdir()
    (root / "sub" / "line\nbreak").write_text("needle\n")
    refused = len(REFUSED) + 2
    with read_tools(root) as tools:
        listed = await listing(tools, str(root), recursive=True, max_results=1_000)
        found = await search(tools, str(root), "needle")
        flat = await listing(tools, str(root))
        # An entry that reaches ``open_entry`` some other way is refused there as well.
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with pytest.raises(PathError, match=r"U\+000A"):
                tools.roots.open_entry(fd, "a\nb", f"{root}/a\nb")
        finally:
            os.close(fd)
    assert {item.path for item in listed.items} == {f"{root}/fine.txt", f"{root}/sub"}
    assert listed.skipped_reasons == {"refused_name": refused}
    # The directory with a refused name was not entered: its file was never visited.
    assert listed.scanned == refused + 2
    assert [item.path for item in found.items] == [f"{root}/fine.txt"]
    assert found.skipped_reasons == {"refused_name": refused}
    assert {item.path for item in flat.items} == {f"{root}/fine.txt", f"{root}/sub"}
    assert flat.skipped_reasons == {"refused_name": refused - 1}


@pytest.mark.parametrize("case", list(UNPORTABLE))
async def test_create_file_refuses_new_names_windows_or_macos_cannot_hold(
    files: file_writes.Files, case: str
) -> None:
    name, reason = UNPORTABLE[case]
    path = files.path(name)
    error = plan_error("create_file", path)
    assert error is not None
    assert error[0] is ErrorCode.INVALID_ARGUMENTS
    assert error[2] == ["path"]
    assert reason in error[1]
    with pytest.raises(ValidationError, match="new name"):
        CreateFileArgs(path=path, content="x")
    unchecked = CreateFileArgs.model_construct(path=path, content="x")
    for method in (files.tools.prepare_create_file, files.tools.create_file):
        failure = await file_writes.refused(
            file_writes.run(method, unchecked), ErrorCode.INVALID_ARGUMENTS
        )
        assert failure.message.startswith(f"create_file: {path}: the new name"), failure.message
        assert reason in failure.message
        assert file_writes.fixable(failure) == ["path"]
    assert not file_writes.present(path)
    # Only the new name is held to this: a directory on the way may have any visible name.
    (files.root / "10:30").mkdir()
    assert plan_error("create_file", files.path("10:30/notes.md")) is None


async def test_existing_unportable_names_stay_readable_and_writable(
    files: file_writes.Files,
) -> None:
    decomposed = unicodedata.normalize("NFD", "café.md")
    for name in ("10:30.md", "nul.txt", "notes.", decomposed):
        files.entry(name).write_text("needle\n")
        path = files.path(name)
        for tool in ("read_file", "replace_file", "edit_file", "read_document"):
            assert plan_error(tool, path) is None, (tool, name)
        with read_tools(files.root) as reads:
            assert (await read(reads, path)).content == "needle\n"
        await file_writes.run(
            files.tools.edit_file, EditFileArgs(path=path, old_text="needle", new_text="pin")
        )
        assert files.entry(name).read_text() == "pin\n"


@pytest.mark.parametrize("section", ["files", "documents"])
def test_a_root_that_breaks_the_rule_is_a_configuration_error(tmp_path: Path, section: str) -> None:
    tool = "read_file" if section == "files" else "read_document"
    with pytest.raises(ConfigError) as caught:
        parse_config({"tools": [tool], section: {"roots": [f"{tmp_path}/a\u202eb"]}})
    assert str(caught.value) == (
        f"configuration: {section}.roots.0: {tmp_path}/a\\u202eb contains an invisible format "
        "character (U+202E), so no path inside it would be accepted"
    )
    # A root reached through a link is checked as the worker resolves it.
    target = tmp_path / "back\\slash"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(ValueError, match=r"back\\\\slash contains a backslash"):
        Roots([tmp_path / "link"])

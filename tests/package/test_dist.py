"""The wheel and the sdist: one top-level package, its data files, metadata PyPI accepts, and a
wheel that installs into a fresh environment and runs."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

from tests.package.conftest import ROOT, Dists, Installed

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
DIST_INFO = f"toolcalls-{VERSION}.dist-info"


def wheel_files(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def source_modules() -> set[str]:
    """Every module of the package, as the wheel names it (``toolcalls/`` holds links to the
    top-level folders)."""
    package = ROOT / "toolcalls"
    found = set()
    for folder, folders, names in os.walk(package, followlinks=True):
        folders[:] = [name for name in folders if name != "__pycache__"]
        for name in names:
            if name.endswith(".py"):
                found.add(f"toolcalls/{(Path(folder) / name).relative_to(package).as_posix()}")
    return found


def data_files() -> set[str]:
    """The package's data: the typing marker and the inbox's templates and static files."""
    inbox = ROOT / "worker" / "inbox"
    found = {"toolcalls/py.typed"}
    for path in [*inbox.glob("templates/*.html"), *inbox.glob("static/*")]:
        found.add(f"toolcalls/worker/inbox/{path.relative_to(inbox).as_posix()}")
    return found


def test_the_wheel_holds_one_package_with_its_data_files(dists: Dists) -> None:
    files = wheel_files(dists.wheel)
    assert {name.split("/")[0] for name in files} == {"toolcalls", DIST_INFO}
    assert files[f"{DIST_INFO}/top_level.txt"].decode().split() == ["toolcalls"]
    package = {name for name in files if not name.startswith(DIST_INFO)}
    # Every module and data file of the tree, nothing else: no tests, no benchmarks.
    assert {name for name in package if name.endswith(".py")} == source_modules()
    assert {name for name in package if not name.endswith(".py")} == data_files()
    assert "toolcalls/py.typed" in package
    assert "toolcalls/worker/inbox/templates/call.html" in package
    assert "toolcalls/worker/inbox/static/inbox.js" in package
    assert not any(part in {"tests", "bench"} for name in package for part in name.split("/"))


def test_the_wheel_built_from_the_sdist_is_the_tree(dists: Dists) -> None:
    # Every file byte for byte: the sdist lost nothing and kept no stale copy of a module.
    files = wheel_files(dists.wheel)
    for name in source_modules() | data_files():
        assert files[name] == (ROOT / name).read_bytes(), name
    with tarfile.open(dists.sdist) as sdist:
        names = [name.split("/", 1)[1] for name in sdist.getnames() if "/" in name]
    assert {"README.md", "CHANGELOG.md", "pyproject.toml", "PKG-INFO"} <= set(names)
    assert not [name for name in names if name.split("/")[0] in {"tests", "bench", "docs"}]
    assert not [name for name in names if name.split("/")[0] in {"activities", "workflows"}]


def test_twine_check_strict_accepts_both(dists: Dists) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dists.wheel), str(dists.sdist)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


def test_the_metadata_says_what_a_user_expects(dists: Dists) -> None:
    files = wheel_files(dists.wheel)
    metadata = Parser().parsestr(files[f"{DIST_INFO}/METADATA"].decode())
    assert (metadata["Name"], metadata["Version"]) == ("toolcalls", VERSION)
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["License-Expression"] == "MIT"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert str(metadata.get_payload()).startswith("# toolcalls\n")
    assert "temporal" in metadata["Keywords"].split(",")
    classifiers = metadata.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    entry_points = files[f"{DIST_INFO}/entry_points.txt"].decode()
    assert "toolcalls = toolcalls.command:main" in entry_points


def test_the_installed_wheel_imports_and_runs_from_its_environment(
    installed: Installed, tmp_path: Path
) -> None:
    probe = (
        "import importlib.metadata, importlib.resources, toolcalls; "
        "print(toolcalls.__file__); print(toolcalls.__version__); "
        "print(importlib.metadata.version('toolcalls')); "
        "print(importlib.resources.files('toolcalls.worker.inbox') / 'templates' / 'call.html')"
    )
    done = subprocess.run(
        [str(installed.python), "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    module, version, distribution, template = done.stdout.splitlines()
    # The wheel's copy, not the repository's (the editable install's hook does not leak in).
    assert Path(module).is_relative_to(installed.root)
    assert Path(template).is_relative_to(installed.root)
    assert Path(template).is_file()
    assert version == distribution == VERSION
    tools = subprocess.run(
        [str(installed.toolcalls), "tools"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (tools.returncode, tools.stderr) == (0, "")
    assert tools.stdout.split()[0] == "calculator"

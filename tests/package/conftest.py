"""The distributions, built once per session, and a fresh virtual environment with the wheel.

``python -m build`` builds the sdist and then the wheel from the sdist, as a release (and
``make dist``) does; the tests compare that wheel with the tree. The fresh environment gets the
wheel without its dependencies, which come from the test's own environment through a ``.pth``
file listed after the environment's own site-packages: quick and offline (the build, too, uses
the test environment's backend), and the test's editable install stays out (its import hook is
installed by a ``.pth`` file of its own, which only ``site`` processes, not a directory added by
a path line).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
BUILD_TIMEOUT = 300


@dataclass(frozen=True)
class Dists:
    wheel: Path
    """Built from the sdist."""
    sdist: Path


@dataclass(frozen=True)
class Installed:
    """A virtual environment holding the wheel."""

    root: Path
    python: Path
    toolcalls: Path
    """Its ``toolcalls`` console script."""


def _build(out: Path) -> Dists:
    subprocess.run(
        # The backend of the test's environment (the dev extra): no index needed.
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=BUILD_TIMEOUT,
    )
    [wheel] = out.glob("*.whl")
    [sdist] = out.glob("*.tar.gz")
    return Dists(wheel, sdist)


@pytest.fixture(scope="session")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return _build(tmp_path_factory.mktemp("dist"))
    # Each xdist worker is a session of its own, and the sdist's build writes toolcalls.egg-info/
    # into the tree: two builds at once break each other. The first worker builds, under a lock
    # in the run's temporary directory (its workers' parent), and the others take its files.
    run = tmp_path_factory.getbasetemp().parent
    with (run / "dist.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = run / "dist"
        if not out.is_dir():
            building = run / "dist-building"
            shutil.rmtree(building, ignore_errors=True)
            building.mkdir()
            _build(building)
            building.rename(out)
        [wheel] = out.glob("*.whl")
        [sdist] = out.glob("*.tar.gz")
        return Dists(wheel, sdist)


@pytest.fixture(scope="session")
def installed(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    install = ["install", "--quiet", "--no-deps", "--no-index", str(dists.wheel)]
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), *install],
        check=True,
        capture_output=True,
        timeout=BUILD_TIMEOUT,
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    Path(site, "zz_test_dependencies.pth").write_text(ours + "\n", encoding="utf-8")
    return Installed(root, python, root / "bin" / "toolcalls")

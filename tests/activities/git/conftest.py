"""Fixtures of the ``git`` tool's tests: a real repository and a tag for slow runs."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.support.gitrepo import Repo


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """A repository at ``tmp_path/repo`` with one commit of ``a.txt`` (modules may override)."""
    repo = Repo.init(tmp_path / "repo")
    repo.commit("first", **{"a.txt": "a\n"})
    return repo


@pytest.fixture
def tag() -> str:
    """A sleep duration no other process on the host uses, to find the wrapper's child."""
    return f"{random.randint(100, 999)}.{random.randint(10**8, 10**9)}"

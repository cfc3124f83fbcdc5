"""The public names: every name the facades list resolves to an object."""

import importlib

import pytest


@pytest.mark.parametrize("package", ["toolcalls", "toolcalls.workflows"])
def test_every_public_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert not missing, f"{package} lists names it cannot give: {missing}"

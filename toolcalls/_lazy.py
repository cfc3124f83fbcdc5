"""A package's public names imported on first use (PEP 562), so that importing one module of the
package does not load all the others: a sandboxed workflow, or a command that only reads the
configuration, does not pay for the worker's imports."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose names live in the modules ``where``
    gives; a name found once is kept in the package. ``__dir__`` lists its ``__all__``."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(getattr(sys.modules[package], "__all__", where))

    return __getattr__, __dir__

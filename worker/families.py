"""Tool families built from the deployment's configuration.

A family is the class whose methods are a group of tools (``ProcessTools``, ``GitTools``, ...);
it takes its settings, and any shared resource (the process ledger, the file roots), in its
constructor. This module builds the families a worker serves; the
settings themselves are sections of ``worker.config.Config``, which also checks that every enabled
tool has the configuration it needs (``config_problems``).
"""

from __future__ import annotations

from collections.abc import Iterable

from activities.catalog import Catalog
from worker.config import Config


def build_families(config: Config, catalog: Catalog, served: Iterable[str]) -> dict[type, object]:
    """The family instances for the tools in ``served``."""
    served = set(served)
    needed = {spec.family for spec in catalog if spec.name in served and spec.family is not None}
    families: dict[type, object] = {}
    # Each family adds its construction below, guarded by ``if <Family> in needed``.
    del needed
    return families

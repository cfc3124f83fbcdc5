"""Tool families built from the deployment's configuration.

A family is the class whose methods are a group of tools (``ProcessTools``, ``GitTools``, ...);
it takes its settings, and any shared resource (the process ledger, the file roots), in its
constructor. This module builds the families a worker serves; the settings themselves are
sections of ``worker.config.Config``, which also checks that every enabled tool has the
configuration it needs (``config_problems``).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable
from functools import cache
from typing import TypeVar

from activities.catalog import Catalog
from activities.database import DatabaseTools
from activities.documents.tools import DocumentTools
from activities.files.checkpoints import CheckpointError, CheckpointStore
from activities.files.paths import Roots
from activities.files.reading import FileReadTools
from activities.files.writing import FileWriteTools
from activities.network.fetch import FetchTools
from activities.network.http_api import HttpTools
from activities.network.search import WebSearchTools
from activities.processes.commands import ProcessTools
from activities.processes.git import GitTools
from activities.processes.runner import ProcessLedger
from activities.storage import InMemoryStorage, SQLiteStorage, Storage, StorageTools
from worker.config import Config

T = TypeVar("T")


def build_families(config: Config, catalog: Catalog, served: Iterable[str]) -> dict[type, object]:
    """The family instances for the tools in ``served``.

    Raises ``FamilyError`` naming the setting when a resource cannot be opened (a root, the
    checkpoint store, the storage database, the state directory).
    """
    served = set(served)
    needed = {spec.family for spec in catalog if spec.name in served and spec.family is not None}
    families: dict[type, object] = {}
    # Shared resources, built on first use and held for the worker's life: the file families
    # (reads, writes) share one set of root descriptors, the process families one ledger.
    file_roots = cache(lambda: _open("files.roots", lambda: Roots(config.files.roots)))
    ledger = cache(
        lambda: _open("state_dir", lambda: ProcessLedger(config.state_dir / "process-groups"))
    )
    if ProcessTools in needed:
        families[ProcessTools] = ProcessTools(config.process, config.shell, ledger())
    if GitTools in needed:
        families[GitTools] = GitTools(config.git, ledger())
    if FileReadTools in needed:
        families[FileReadTools] = FileReadTools(config.files, file_roots())
    if FileWriteTools in needed:
        checkpoints = config.files.checkpoints
        assert checkpoints is not None  # config_problems refuses write tools without a store
        store = _open("files.checkpoints", lambda: CheckpointStore(checkpoints))
        families[FileWriteTools] = FileWriteTools(config.files, file_roots(), store)
    if StorageTools in needed:
        settings = config.storage
        database = settings.database
        storage: Storage = (
            _open("storage.database", lambda: SQLiteStorage(database, settings.namespace))
            if database is not None
            else InMemoryStorage(settings.namespace)
        )
        families[StorageTools] = StorageTools(settings, storage)
    if FetchTools in needed:
        families[FetchTools] = FetchTools(config.fetch)
    if WebSearchTools in needed:
        # The Brave key is looked up in this mapping at each Brave search, not copied now.
        families[WebSearchTools] = WebSearchTools(config.web_search, environ=os.environ)
    # [[http]]: one family class per configured tool (its methods carry the tool's name), each
    # with its own settings; header secrets are read from this environment when a call runs.
    http_tables = {table.name: table for table in config.http}
    for spec in catalog:
        if spec.family in needed and issubclass(spec.family, HttpTools):
            families[spec.family] = spec.family(http_tables[spec.name], environ=os.environ)
    if DocumentTools in needed:
        document_roots = _open("documents.roots", lambda: Roots(config.documents.roots))
        families[DocumentTools] = DocumentTools(config.documents, document_roots)
    if DatabaseTools in needed:
        # Opens nothing now: every call opens the file afresh, read-only.
        families[DatabaseTools] = _open("database.path", lambda: DatabaseTools(config.database))
    return families


class FamilyError(RuntimeError):
    """A tool family's resource could not be opened; the message names the setting."""


def _open(setting: str, build: Callable[[], T]) -> T:
    try:
        return build()
    except (OSError, ValueError, sqlite3.Error, CheckpointError) as exc:
        raise FamilyError(f"{setting}: {exc}") from exc

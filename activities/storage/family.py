"""The key/value storage family: one namespace of a SQLite file or of memory (``[storage]``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from pydantic import Field

from toolcalls.activities.family import Deployment, Family, FamilySettings, Resources
from toolcalls.activities.spec import Timeouts, ToolSpec
from toolcalls.activities.storage.settings import StorageSettings
from toolcalls.activities.storage.sqlite import SQLiteStorage
from toolcalls.activities.storage.store import InMemoryStorage, Storage
from toolcalls.activities.storage.tools import (
    DeleteValueArgs,
    DeleteValueResult,
    GetValueArgs,
    GetValueResult,
    ListKeysArgs,
    ListKeysResult,
    SetValueArgs,
    SetValueResult,
    StorageTools,
)
from toolcalls.workflows.models.call import SideEffect

_STORAGE_READ = Timeouts(start_to_close=timedelta(seconds=10))
"""One short SQLite read; in WAL mode readers never wait for writers."""
_STORAGE_WRITE = Timeouts(start_to_close=timedelta(seconds=30), heartbeat=timedelta(seconds=5))
"""One write transaction, which may wait up to 10 s for another writer's lock."""

STORAGE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="get_value",
        description=(
            "Read the JSON value stored under a key. A missing key returns found=false; a stored "
            "null returns found=true and value=null."
        ),
        arguments=GetValueArgs,
        result=GetValueResult,
        side_effect=SideEffect.READ,
        capabilities=("storage.read",),
        timeouts=_STORAGE_READ,
        implementation=StorageTools,
    ),
    ToolSpec(
        name="list_keys",
        description=(
            "List stored keys in sorted order, optionally only those starting with a literal "
            "prefix. Returns up to limit (1-1000) keys from offset and next_offset for the next "
            "page (null when there is none); offsets can shift while keys are written."
        ),
        arguments=ListKeysArgs,
        result=ListKeysResult,
        side_effect=SideEffect.READ,
        capabilities=("storage.read",),
        timeouts=_STORAGE_READ,
        implementation=StorageTools,
    ),
    ToolSpec(
        name="set_value",
        description=(
            "Store a JSON value under a key (a nonblank string of at most 256 characters), "
            "replacing any value there. The value is given as JSON text: '{\"a\": 1}', '42', "
            "'null', or '\"text\"' for a string. Non-finite numbers, values nested deeper than "
            "64 levels and values over the deployment's size limit are rejected, and so is a "
            "write that would take the store past its key or size limit."
        ),
        arguments=SetValueArgs,
        result=SetValueResult,
        side_effect=SideEffect.WRITE,
        capabilities=("storage.write",),
        timeouts=_STORAGE_WRITE,
        implementation=StorageTools,
    ),
    ToolSpec(
        name="delete_value",
        description=(
            "Delete the value stored under a key. Deleting an absent key is a no-op "
            "(deleted=false)."
        ),
        arguments=DeleteValueArgs,
        result=DeleteValueResult,
        side_effect=SideEffect.WRITE,
        capabilities=("storage.write",),
        timeouts=_STORAGE_WRITE,
        implementation=StorageTools,
    ),
)


class StorageFamilySettings(FamilySettings):
    storage: StorageSettings = Field(default_factory=StorageSettings)


def _build(settings: StorageFamilySettings, resources: Resources) -> Iterable[object]:
    if not resources.serves(StorageTools):
        return []
    storage_settings = settings.storage
    database = storage_settings.database
    storage: Storage = (
        resources.open(
            "storage.database", lambda: SQLiteStorage(database, storage_settings.namespace)
        )
        if database is not None
        else InMemoryStorage(storage_settings.namespace)
    )
    return [StorageTools(storage_settings, storage)]


def _problems(settings: StorageFamilySettings, deployment: Deployment) -> list[str]:
    storage = settings.storage
    enabled = deployment.enabled_of(STORAGE_TOOLS)
    problems = [
        f"storage.allow_write: {spec.name} needs it"
        for spec in STORAGE_TOOLS
        if spec.name in enabled and spec.side_effect is SideEffect.WRITE and not storage.allow_write
    ]
    database = storage.database
    if enabled and database is not None:
        here = deployment.runs_here(enabled)
        if not database.is_absolute():
            problems.append(f"storage.database: {database} is not an absolute path")
        elif here and not database.parent.is_dir():
            problems.append(f"storage.database: directory {database.parent} does not exist")
        elif here and database.is_dir():
            problems.append(f"storage.database: {database} is a directory")
    return problems


STORAGE = Family(
    name="storage",
    settings=StorageFamilySettings,
    tools=STORAGE_TOOLS,
    build=_build,
    problems=_problems,
)

"""Key/value storage tools over one namespace of a ``Storage`` (in memory or SQLite).

``get_value``, ``list_keys``, ``set_value`` and ``delete_value`` (``tools``) touch one configured
namespace and nothing else; keys are literal strings, never paths or SQL. ``store`` defines the
``Storage`` contract and ``InMemoryStorage``; ``sqlite`` stores namespaces in a SQLite file in WAL
mode, one row per key, with write transactions that are safe across worker processes.
"""

from toolcalls.activities.storage.family import STORAGE, STORAGE_TOOLS
from toolcalls.activities.storage.sqlite import SQLiteStorage
from toolcalls.activities.storage.store import InMemoryStorage, Storage
from toolcalls.activities.storage.tools import StorageTools

__all__ = [
    "STORAGE",
    "STORAGE_TOOLS",
    "InMemoryStorage",
    "SQLiteStorage",
    "Storage",
    "StorageTools",
]

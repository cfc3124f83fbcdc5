"""Read-only SQL over a SQLite database: ``database_schema`` and ``query_database``.

``tools`` holds the argument and result models and ``DatabaseTools``; ``backend`` the
``DatabaseBackend`` protocol another database can implement and the errors a backend reports;
``sqlite`` the default backend, ``SQLiteDatabase``: each call in a query process of its own
(``reader``: a read-only connection to one existing file, an untrusted schema, an authorizer that
allows only reads and listed functions, runtime limits), killed at its deadline.
"""

from toolcalls.activities.database.backend import DatabaseBackend
from toolcalls.activities.database.family import DATABASE, DATABASE_TOOLS
from toolcalls.activities.database.sqlite import SQLiteDatabase
from toolcalls.activities.database.tools import DatabaseTools

__all__ = [
    "DATABASE",
    "DATABASE_TOOLS",
    "DatabaseBackend",
    "DatabaseTools",
    "SQLiteDatabase",
]

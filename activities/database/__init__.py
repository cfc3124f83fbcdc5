"""Read-only SQL over a SQLite database: ``database_schema`` and ``query_database``.

``tools`` holds the argument and result models and ``DatabaseTools``; ``backend`` the
``DatabaseBackend`` protocol another database can implement and the errors a backend reports;
``sqlite`` the default backend, ``SQLiteDatabase``: fresh read-only connections to one existing
file, an authorizer that allows only reads, runtime limits and a deadline.
"""

from activities.database.backend import DatabaseBackend
from activities.database.family import DATABASE, DATABASE_TOOLS
from activities.database.sqlite import SQLiteDatabase
from activities.database.tools import DatabaseTools

__all__ = [
    "DATABASE",
    "DATABASE_TOOLS",
    "DatabaseBackend",
    "DatabaseTools",
    "SQLiteDatabase",
]

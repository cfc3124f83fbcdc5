"""Read-only SQL over a SQLite database: database_schema, query_database."""

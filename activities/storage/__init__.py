"""Key/value storage tools over one namespace of a ``Storage`` (in memory or SQLite)."""

"""Where threads live: the LangGraph checkpointer (saver.py, pg_saver.py) and the tables
beside it (threads.py, journal.py, leases.py, decisions.py, ...), each written once for
SQLite (sqlite.py) and Postgres (postgres.py). Nothing here imports LangGraph until
storage is opened: reader.py serves the terminal's fast commands without it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from gatehouse.graph.store.dialect import is_postgres_url

if TYPE_CHECKING:
    from gatehouse.graph.store.sqlite import connect_sqlite
    from gatehouse.graph.store.storage import Storage

__all__ = ["Storage", "connect_sqlite", "is_postgres_url", "open_storage"]

_LAZY = {
    "Storage": "gatehouse.graph.store.storage",
    "connect_sqlite": "gatehouse.graph.store.sqlite",
}


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'gatehouse.graph.store' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def open_storage(db: str) -> Storage:
    """Open a SQLite path or a postgresql:// URL."""
    if is_postgres_url(db):
        from gatehouse.graph.store.postgres import open_postgres_storage

        return open_postgres_storage(db)
    from gatehouse.graph.store.sqlite import open_sqlite_storage

    return open_sqlite_storage(db)

"""Where threads live: the LangGraph checkpointer and the tables beside it.

Default: one SQLite file (WAL, busy timeout), created on first use: checkpoints
(saver.py, with the materialised head of head.py), the thread index (threads.py),
the execution journal (journal.py), run leases (leases.py), the decision log
(decisions.py) and tool outputs stored aside (outputs.py), each on its own connection
(sqlite.py). Scale-out: Postgres, selected by a postgresql:// URL (postgres.py), with
the same tables: each table is one module written once for both (dialect.py,
database.py). reader.py reads threads without LangGraph (the terminal's fast
commands); nothing here imports LangGraph until storage is opened, so it stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from graph.store.dialect import is_postgres_url

if TYPE_CHECKING:
    from graph.store.sqlite import connect_sqlite
    from graph.store.storage import Storage

__all__ = ["Storage", "connect_sqlite", "is_postgres_url", "open_storage"]

_LAZY = {"Storage": "graph.store.storage", "connect_sqlite": "graph.store.sqlite"}


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'graph.store' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def open_storage(db: str) -> Storage:
    """Open the database named by a settings value: a SQLite path (graph/store/sqlite.py),
    or a postgresql:// URL (graph/store/postgres.py)."""
    if is_postgres_url(db):
        from graph.store.postgres import open_postgres_storage

        return open_postgres_storage(db)
    from graph.store.sqlite import open_sqlite_storage

    return open_sqlite_storage(db)

"""Where threads live: the LangGraph checkpointer and the tables beside it.

Default: one SQLite file (WAL, busy timeout), created on first use: checkpoints
(saver.py, with the materialised head of head.py), the thread index (threads.py),
the execution journal (journal.py), run leases (leases.py), the decision log
(decisions.py) and tool outputs stored aside (outputs.py), each on its own connection. Scale-out: Postgres, selected by a postgresql:// URL (postgres.py), with
the same tables. reader.py reads threads without LangGraph (the terminal's fast
commands); nothing here imports LangGraph until storage is opened, so it stays fast.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.store.sqlite import connect_sqlite
    from graph.store.storage import Storage

__all__ = ["Storage", "connect_sqlite", "open_storage"]

_LAZY = {"Storage": "graph.store.storage", "connect_sqlite": "graph.store.sqlite"}


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'graph.store' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def open_storage(db: str) -> Storage:
    """Open the database named by a settings value: a SQLite path, or a
    postgresql:// URL (graph/store/postgres.py)."""
    if db.startswith(("postgres://", "postgresql://")):
        from graph.store.postgres import open_postgres_storage

        return open_postgres_storage(db)
    import sqlite3

    from graph.protocol.errors import StorageError
    from graph.store.decisions import Decisions
    from graph.store.journal import Journal
    from graph.store.leases import Leases
    from graph.store.outputs import ToolOutputs
    from graph.store.reader import ThreadReader, _Sqlite
    from graph.store.saver import GatehouseSqliteSaver
    from graph.store.sqlite import connect_sqlite, quick_check
    from graph.store.storage import Storage
    from graph.store.threads import ThreadIndex

    conn = connect_sqlite(db)
    try:
        quick_check(conn, Path(db).expanduser())
        # Compressed blobs, a materialised head; reads of the messages DeltaChannel
        # incremental and cached once the graph registers the channel's reducer
        # (graph/agent/graph.py).
        saver = GatehouseSqliteSaver(conn)
        saver.setup()
        # Its own connection: the saver serialises its connection with a lock of its own.
        index = ThreadIndex(connect_sqlite(db, autocommit=True))
        journal = Journal(connect_sqlite(db, autocommit=True), str(Path(db).expanduser()))
        decisions = Decisions(connect_sqlite(db, autocommit=True))
        outputs = ToolOutputs(connect_sqlite(db, autocommit=True))
        # Probes a write: a read-only file fails here, at start.
        leases = Leases(connect_sqlite(db, autocommit=True))
    except sqlite3.Error as exc:
        raise StorageError(f"cannot use the Gatehouse database {Path(db).expanduser()}: {exc}") from exc
    location = str(Path(db).expanduser())
    return Storage(
        checkpointer=saver, index=index, location=location, journal=journal, leases=leases,
        decisions=decisions, outputs=outputs, reader=ThreadReader(_Sqlite(db), location),
    )

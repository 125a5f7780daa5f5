"""Where threads live: the LangGraph checkpointer and the tables beside it.

Default: one SQLite file (WAL, busy timeout), created on first use: checkpoints
(saver.py), the thread index (threads.py), the execution journal (journal.py), run
leases (leases.py), the decision log (decisions.py) and tool outputs stored aside
(outputs.py), each on its own connection. Scale-out: Postgres, selected by
a postgresql:// URL (postgres.py), with the same tables.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from graph.protocol.errors import StorageError
from graph.store.decisions import Decisions
from graph.store.journal import Journal
from graph.store.leases import Leases
from graph.store.outputs import ToolOutputs
from graph.store.saver import GatehouseSqliteSaver
from graph.store.sqlite import connect_sqlite, quick_check
from graph.store.storage import Storage
from graph.store.threads import ThreadIndex

__all__ = ["Storage", "connect_sqlite", "open_storage"]


def open_storage(db: str) -> Storage:
    """Open the database named by a settings value: a SQLite path, or a
    postgresql:// URL (graph/store/postgres.py)."""
    if db.startswith(("postgres://", "postgresql://")):
        from graph.store.postgres import open_postgres_storage

        return open_postgres_storage(db)
    conn = connect_sqlite(db)
    try:
        quick_check(conn, Path(db).expanduser())
        # Compressed blobs; reads of the messages DeltaChannel incremental and cached
        # once the graph registers the channel's reducer (graph/agent/graph.py).
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
    return Storage(
        checkpointer=saver,
        index=index,
        location=str(Path(db).expanduser()),
        journal=journal,
        leases=leases,
        decisions=decisions,
        outputs=outputs,
    )

"""Where threads live: the LangGraph checkpointer and the thread index beside it.

Default: one SQLite file (WAL, busy timeout), created on first use. The thread index
(title, status, pending approval, last update) is a small table in the same file, so
listing threads for a sidebar never scans checkpoints.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from graph.journal import Journal
from graph.lease import Leases
from graph.saver import GatehouseSqliteSaver
from graph.sqlite_tx import immediate
from graph.state import merge_messages

BUSY_TIMEOUT_MS = 30_000
# Corruption past the first page only shows when pages are read: check smaller files
# at start (a fraction of a second); larger ones would slow every start too much.
QUICK_CHECK_MAX_BYTES = 256 * 1024 * 1024


class StorageError(RuntimeError):
    """The database cannot be opened or used; the message names the file."""


@dataclass(frozen=True)
class ThreadInfo:
    thread_id: str
    title: str
    status: str  # idle | running | awaiting_approval | completed | failed | cancelled | stopped
    created_at: float
    updated_at: float
    pending_since: float | None = None
    owner: str | None = None
    # Why the last run failed or stopped (kept so a later process can say it).
    reason: str | None = None

    @property
    def awaiting_approval(self) -> bool:
        return self.status == "awaiting_approval"

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "title": self.title,
            "status": self.status,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "pending_since": self.pending_since,
            "owner": self.owner,
            "reason": self.reason,
        }


def connect_sqlite(path: str | Path, *, autocommit: bool = False) -> sqlite3.Connection:
    """Open (creating if needed) a SQLite file tuned for several threads and processes."""
    file = Path(path).expanduser()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            str(file),
            check_same_thread=False,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None if autocommit else "",
        )
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (sqlite3.Error, OSError) as exc:
        raise StorageError(f"cannot open the Gatehouse database {file}: {exc}") from exc
    return conn


class ThreadIndex:
    """Thread list rows in the same SQLite file as the checkpoints."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        with self._tx() as c:
            c.execute(
                """CREATE TABLE IF NOT EXISTS gatehouse_threads (
                    thread_id TEXT PRIMARY KEY,
                    title TEXT NOT NULL DEFAULT '',
                    status TEXT NOT NULL DEFAULT 'idle',
                    owner TEXT,
                    created_at REAL NOT NULL,
                    updated_at REAL NOT NULL,
                    pending_since REAL,
                    reason TEXT)"""
            )
            c.execute("CREATE INDEX IF NOT EXISTS gatehouse_threads_updated ON gatehouse_threads(updated_at DESC)")
            # Files created before the index kept a run's failure reason.
            if "reason" not in {row[1] for row in c.execute("PRAGMA table_info(gatehouse_threads)")}:
                c.execute("ALTER TABLE gatehouse_threads ADD COLUMN reason TEXT")

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        return immediate(self._conn, self._lock)

    def touch(
        self, thread_id: str, *, title: str | None = None, status: str | None = None, owner: str | None = None,
        reason: str | None = None,
    ) -> None:
        """A new `status` replaces the stored reason with `reason` (None clears it)."""
        now = time.time()
        with self._tx() as c:
            c.execute(
                "INSERT INTO gatehouse_threads(thread_id, title, status, owner, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(thread_id) DO NOTHING",
                (thread_id, title or "New thread", status or "idle", owner, now, now),
            )
            if title is not None:
                c.execute(
                    "UPDATE gatehouse_threads SET title=? WHERE thread_id=? AND title IN ('', 'New thread')",
                    (title, thread_id),
                )
            if status is not None:
                pending = "CASE WHEN ?='awaiting_approval' THEN COALESCE(pending_since, ?) ELSE NULL END"
                c.execute(
                    f"UPDATE gatehouse_threads SET status=?, reason=?, updated_at=?, pending_since={pending} "
                    "WHERE thread_id=?",
                    (status, reason, now, status, now, thread_id),
                )

    def close(self) -> None:
        self._conn.close()

    def rename(self, thread_id: str, title: str) -> None:
        with self._tx() as c:
            c.execute("UPDATE gatehouse_threads SET title=?, updated_at=? WHERE thread_id=?", (title, time.time(), thread_id))

    def get(self, thread_id: str) -> ThreadInfo | None:
        rows = self._select("WHERE thread_id=?", (thread_id,))
        return rows[0] if rows else None

    def list(self, *, limit: int = 200, status: str | None = None) -> list[ThreadInfo]:
        if status:
            return self._select("WHERE status=? ORDER BY updated_at DESC LIMIT ?", (status, limit))
        return self._select("ORDER BY updated_at DESC LIMIT ?", (limit,))

    def pending(self) -> list[ThreadInfo]:
        """Threads waiting for a decision, oldest first (the approvals inbox)."""
        return self._select("WHERE status='awaiting_approval' ORDER BY pending_since ASC", ())

    def delete(self, thread_id: str) -> None:
        with self._tx() as c:
            c.execute("DELETE FROM gatehouse_threads WHERE thread_id=?", (thread_id,))

    def _select(self, where: str, params: tuple[Any, ...]) -> list[ThreadInfo]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT thread_id, title, status, created_at, updated_at, pending_since, owner, reason "
                f"FROM gatehouse_threads {where}",
                params,
            ).fetchall()
        return [ThreadInfo(*row) for row in rows]


@dataclass
class Storage:
    """The checkpointer and thread index for one database."""

    checkpointer: BaseCheckpointSaver
    index: ThreadIndex
    location: str
    # Execution journal and run leases (graph/journal.py, graph/lease.py), same file.
    journal: Journal | None = None
    leases: Leases | None = None

    def delete_thread(self, thread_id: str) -> None:
        self.checkpointer.delete_thread(thread_id)
        self.index.delete(thread_id)
        if self.journal is not None:
            self.journal.delete_thread(thread_id)

    def close(self) -> None:
        conn = getattr(self.checkpointer, "conn", None)
        if conn is not None:
            conn.close()
        self.index.close()
        for extra in (self.journal, self.leases):
            if extra is not None:
                extra.close()


def open_storage(db: str) -> Storage:
    """Open the database named by a settings value: a SQLite path, or a
    postgresql:// URL (graph/storage_postgres.py)."""
    if db.startswith(("postgres://", "postgresql://")):
        from graph.storage_postgres import open_postgres_storage

        return open_postgres_storage(db)
    conn = connect_sqlite(db)
    try:
        _quick_check(conn, Path(db).expanduser())
        # Compressed blobs; reads of the DeltaChannel messages incremental and cached (issue 8).
        saver = GatehouseSqliteSaver(conn, reducers={"messages": merge_messages})
        saver.setup()
        # Its own connection: the saver serialises its connection with a lock of its own.
        index = ThreadIndex(connect_sqlite(db, autocommit=True))
        journal = Journal(connect_sqlite(db, autocommit=True), str(Path(db).expanduser()))
        # Probes a write: a read-only file fails here, at start.
        leases = Leases(connect_sqlite(db, autocommit=True))
    except sqlite3.Error as exc:
        raise StorageError(f"cannot use the Gatehouse database {Path(db).expanduser()}: {exc}") from exc
    return Storage(
        checkpointer=saver, index=index, location=str(Path(db).expanduser()), journal=journal, leases=leases
    )


def _quick_check(conn: sqlite3.Connection, file: Path) -> None:
    if file.exists() and file.stat().st_size <= QUICK_CHECK_MAX_BYTES:
        row = conn.execute("PRAGMA quick_check(1)").fetchone()
        if row and row[0] != "ok":
            raise StorageError(
                f"the Gatehouse database {file} is corrupt ({row[0]}); move it aside or restore a backup"
            )

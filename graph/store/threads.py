"""The thread index: a small table beside the checkpoints (title, status, pending
approval, last update), so listing threads for a sidebar never scans checkpoints."""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import AbstractContextManager
from typing import Any

from graph.protocol.threads import ThreadInfo
from graph.store.sqlite import immediate


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

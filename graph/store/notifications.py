"""The notification log: one row per pause a webhook was told about, with how its
delivery went (attempts, last error, when it was delivered).

The row is also the claim: of every process and client that saves the same pause
(the same thread and interrupt id), only the one whose insert lands notifies, so a
pause pings exactly once. One module for both databases: a SQLite file or a
postgresql:// URL, told apart by a small dialect.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TABLE = """CREATE TABLE IF NOT EXISTS gatehouse_notifications (
    thread_id TEXT NOT NULL,
    interrupt_id TEXT NOT NULL,
    url TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    created_at {real} NOT NULL,
    delivered_at {real},
    PRIMARY KEY (thread_id, interrupt_id))"""
CLAIM = ("INSERT INTO gatehouse_notifications (thread_id, interrupt_id, url, payload, created_at) "
         "VALUES (?, ?, ?, ?, ?) ON CONFLICT (thread_id, interrupt_id) DO NOTHING")
ATTEMPT = ("UPDATE gatehouse_notifications SET attempts = attempts + 1, status = ?, last_error = ?, "
           "delivered_at = ? WHERE thread_id = ? AND interrupt_id = ?")
SELECT = ("SELECT thread_id, interrupt_id, url, payload, status, attempts, last_error, created_at, delivered_at "
          "FROM gatehouse_notifications")


@dataclass(frozen=True)
class Notification:
    thread_id: str
    interrupt_id: str
    url: str
    payload: dict[str, Any]
    status: str  # pending | delivered | failed
    attempts: int
    last_error: str | None
    created_at: float
    delivered_at: float | None


class NotificationLog:
    """The table on the database `db` names (a SQLite path or a postgresql:// URL)."""

    def __init__(self, db: str) -> None:
        self._pg = db.startswith(("postgres://", "postgresql://"))
        self._db = db
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if not self._pg:
            Path(db).expanduser().parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(Path(db).expanduser()), timeout=30, check_same_thread=False,
                                         isolation_level=None)
        self._run(TABLE.format(real="DOUBLE PRECISION" if self._pg else "REAL"))

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[int, list[tuple[Any, ...]]]:
        if self._pg:
            import psycopg

            with psycopg.connect(self._db, autocommit=True, connect_timeout=10) as conn:
                cur = conn.execute(sql.replace("?", "%s"), params)
                return cur.rowcount, (cur.fetchall() if cur.description else [])
        assert self._conn is not None
        with self._lock:
            cur = self._conn.execute(sql, params)
            return cur.rowcount, cur.fetchall()

    def claim(self, thread_id: str, interrupt_id: str, url: str, payload: dict[str, Any]) -> bool:
        """Record a pause to notify; False when it was recorded before (already notified)."""
        count, _ = self._run(CLAIM, (thread_id, interrupt_id, url, json.dumps(payload, ensure_ascii=False), time.time()))
        return count == 1

    def attempted(self, thread_id: str, interrupt_id: str, *, error: str | None, final: bool) -> None:
        """One delivery attempt: delivered (no error), still pending, or failed for good."""
        status = "delivered" if error is None else "failed" if final else "pending"
        self._run(ATTEMPT, (status, error, time.time() if error is None else None, thread_id, interrupt_id))

    def list(self, thread_id: str | None = None) -> list[Notification]:
        where = " WHERE thread_id = ? ORDER BY created_at" if thread_id else " ORDER BY created_at"
        _, rows = self._run(SELECT + where, (thread_id,) if thread_id else ())
        return [Notification(r[0], r[1], r[2], json.loads(r[3]), *r[4:]) for r in rows]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()

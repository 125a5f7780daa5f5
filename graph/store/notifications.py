"""The notification log: one row per pause a webhook was told about, with how its
delivery went (attempts, last error, when it was delivered).

The row is also the claim: of every process and client that saves the same pause
(the same thread and interrupt id), only the one whose insert lands notifies, so a
pause pings exactly once. One module for both databases: a SQLite file or a
postgresql:// URL (graph/store/database.py).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from graph.store.database import Cursor, Database, PostgresDatabase, Table
from graph.store.dialect import is_postgres_url, upsert
from graph.store.sqlite import sqlite_database

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
CLAIM = upsert(
    "gatehouse_notifications",
    ("thread_id", "interrupt_id", "url", "payload", "created_at"),
    ("thread_id", "interrupt_id"),
)
ATTEMPT = (
    "UPDATE gatehouse_notifications SET attempts = attempts + 1, status = ?, last_error = ?, "
    "delivered_at = ? WHERE thread_id = ? AND interrupt_id = ?"
)
SELECT = (
    "SELECT thread_id, interrupt_id, url, payload, status, attempts, last_error, created_at, delivered_at "
    "FROM gatehouse_notifications"
)


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


class NotificationLog(Table):
    """The table on the database `db` names (a SQLite path or a postgresql:// URL): a
    connection of its own to the file, or one per statement to Postgres (a pause is rare)."""

    def __init__(self, db: str) -> None:
        if is_postgres_url(db):
            database: Database = PostgresDatabase.at(db)
            with database.transaction() as cur:
                self.create(cur)
        else:
            database = sqlite_database(db, NotificationLog)
        super().__init__(database)

    @staticmethod
    def create(cur: Cursor) -> None:
        cur.execute(cur.dialect.ddl(TABLE))

    def claim(self, thread_id: str, interrupt_id: str, url: str, payload: dict[str, Any]) -> bool:
        """Record a pause to notify; False when it was recorded before (already notified)."""
        return (
            self._db.run(
                CLAIM,
                (
                    thread_id,
                    interrupt_id,
                    url,
                    json.dumps(payload, ensure_ascii=False),
                    time.time(),
                ),
            )
            == 1
        )

    def attempted(
        self, thread_id: str, interrupt_id: str, *, error: str | None, final: bool
    ) -> None:
        """One delivery attempt: delivered (no error), still pending, or failed for good."""
        status = "delivered" if error is None else "failed" if final else "pending"
        self._db.run(
            ATTEMPT,
            (status, error, time.time() if error is None else None, thread_id, interrupt_id),
        )

    def list(self, thread_id: str | None = None) -> list[Notification]:
        where = " WHERE thread_id = ? ORDER BY created_at" if thread_id else " ORDER BY created_at"
        rows = self._db.rows(SELECT + where, (thread_id,) if thread_id else ())
        return [Notification(r[0], r[1], r[2], json.loads(r[3]), *r[4:]) for r in rows]

"""The notification outbox: one row per pause a webhook is to be told about, with its
delivery's progress. The insert is the claim: of every process saving the same pause,
one adds it. Any process with the same webhook delivers what is due (`take_due` leases
a row briefly), so a ping outlives the process whose pause made it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from gatehouse.graph.store.database import Cursor, Database, PostgresDatabase, Row, Table
from gatehouse.graph.store.dialect import is_postgres_url, upsert
from gatehouse.graph.store.sqlite import sqlite_database

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
    next_at {real},
    PRIMARY KEY (thread_id, interrupt_id))"""
CLAIM = upsert(
    "gatehouse_notifications",
    ("thread_id", "interrupt_id", "url", "payload", "created_at", "next_at"),
    ("thread_id", "interrupt_id"),
)
ATTEMPT = (
    "UPDATE gatehouse_notifications SET attempts = attempts + 1, status = ?, last_error = ?, "
    "delivered_at = ?, next_at = ? WHERE thread_id = ? AND interrupt_id = ?"
)
SELECT = (
    "SELECT thread_id, interrupt_id, url, payload, status, attempts, last_error, created_at, "
    "delivered_at, next_at FROM gatehouse_notifications"
)
DUE = " WHERE url = ? AND status = 'pending' AND COALESCE(next_at, 0) <= ? ORDER BY created_at"
# Taken for a try: no other process sends it until the lease ends (or the try is logged).
LEASE = (
    "UPDATE gatehouse_notifications SET next_at = ? WHERE thread_id = ? AND interrupt_id = ? "
    "AND status = 'pending' AND COALESCE(next_at, 0) <= ?"
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
    next_at: float | None  # when a pending row is tried next


def _notification(r: Row) -> Notification:
    return Notification(r[0], r[1], r[2], json.loads(r[3]), *r[4:])


class OwnTable(Table):
    """A table used now and then on a SQLite path (a connection of its own) or a
    postgresql:// URL (a connection per statement), created or migrated on open."""

    def __init__(self, db: str) -> None:
        if is_postgres_url(db):
            database: Database = PostgresDatabase.at(db)
            with database.transaction() as cur:
                self.create(cur)
        else:
            database = sqlite_database(db, type(self))
        super().__init__(database)


class NotificationLog(OwnTable):
    """The outbox."""

    name = "gatehouse_notifications"

    @staticmethod
    def create(cur: Cursor) -> None:
        cur.execute(cur.dialect.ddl(TABLE))
        cur.add_column("gatehouse_notifications", "next_at {real}")

    def claim(self, thread_id: str, interrupt_id: str, url: str, payload: dict[str, Any]) -> bool:
        """Record a pause to notify; False when it was recorded before."""
        row = (thread_id, interrupt_id, url, json.dumps(payload, ensure_ascii=False))
        return self._db.run(CLAIM, (*row, time.time(), 0.0)) == 1

    def take_due(self, url: str, lease_s: float, now: float | None = None) -> list[Notification]:
        """The pending rows for `url` whose try is due, each leased for `lease_s` (but
        those another process took first)."""
        now = time.time() if now is None else now
        taken = []
        for row in map(_notification, self._db.rows(SELECT + DUE, (url, now))):
            if self._db.run(LEASE, (now + lease_s, row.thread_id, row.interrupt_id, now)) == 1:
                taken.append(row)
        return taken

    def next_due(self, url: str) -> float | None:
        """When the earliest pending row for `url` is due (None: nothing pending)."""
        rows = self._db.rows(
            "SELECT MIN(COALESCE(next_at, 0)) FROM gatehouse_notifications "
            "WHERE url = ? AND status = 'pending'",
            (url,),
        )
        return None if not rows or rows[0][0] is None else float(rows[0][0])

    def attempted(
        self,
        thread_id: str,
        interrupt_id: str,
        *,
        error: str | None,
        final: bool,
        retry_at: float | None = None,
    ) -> None:
        """One delivery attempt: delivered, pending again from `retry_at`, or failed."""
        status = "delivered" if error is None else "failed" if final else "pending"
        delivered = time.time() if error is None else None
        self._db.run(ATTEMPT, (status, error, delivered, retry_at, thread_id, interrupt_id))

    def list(self, thread_id: str | None = None) -> list[Notification]:
        where = " WHERE thread_id = ? ORDER BY created_at" if thread_id else " ORDER BY created_at"
        rows = self._db.rows(SELECT + where, (thread_id,) if thread_id else ())
        return list(map(_notification, rows))

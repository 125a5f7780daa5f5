"""Messages a person sent while a run was going on their thread: queued in the thread's
database, not in a page, so they outlive a reload, Stop and a server restart, and go
out in the order they were typed (graph/service/runner.py sends them).

One row per message; taking one deletes its row, so of every process and tab that
tries to send the same queued message only one does. Deleting the thread deletes them.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from graph.store.database import Cursor, Table

SCHEMA = """CREATE TABLE IF NOT EXISTS gatehouse_queued (
    thread_id TEXT NOT NULL,
    id TEXT NOT NULL,
    text TEXT NOT NULL,
    queued_at {real} NOT NULL,
    PRIMARY KEY (thread_id, id))"""


@dataclass(frozen=True)
class QueuedMessage:
    id: str
    text: str
    queued_at: float


class QueuedMessages(Table):
    """`gatehouse_queued`."""

    @staticmethod
    def create(cur: Cursor) -> None:
        cur.execute(cur.dialect.ddl(SCHEMA))

    def add(self, thread_id: str, text: str, keep: QueuedMessage | None = None) -> QueuedMessage:
        """Queue `text` last; or put `keep` back in its place (a message that was taken
        to be sent and could not start)."""
        message = keep or QueuedMessage(uuid.uuid4().hex, self.dialect.text(text), time.time())
        self._db.run(
            "INSERT INTO gatehouse_queued(thread_id, id, text, queued_at) VALUES (?, ?, ?, ?)",
            (thread_id, message.id, message.text, message.queued_at),
        )
        return message

    def waiting(self, thread_id: str) -> list[QueuedMessage]:
        """The thread's queued messages, oldest first."""
        order = self.dialect.by_insertion("queued_at")
        rows = self._db.rows(
            f"SELECT id, text, queued_at FROM gatehouse_queued WHERE thread_id=? ORDER BY {order}",
            (thread_id,),
        )
        return [QueuedMessage(*row) for row in rows]

    def take(self, thread_id: str, message_id: str) -> bool:
        """Remove one (to send it, or discarded); False when another took it first."""
        return (
            self._db.run(
                "DELETE FROM gatehouse_queued WHERE thread_id=? AND id=?", (thread_id, message_id)
            )
            == 1
        )

    def writable(self) -> None:
        """Raise the database's error now when it cannot be written (locked by another
        process, unreachable), before a run waits on it."""
        with self._db.transaction():
            pass

    def delete_thread(self, thread_id: str) -> None:
        self._db.run("DELETE FROM gatehouse_queued WHERE thread_id=?", (thread_id,))


__all__ = ["QueuedMessage", "QueuedMessages"]

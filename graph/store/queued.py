"""Messages sent while a run was going on their thread, queued in the database (they
outlive a reload, Stop and a restart) until graph/service/runner.py sends them. Taking
one deletes its row: of every process and tab, only one sends it.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from gatehouse.graph.store.database import ThreadRows

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


class QueuedMessages(ThreadRows):
    name, schema = "gatehouse_queued", SCHEMA

    def add(self, thread_id: str, text: str, keep: QueuedMessage | None = None) -> QueuedMessage:
        """Queue `text` last; or put back `keep`, taken to be sent but not started."""
        message = keep or QueuedMessage(uuid.uuid4().hex, self.dialect.text(text), time.time())
        self._db.run(
            "INSERT INTO gatehouse_queued(thread_id, id, text, queued_at) VALUES (?, ?, ?, ?)",
            (thread_id, message.id, message.text, message.queued_at),
        )
        return message

    def waiting(self, thread_id: str) -> list[QueuedMessage]:
        """The thread's queued messages, oldest first."""
        ties = self.dialect.insertion_column  # in the order queued, where the database knows
        order = f"queued_at, {ties}" if ties else "queued_at"
        rows = self._db.rows(
            f"SELECT id, text, queued_at FROM gatehouse_queued WHERE thread_id=? ORDER BY {order}",
            (thread_id,),
        )
        return [QueuedMessage(*row) for row in rows]

    def take(self, thread_id: str, message_id: str) -> bool:
        """Remove one; False when another took it first."""
        take = "DELETE FROM gatehouse_queued WHERE thread_id=? AND id=?"
        return self._db.run(take, (thread_id, message_id)) == 1

    def writable(self) -> None:
        """Raise now if the database cannot be written, before a run waits on it."""
        with self._db.transaction():
            pass


__all__ = ["QueuedMessage", "QueuedMessages"]

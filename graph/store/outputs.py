"""Tool outputs stored aside: a result too large for the model's context is kept
whole here, in the thread's database, while the model gets its head and a reference
(graph/agent/offload.py). The agent's `read_tool_output` tool reads ranges of it and
the Session hands the whole output to front ends.

One row per (thread, call). The row is written before the call's result goes into
the execution journal and the checkpoint, so a result replayed from the journal after
a crash always finds its output; a call run again overwrites its row. Undo and fork
keep the rows (an older checkpoint may still point at them); deleting the thread
deletes them.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import AbstractContextManager

from graph.store.sqlite import immediate

SCHEMA = """CREATE TABLE IF NOT EXISTS gatehouse_tool_outputs (
    thread_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    content TEXT NOT NULL,
    chars INTEGER NOT NULL,
    stored_at REAL NOT NULL,
    PRIMARY KEY (thread_id, tool_call_id))"""


class ToolOutputs:
    """`gatehouse_tool_outputs` in the SQLite file, on its own connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        with self._tx() as c:
            c.execute(SCHEMA)

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        return immediate(self._conn, self._lock)

    def put(self, thread_id: str, tool_call_id: str, tool: str, content: str) -> None:
        """Store (or replace: a call run again) the whole output of one call."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO gatehouse_tool_outputs(thread_id, tool_call_id, tool, content, chars, stored_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(thread_id, tool_call_id) DO UPDATE SET "
                "tool=excluded.tool, content=excluded.content, chars=excluded.chars, stored_at=excluded.stored_at",
                (thread_id, tool_call_id, tool, content, len(content), time.time()),
            )

    def get(self, thread_id: str, tool_call_id: str) -> str | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT content FROM gatehouse_tool_outputs WHERE thread_id=? AND tool_call_id=?",
                (thread_id, tool_call_id),
            ).fetchone()
        return row[0] if row else None

    def for_thread(self, thread_id: str) -> dict[str, str]:
        """Every stored output of the thread, by tool call id (for exports)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT tool_call_id, content FROM gatehouse_tool_outputs WHERE thread_id=? ORDER BY stored_at",
                (thread_id,),
            ).fetchall()
        return dict(rows)

    def delete_thread(self, thread_id: str) -> None:
        with self._tx() as c:
            c.execute("DELETE FROM gatehouse_tool_outputs WHERE thread_id=?", (thread_id,))

    def close(self) -> None:
        self._conn.close()

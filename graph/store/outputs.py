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

import time

from graph.store.database import Cursor, Table
from graph.store.dialect import upsert

SCHEMA = """CREATE TABLE IF NOT EXISTS gatehouse_tool_outputs (
    thread_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    content TEXT NOT NULL,
    chars INTEGER NOT NULL,
    stored_at {real} NOT NULL,
    PRIMARY KEY (thread_id, tool_call_id))"""
COLUMNS = ("thread_id", "tool_call_id", "tool", "content", "chars", "stored_at")
KEY = ("thread_id", "tool_call_id")
PUT = upsert("gatehouse_tool_outputs", COLUMNS, KEY, update=COLUMNS[2:])


class ToolOutputs(Table):
    """`gatehouse_tool_outputs`."""

    @staticmethod
    def create(cur: Cursor) -> None:
        cur.execute(cur.dialect.ddl(SCHEMA))

    def put(self, thread_id: str, tool_call_id: str, tool: str, content: str) -> None:
        """Store (or replace: a call run again) the whole output of one call."""
        content = self.dialect.text(content)  # a binary-ish output keeps everything else
        self._db.run(
            PUT,
            (thread_id, tool_call_id, tool, content, len(content), time.time()),
        )

    def get(self, thread_id: str, tool_call_id: str) -> str | None:
        rows = self._db.rows(
            "SELECT content FROM gatehouse_tool_outputs WHERE thread_id=? AND tool_call_id=?",
            (thread_id, tool_call_id),
        )
        return rows[0][0] if rows else None

    def for_thread(self, thread_id: str) -> dict[str, str]:
        """Every stored output of the thread, by tool call id (for exports)."""
        rows = self._db.rows(
            "SELECT tool_call_id, content FROM gatehouse_tool_outputs WHERE thread_id=? ORDER BY stored_at",
            (thread_id,),
        )
        return {call_id: content for call_id, content in rows}

    def delete_thread(self, thread_id: str) -> None:
        self._db.run("DELETE FROM gatehouse_tool_outputs WHERE thread_id=?", (thread_id,))

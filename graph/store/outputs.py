"""Tool outputs too large for the model's context, kept whole while the model gets their
head and a reference (graph/agent/offload.py). Written before the journal and the
checkpoint, so a result replayed after a crash finds its output; undo and fork keep the
rows (an older checkpoint may point at them).
"""

from __future__ import annotations

import time

from gatehouse.graph.store.database import ThreadRows
from gatehouse.graph.store.dialect import upsert

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


class ToolOutputs(ThreadRows):
    name, schema = "gatehouse_tool_outputs", SCHEMA

    def put(self, thread_id: str, tool_call_id: str, tool: str, content: str) -> None:
        content = self.dialect.text(content)  # a binary-ish output keeps everything else
        self._db.run(PUT, (thread_id, tool_call_id, tool, content, len(content), time.time()))

    def get(self, thread_id: str, tool_call_id: str) -> str | None:
        rows = self._db.rows(
            "SELECT content FROM gatehouse_tool_outputs WHERE thread_id=? AND tool_call_id=?",
            (thread_id, tool_call_id),
        )
        return rows[0][0] if rows else None

    def for_thread(self, thread_id: str) -> dict[str, str]:
        """Every stored output of the thread, by tool call id."""
        rows = self._db.rows(
            "SELECT tool_call_id, content FROM gatehouse_tool_outputs WHERE thread_id=? ORDER BY stored_at",
            (thread_id,),
        )
        return {call_id: content for call_id, content in rows}

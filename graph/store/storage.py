"""`Storage`: the checkpointer and the tables beside it, for one database."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from langgraph.checkpoint.base import BaseCheckpointSaver

from gatehouse.graph.store.decisions import Decisions
from gatehouse.graph.store.journal import Journal
from gatehouse.graph.store.leases import Leases
from gatehouse.graph.store.outputs import ToolOutputs
from gatehouse.graph.store.queued import QueuedMessages
from gatehouse.graph.store.reader import ThreadReader
from gatehouse.graph.store.threads import ThreadIndex


@dataclass
class Storage:
    checkpointer: BaseCheckpointSaver
    index: ThreadIndex
    location: str
    journal: Journal | None = None
    leases: Leases | None = None
    decisions: Decisions | None = None
    outputs: ToolOutputs | None = None
    queued: QueuedMessages | None = None
    reader: ThreadReader | None = None  # reads without LangGraph

    def delete_thread(self, thread_id: str) -> None:
        """Everything goes but the decision log, which notes that the thread's life (its
        grants and approvals) ended: the audit outlives the thread."""
        if self.decisions is not None:
            self.decisions.end_life(thread_id)
        self.checkpointer.delete_thread(thread_id)
        self.index.delete(thread_id)
        for table in (self.journal, self.outputs, self.queued):
            if table is not None:
                table.delete_thread(thread_id)

    def close(self) -> None:
        conn = getattr(self.checkpointer, "conn", None)
        if conn is not None:
            # Under the saver's lock: closing a SQLite connection in the middle of another
            # thread's statement crashes the process.
            with getattr(self.checkpointer, "lock", None) or contextlib.nullcontext():
                conn.close()
        tables = (self.index, self.journal, self.leases, self.decisions, self.outputs)
        for table in (*tables, self.queued, self.reader):
            if table is not None:
                table.close()

"""`Storage`: the checkpointer and the tables beside it (thread index, execution
journal, run leases, decision log, stored tool outputs) for one database, SQLite or
Postgres."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from langgraph.checkpoint.base import BaseCheckpointSaver

from graph.store.decisions import Decisions
from graph.store.journal import Journal
from graph.store.leases import Leases
from graph.store.outputs import ToolOutputs
from graph.store.queued import QueuedMessages
from graph.store.reader import ThreadReader
from graph.store.threads import ThreadIndex


@dataclass
class Storage:
    """The checkpointer and thread index for one database."""

    checkpointer: BaseCheckpointSaver
    index: ThreadIndex
    location: str
    # Execution journal, run leases and the decision log (journal.py, leases.py,
    # decisions.py), same database.
    journal: Journal | None = None
    leases: Leases | None = None
    decisions: Decisions | None = None
    # Tool outputs too large for the model's context, kept whole (outputs.py).
    outputs: ToolOutputs | None = None
    # Messages sent while a run was going, waiting for it to end (queued.py).
    queued: QueuedMessages | None = None
    # Reads without LangGraph: what a thread waits for, the thread list (reader.py).
    reader: ThreadReader | None = None

    def delete_thread(self, thread_id: str) -> None:
        """Checkpoints, index row, journal and stored outputs go; the decision log
        keeps its record (the audit outlives the thread) and notes that the thread's
        life ended: its grants and approvals end with it."""
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
            # Under the saver's own lock: a run still writing in another thread then
            # finishes its statement first (and its next one fails cleanly). Closing a
            # SQLite connection in the middle of another thread's statement crashes
            # the process.
            with getattr(self.checkpointer, "lock", None) or contextlib.nullcontext():
                conn.close()
        self.index.close()
        for extra in (
            self.journal,
            self.leases,
            self.decisions,
            self.outputs,
            self.queued,
            self.reader,
        ):
            if extra is not None:
                extra.close()

"""The thread index (title, status, pending approval, last update), so listing threads
never scans checkpoints. The checkpointer writes it in each checkpoint's transaction
(whoever runs the graph: Studio, the SDK, a raw invoke), the Session the title, owner
and the status a run ends with (it knows of failures outside any task).
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gatehouse.graph.protocol.state_keys import ended_as
from gatehouse.graph.protocol.threads import SUMMARY_MARK, ThreadInfo, content_text
from gatehouse.graph.store.database import Cursor, Table
from gatehouse.graph.store.langgraph_private import BRANCH_TO, START, TASKS

THREADS_TABLE = """CREATE TABLE IF NOT EXISTS gatehouse_threads (
    thread_id TEXT PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'idle',
    owner TEXT,
    created_at {real} NOT NULL,
    updated_at {real} NOT NULL,
    pending_since {real},
    reason TEXT)"""
# Files created before the index kept a run's failure reason.
THREADS_INDEX = (
    "CREATE INDEX IF NOT EXISTS gatehouse_threads_updated ON gatehouse_threads(updated_at DESC)"
)
# The inbox reads the waiting threads alone: a few rows of 100,000 in this index.
PENDING_INDEX = (
    "CREATE INDEX IF NOT EXISTS gatehouse_threads_pending ON gatehouse_threads(pending_since) "
    "WHERE pending_since IS NOT NULL"
)
# And the runs going on (a few), to find those a dead process left "running".
RUNNING_INDEX = (
    "CREATE INDEX IF NOT EXISTS gatehouse_threads_running ON gatehouse_threads(thread_id) "
    "WHERE status = 'running'"
)
TITLE_CHARS = 60
DEFAULT_TITLE = "New thread"
THREAD_COLUMNS = "thread_id, title, status, created_at, updated_at, pending_since, owner, reason"

# What the checkpointer writes, its VALUES (thread_id, title, status, now, now,
# pending_since) given by delta_reads.checkpoint_row_sql.
CHECKPOINT_ROW = (
    "INSERT INTO gatehouse_threads(thread_id, title, status, created_at, updated_at, pending_since) "
    "VALUES {values} "
    "ON CONFLICT (thread_id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at, "
    "pending_since = CASE WHEN excluded.pending_since IS NULL THEN NULL "
    "ELSE COALESCE(gatehouse_threads.pending_since, excluded.pending_since) END, reason = NULL, "
    "title = CASE WHEN gatehouse_threads.title IN ('', 'New thread') THEN excluded.title ELSE gatehouse_threads.title END "
    # Only when the row changes: most checkpoints would rewrite it as it is (issue 58).
    "WHERE gatehouse_threads.status <> excluded.status "
    "OR (gatehouse_threads.pending_since IS NULL) <> (excluded.pending_since IS NULL) "
    "OR gatehouse_threads.reason IS NOT NULL "
    "OR (gatehouse_threads.title IN ('', 'New thread') AND excluded.title NOT IN ('', 'New thread'))"
)
# ThreadIndex.touch in one statement: insert, or set the title (while the default), the
# status, its reason and when it began waiting.
TOUCH = (
    "INSERT INTO gatehouse_threads(thread_id, title, status, owner, created_at, updated_at, pending_since, reason) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET "
    "title = CASE WHEN ? AND gatehouse_threads.title IN ('', 'New thread') THEN excluded.title "
    "ELSE gatehouse_threads.title END, "
    "status = CASE WHEN ? THEN excluded.status ELSE gatehouse_threads.status END, "
    "reason = CASE WHEN ? THEN excluded.reason ELSE gatehouse_threads.reason END, "
    "updated_at = CASE WHEN ? THEN excluded.updated_at ELSE gatehouse_threads.updated_at END, "
    "pending_since = CASE WHEN NOT ? THEN gatehouse_threads.pending_since "
    "WHEN excluded.status = 'awaiting_approval' THEN COALESCE(gatehouse_threads.pending_since, excluded.updated_at) "
    "WHEN excluded.status = 'running' THEN gatehouse_threads.pending_since "
    "ELSE NULL END "
    # An unchanged row is not written again.
    "WHERE (? AND gatehouse_threads.title IN ('', 'New thread') AND excluded.title <> gatehouse_threads.title) "
    "OR (? AND (gatehouse_threads.status <> excluded.status "
    "OR COALESCE(gatehouse_threads.reason, '') <> COALESCE(excluded.reason, '') "
    "OR (excluded.status = 'awaiting_approval' AND gatehouse_threads.pending_since IS NULL) "
    "OR (excluded.status NOT IN ('awaiting_approval', 'running') AND gatehouse_threads.pending_since IS NOT NULL)))"
)
# A pause is pending from its checkpoint until the step that answered it: a run on it
# leaves it pending, so the inbox still lists one whose process died (issue 58).
PENDING_WHERE = "pending_since IS NOT NULL"


ON_INTERRUPT = (
    "UPDATE gatehouse_threads SET status = 'awaiting_approval', reason = NULL, updated_at = ?, "
    "pending_since = COALESCE(pending_since, ?) WHERE thread_id = ?"
)
ON_ERROR = "UPDATE gatehouse_threads SET status = 'failed', updated_at = ? WHERE thread_id = ?"


def title_of(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"


def first_user_text(messages: Any) -> str | None:
    """The first thing the person wrote (a compaction summary is not theirs)."""
    for m in messages or ():
        if getattr(m, "type", None) == "human" and not (
            getattr(m, "additional_kwargs", None) or {}
        ).get(SUMMARY_MARK):
            return content_text(getattr(m, "content", ""))
    return None


def status_of(checkpoint: Any) -> str:
    """The status a saved checkpoint shows: a step that updated no node's trigger
    (`branch:to:<node>`, the `Send` queue, `__start__`) ended the run."""
    updated = checkpoint.get("updated_channels") or ()
    if any(ch.startswith(BRANCH_TO) or ch in (TASKS, START) for ch in updated):
        return "running"
    return ended_as(checkpoint.get("channel_values") or {}, updated)


def touching(
    thread_id: str,
    status: str | None = None,
    reason: str | None = None,
    *,
    title: str | None = None,
    owner: str | None = None,
) -> tuple[str, tuple[Any, ...]]:
    """`ThreadIndex.touch`'s statement, for a caller that runs it in its own transaction
    (a run's end writes its status with its lease release, leases.py)."""
    now = time.time()
    pending = now if status == "awaiting_approval" else None
    row = (thread_id, title or DEFAULT_TITLE, status or "idle", owner, now, now, pending)
    # Which of the row's values TOUCH applies, in the order its placeholders ask.
    titled, given = title is not None, status is not None
    return TOUCH, (*row, reason, titled, given, given, given, given, titled, given)


# The row a run's start changes, read before it: what a refused start puts back, and
# whether a pause was pending then.
PRIOR = (
    "SELECT title, status, updated_at, reason, pending_since FROM gatehouse_threads "
    "WHERE thread_id=?"
)
_REAL = "CAST(? AS DOUBLE PRECISION)"
# TOUCH when the CTE `starting` (leases.py) has a row, else nothing (Postgres):
# typed, as a SELECT's parameters have no column to take their type from.
TOUCH_TAKEN = TOUCH.replace(
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    f"SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), {_REAL}, "
    f"{_REAL}, {_REAL}, CAST(? AS TEXT) FROM starting",
)


@dataclass(frozen=True)
class Start:
    """A run's start, written with its lease's take (leases.py): the thread marked
    running, with a sent message's title and owner. `undo` puts the row back when the
    run is refused under the lease after all (a pause found, an answer that does not fit):
    no refusal leaves a thread "running" or retitled."""

    thread_id: str
    title: str | None = None
    owner: str | None = None

    def touch(self) -> tuple[str, tuple[Any, ...]]:
        return touching(self.thread_id, "running", title=self.title, owner=self.owner)

    def undo(self, prior: Sequence[Any] | None) -> tuple[str, tuple[Any, ...]]:
        """`prior`: the row's PRIOR columns before the start, None when it had none."""
        prior = None if prior is None else prior[:4]
        if prior is None:
            return "DELETE FROM gatehouse_threads WHERE thread_id=? AND status='running'", (
                self.thread_id,
            )
        return (
            "UPDATE gatehouse_threads SET title=?, status=?, updated_at=?, reason=? "
            "WHERE thread_id=? AND status='running'",
            (*prior, self.thread_id),
        )


class ThreadIndex(Table):
    name = "gatehouse_threads"

    @staticmethod
    def create(cur: Cursor) -> None:
        cur.execute(cur.dialect.ddl(THREADS_TABLE))
        cur.execute(THREADS_INDEX)
        cur.execute(PENDING_INDEX)
        cur.execute(RUNNING_INDEX)
        cur.add_column("gatehouse_threads", "reason TEXT")

    def touch(
        self,
        thread_id: str,
        *,
        title: str | None = None,
        status: str | None = None,
        owner: str | None = None,
        reason: str | None = None,
    ) -> None:
        self._db.run(*touching(thread_id, title=title, status=status, owner=owner, reason=reason))

    def rename(self, thread_id: str, title: str) -> None:
        self._db.run(
            "UPDATE gatehouse_threads SET title=?, updated_at=? WHERE thread_id=?",
            (title, time.time(), thread_id),
        )

    def get(self, thread_id: str) -> ThreadInfo | None:
        rows = self.select("WHERE thread_id=?", (thread_id,))
        return rows[0] if rows else None

    def list(self, *, limit: int = 200, status: str | None = None) -> builtins.list[ThreadInfo]:
        if status:
            return self.select("WHERE status=? ORDER BY updated_at DESC LIMIT ?", (status, limit))
        return self.select("ORDER BY updated_at DESC LIMIT ?", (limit,))

    def pending(self) -> builtins.list[ThreadInfo]:
        """Threads with a pause pending, oldest first (the caller leaves out live runs)."""
        return self.select(f"WHERE {PENDING_WHERE} ORDER BY pending_since ASC", ())

    def running(self) -> builtins.list[ThreadInfo]:
        """Threads whose run is going on, or whose process died in it."""
        return self.select("WHERE status = 'running'", ())

    def delete(self, thread_id: str) -> None:
        self._db.run("DELETE FROM gatehouse_threads WHERE thread_id=?", (thread_id,))

    def select(self, where: str, params: Sequence[Any] = ()) -> builtins.list[ThreadInfo]:
        rows = self._db.rows(f"SELECT {THREAD_COLUMNS} FROM gatehouse_threads {where}", params)
        return [ThreadInfo(*row) for row in rows]

"""Threads read straight from the database, without LangGraph: the thread list, what
a thread waits for, its transcript and usage, for what must answer at once (the
terminal's `threads`, `pending`, `show`) and the Session's pending check.

All from tables the storage layer writes whoever runs the graph: the thread index and
leases; the interrupts at the latest checkpoint of tasks not finished (what
`get_state(...).interrupts` lists, by langgraph/pregel/_task_status.py's rules, decoded
by graph/store/plain.py); the transcript from the head when it is at the latest
checkpoint (else None: the caller asks the Session).
"""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from graph.protocol.decisions import DecisionRecord
from graph.protocol.errors import StorageError
from graph.protocol.pauses import Approval, MalformedPause, OutcomeUnknown, Pause, pause_from
from graph.protocol.state_keys import MESSAGES, USAGE
from graph.protocol.threads import ThreadInfo, view_of_fields
from graph.store.database import Database, PostgresDatabase, SqliteDatabase
from graph.store.decisions import _COLUMNS as DECISION_COLUMNS
from graph.store.decisions import _record as decision_of
from graph.store.dialect import is_postgres_url
from graph.store.langgraph_private import CONTROL_WRITES, INTERRUPT, NULL_TASK_ID
from graph.store.leases import lease_free
from graph.store.plain import (
    UnreadableValue,
    block_fields,
    interrupts_in,
    loads,
    task_order,
)
from graph.store.threads import PENDING_WHERE

if TYPE_CHECKING:
    from graph.protocol.messages import MessageView

THREAD_COLUMNS = "thread_id, title, status, created_at, updated_at, pending_since, owner, reason"

Rows = list[tuple[Any, ...]]

# `checkpoint_edges` answers from this index alone (both savers create it): the
# table's rows hold whole checkpoints, so a scan of them for two ids per checkpoint
# reads every page of the thread (135 ms cold at 2,000 turns).
TREE_INDEX = (
    "CREATE INDEX IF NOT EXISTS gatehouse_checkpoint_tree "
    "ON checkpoints (thread_id, checkpoint_ns, parent_checkpoint_id, checkpoint_id)"
)


class _NoFile(Exception):
    """The SQLite file does not exist (yet): it reads as empty and is not created."""


def read_sqlite(path: str) -> SqliteDatabase:
    """A SQLite file on the database layer, opened at the first read that finds it."""
    file = Path(path).expanduser()

    def connect() -> sqlite3.Connection:
        if not file.exists():
            raise _NoFile
        conn = sqlite3.connect(str(file), check_same_thread=False, timeout=30)
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    return SqliteDatabase(None, connect=connect)


class _OwnConnection:
    """One Postgres connection of the reader's own, opened at the first read."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._conn: Any = None
        self._lock = threading.Lock()

    @contextmanager
    def __call__(self) -> Iterator[Any]:
        import psycopg

        with self._lock:
            if self._conn is None:
                self._conn = psycopg.connect(self._url, autocommit=True, connect_timeout=10)
            yield self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _no_table(exc: BaseException) -> bool:
    """A database no Gatehouse run has written to yet (it reads as empty)."""
    if isinstance(exc, sqlite3.OperationalError):
        return "no such table" in str(exc) or "no such column" in str(exc)
    return getattr(exc, "sqlstate", None) == "42P01"  # Postgres: undefined_table


class ThreadReader:
    """Read-only views of threads, each one or two indexed queries."""

    def __init__(
        self, db: Database, location: str, *, on_close: Callable[[], None] | None = None
    ) -> None:
        self._db = db
        self.location = location
        self._host = socket.gethostname()
        self._on_close = on_close
        # The stock savers' writes tables (LangGraph names them apart).
        self._writes_table, self._writes_value = (
            ("checkpoint_writes", "blob") if db.dialect.postgres else ("writes", "value")
        )

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        try:
            return self._db.rows(sql, params)
        except _NoFile:
            return []
        except self._db.errors as exc:
            if _no_table(exc):
                return []
            raise StorageError(
                f"cannot read the Gatehouse database {self.location}: {exc}"
            ) from exc

    # -- the thread list -------------------------------------------------------------
    def threads(self, limit: int = 200) -> list[ThreadInfo]:
        rows = self._rows(
            f"SELECT {THREAD_COLUMNS} FROM gatehouse_threads ORDER BY updated_at DESC LIMIT ?",
            [limit],
        )
        return self._live([ThreadInfo(*r) for r in rows])

    def thread(self, thread_id: str) -> ThreadInfo | None:
        rows = self._rows(
            f"SELECT {THREAD_COLUMNS} FROM gatehouse_threads WHERE thread_id = ?", [thread_id]
        )
        live = self._live([ThreadInfo(*r) for r in rows])
        return live[0] if live else None

    def awaiting(self) -> list[ThreadInfo]:
        """Threads with a pause pending, oldest first (the approvals inbox; as
        `Session.awaiting_approval`, graph/store/threads.py): without those a live run
        is deciding now."""
        rows = self._rows(
            f"SELECT {THREAD_COLUMNS} FROM gatehouse_threads WHERE {PENDING_WHERE} ORDER BY pending_since ASC"
        )
        infos = self._live([ThreadInfo(*r) for r in rows])
        return [i for i in infos if i.status != "running"]

    def exists(self, thread_id: str) -> bool:
        if self.thread(thread_id) is not None:
            return True
        return bool(
            self._rows("SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1", [thread_id])
        )

    def _live(self, infos: list[ThreadInfo]) -> list[ThreadInfo]:
        """ "running" is written when a run starts and a killed process never takes it
        back: without a live lease, the run is gone (as `Session.threads` shows it)."""
        running = [i.thread_id for i in infos if i.status == "running"]
        if not running:
            return infos
        marks, now = ",".join("?" * len(running)), time.time()
        held = {
            tid
            for tid, owner, expires in self._rows(
                f"SELECT thread_id, owner, expires_at FROM gatehouse_leases WHERE thread_id IN ({marks})",
                running,
            )
            if not lease_free(owner, expires, now, self._host)
        }
        return [
            replace(i, status="interrupted")
            if i.status == "running" and i.thread_id not in held
            else i
            for i in infos
        ]

    # -- one thread ----------------------------------------------------------------------
    def latest_checkpoint(self, thread_id: str) -> str | None:
        """The id of the thread's latest checkpoint (its head), None for no thread."""
        rows = self._rows(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            [thread_id],
        )
        return rows[0][0] if rows else None

    def tip_count(self, thread_id: str) -> int:
        """How many branches the thread's checkpoint tree has (checkpoints nothing
        continues), counted in the database: for an unforked thread, 1."""
        rows = self._rows(
            "SELECT count(*) - count(DISTINCT parent_checkpoint_id) FROM checkpoints "
            "WHERE thread_id = ? AND checkpoint_ns = ''",
            [thread_id],
        )
        return int(rows[0][0] or 0) if rows else 0

    def checkpoint_edges(self, thread_id: str) -> list[tuple[str, str | None]]:
        """(checkpoint id, parent id) of every checkpoint of the thread: the shape of
        its tree of branches (graph/service/branches.py), read from `TREE_INDEX`."""
        return self._rows(  # the rows as fetched: copying 12,000 pairs costs more than reading them
            "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''",
            [thread_id],
        )

    def _writes(
        self, thread_id: str, checkpoint_id: str | None, channels: Sequence[str]
    ) -> list[tuple[Any, ...]]:
        """(task_id, task_path, idx, channel, type, value) of the writes at a checkpoint
        (None: the latest); values only for `channels` (the rest only say that a task
        finished)."""
        wanted = ",".join("?" * len(channels))
        at = (
            "?"
            if checkpoint_id is not None
            else (
                "(SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '')"
            )
        )
        return self._rows(
            f"SELECT task_id, task_path, idx, channel, "
            f"CASE WHEN channel IN ({wanted}) THEN type END, CASE WHEN channel IN ({wanted}) THEN {self._writes_value} END "
            f"FROM {self._writes_table} WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = {at}",
            [
                *channels,
                *channels,
                thread_id,
                checkpoint_id if checkpoint_id is not None else thread_id,
            ],
        )

    def _interrupts(self, thread_id: str) -> list[tuple[str, Any]]:
        """(interrupt id, value) of what the thread waits for, in LangGraph's order. One
        query: the writes at the latest checkpoint."""
        return self._asked(self._writes(thread_id, None, [INTERRUPT]))

    def pending_many(self, thread_ids: Sequence[str]) -> dict[str, Pause | None]:
        """`pending` of many threads (the inbox's cards) in one query per 500 threads:
        the interrupt writes at each one's latest checkpoint. `MalformedPause` as `pending`."""
        found: dict[str, Pause | None] = {}
        unique = list(dict.fromkeys(thread_ids))
        for at in range(0, len(unique), 500):
            chunk = unique[at : at + 500]
            # Driven by the ids (VALUES), each head and its writes found by index: a join
            # of grouped heads made Postgres scan every thread's writes per chunk.
            rows = self._rows(
                f"SELECT w.thread_id, w.task_id, w.task_path, w.idx, w.channel, "
                f"CASE WHEN w.channel = ? THEN w.type END, CASE WHEN w.channel = ? THEN w.{self._writes_value} END "
                f"FROM (SELECT t.column1 AS thread_id, (SELECT max(checkpoint_id) FROM checkpoints "
                "WHERE thread_id = t.column1 AND checkpoint_ns = '') AS head "
                f"FROM (VALUES {','.join(['(?)'] * len(chunk))}) t) h JOIN {self._writes_table} w "
                "ON w.thread_id = h.thread_id AND w.checkpoint_ns = '' AND w.checkpoint_id = h.head",
                [INTERRUPT, INTERRUPT, *chunk],
            )
            by_thread: dict[str, list[tuple[Any, ...]]] = {t: [] for t in chunk}
            for row in rows:
                by_thread[row[0]].append(row[1:])
            for thread_id, writes in by_thread.items():
                found[thread_id] = self._pause(thread_id, self._asked(writes))
        return found

    def _asked(self, writes: list[tuple[Any, ...]]) -> list[tuple[str, Any]]:
        finished = {w[0] for w in writes if w[3] not in CONTROL_WRITES}
        asked = sorted(
            (
                w
                for w in writes
                if w[3] == INTERRUPT and w[0] != NULL_TASK_ID and w[0] not in finished
            ),
            key=lambda w: task_order(w[1], w[0], w[2]),
        )
        return [
            (interrupt_id, value)
            for w in asked
            for interrupt_id, value in interrupts_in(w[4], w[5])
        ]

    def pending(self, thread_id: str) -> Pause | None:
        """What the thread waits for: an approval first, else an outcome-unknown call
        (as `Session.pending`)."""
        return self._pause(thread_id, self._interrupts(thread_id))

    @staticmethod
    def _pause(thread_id: str, asked: list[tuple[str, Any]]) -> Pause | None:
        pauses = [pause_from(thread_id, interrupt_id, value) for interrupt_id, value in asked]
        return next((p for p in pauses if isinstance(p, Approval)), None) or next(
            (p for p in pauses if isinstance(p, OutcomeUnknown)), None
        )

    def cut_off(self) -> bool:
        """Whether a crash cut off a run in a tool call that started and never finished
        (its "outcome unknown" question is still to be asked): a dead run's thread with
        an unfinished journal entry."""
        rows = self._rows(
            f"SELECT {THREAD_COLUMNS} FROM gatehouse_threads WHERE status = 'running'"
        )
        thread_ids = [
            i.thread_id for i in self._live([ThreadInfo(*r) for r in rows]) if i.status != "running"
        ]
        if not thread_ids:
            return False
        marks = ",".join("?" * len(thread_ids))
        rows = self._rows(
            f"SELECT 1 FROM gatehouse_journal WHERE thread_id IN ({marks}) AND status = 'started' LIMIT 1",
            list(thread_ids),
        )
        return bool(rows)

    def pending_count(self, thread_id: str) -> int:
        """How many calls `pending(thread_id)` holds (an outcome-unknown pause: 1; none: 0):
        what `gatehouse threads` shows."""
        try:
            pause = self.pending(thread_id)
        except MalformedPause:  # it waits all the same; `pending` says what is wrong
            return 1
        if pause is None:
            return 0
        return len(pause.actions) if isinstance(pause, Approval) else 1

    def recent_decisions(self, thread_id: str, limit: int = 50) -> list[DecisionRecord]:
        """The thread's decision log, newest first (as `Session.audit`): what a refused
        command quotes to say who decided first."""
        rows = self._rows(
            f"SELECT {DECISION_COLUMNS} FROM gatehouse_decisions WHERE thread_id = ? ORDER BY decided_at DESC LIMIT ?",
            [thread_id, limit],
        )
        return [decision_of(r) for r in rows]

    def transcript(self, thread_id: str) -> list[MessageView] | None:
        """The thread's messages as `Session.transcript` shows them, or None when this
        reader cannot tell (no head at the latest checkpoint): ask the Session then."""
        messages = self.message_fields(thread_id)
        return None if messages is None else [view_of_fields(m) for m in messages]

    def message_fields(self, thread_id: str) -> list[dict[str, Any]] | None:
        checkpoint_id = self.latest_checkpoint(thread_id)
        if checkpoint_id is None:
            return []
        head = self._rows(
            "SELECT checkpoint_id, count FROM gatehouse_heads WHERE thread_id = ? AND checkpoint_ns = '' AND channel = ?",
            [thread_id, MESSAGES],
        )
        if not head or head[0][0] != checkpoint_id:
            return None
        rows = self._rows(
            "SELECT n, data FROM gatehouse_head_blocks WHERE thread_id = ? AND checkpoint_ns = '' AND channel = ? "
            "ORDER BY pos",
            [thread_id, MESSAGES],
        )
        if sum(n for n, _ in rows) != head[0][1]:
            return None
        try:
            messages = [m for n, data in rows for m in block_fields(n, data)]
            # What finished tasks wrote at the latest checkpoint, as `get_state` shows it.
            for value in self._pending_values(thread_id, checkpoint_id, MESSAGES):
                for m in value if isinstance(value, list) else [value]:
                    if not isinstance(m, dict) or m.get("type") in (None, "remove"):
                        return None
                    at = next(
                        (
                            i
                            for i, old in enumerate(messages)
                            if m.get("id") and old.get("id") == m["id"]
                        ),
                        None,
                    )
                    if at is None:
                        messages.append(m)
                    else:
                        messages[at] = m
        except (UnreadableValue, ValueError, TypeError, KeyError):
            return None
        if not all(isinstance(m, dict) for m in messages):
            return None
        return messages

    def _pending_values(self, thread_id: str, checkpoint_id: str, channel: str) -> list[Any]:
        """Values finished tasks (and updates: the null task) wrote to `channel` at a
        checkpoint, in the order LangGraph applies them."""
        writes = self._writes(thread_id, checkpoint_id, [channel])
        finished = {w[0] for w in writes if w[3] not in CONTROL_WRITES}
        chosen = [
            w for w in writes if w[3] == channel and (w[0] in finished or w[0] == NULL_TASK_ID)
        ]
        chosen.sort(key=lambda w: (w[0] != NULL_TASK_ID, w[1] or "", w[0], w[2]))
        return [loads(w[4], w[5]) for w in chosen]

    def usage(self, thread_id: str) -> dict[str, float]:
        """Token usage totals of the thread (the `usage` channel at its latest checkpoint)."""
        checkpoint_id = self.latest_checkpoint(thread_id)
        if checkpoint_id is None:
            return {}
        total = dict(self._channel_value(thread_id, checkpoint_id, USAGE) or {})
        for value in self._pending_values(thread_id, checkpoint_id, USAGE):
            for key, amount in (value or {}).items():
                total[key] = total.get(key, 0) + amount
        return total

    def _channel_value(self, thread_id: str, checkpoint_id: str, channel: str) -> Any:
        if not self._db.dialect.postgres:
            rows = self._rows(
                "SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
                [thread_id, checkpoint_id],
            )
            return (
                ((loads(*rows[0]) or {}).get("channel_values") or {}).get(channel) if rows else None
            )
        # Postgres keeps plain values in the checkpoint row and the rest in checkpoint_blobs.
        rows = self._rows(
            "SELECT b.type, b.blob, c.checkpoint -> 'channel_values' -> ? FROM checkpoints c "
            "LEFT JOIN checkpoint_blobs b ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns "
            "AND b.channel = ? AND b.version = c.checkpoint -> 'channel_versions' ->> ? "
            "WHERE c.thread_id = ? AND c.checkpoint_ns = '' AND c.checkpoint_id = ?",
            [channel, channel, channel, thread_id, checkpoint_id],
        )
        if not rows:
            return None
        type_tag, blob, inline = rows[0]
        return loads(type_tag, bytes(blob)) if blob is not None else inline

    def close(self) -> None:
        self._db.close()
        if self._on_close is not None:
            self._on_close()


def redact(url: str) -> str:
    """A database URL without its password, for messages and the settings page."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


def open_reader(db: str, *, pool: Any = None) -> ThreadReader:
    """A reader of the database named by a settings value (a SQLite path or a
    postgresql:// URL); `pool`: a psycopg pool to share (graph/store/postgres.py)."""
    if not is_postgres_url(db):
        return ThreadReader(read_sqlite(db), str(Path(db).expanduser()))
    if pool is not None:
        return ThreadReader(PostgresDatabase(pool.connection), redact(db))
    own = _OwnConnection(db)
    return ThreadReader(PostgresDatabase(own), redact(db), on_close=own.close)


__all__ = ["ThreadReader", "open_reader", "redact"]

"""Threads read straight from the database without LangGraph, for what must answer at
once (the terminal's `threads`, `pending`, `show`; the Session's pending check): the
index and leases, the interrupts at the latest checkpoint by LangGraph's task status
rules (langgraph/pregel/_task_status.py), the transcript from the head (graph/store/head.py).
"""

from __future__ import annotations

import gc
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from gatehouse.graph.protocol.decisions import DecisionRecord
from gatehouse.graph.protocol.errors import StorageError
from gatehouse.graph.protocol.pauses import (
    Approval,
    MalformedPause,
    OutcomeUnknown,
    Pause,
    pause_from,
)
from gatehouse.graph.protocol.state_keys import MESSAGES, USAGE
from gatehouse.graph.protocol.threads import ThreadInfo, view_of_fields
from gatehouse.graph.store import decisions
from gatehouse.graph.store.database import Database, PostgresDatabase, SqliteDatabase, among
from gatehouse.graph.store.dialect import is_postgres_url
from gatehouse.graph.store.langgraph_private import CONTROL_WRITES, INTERRUPT, NULL_TASK_ID
from gatehouse.graph.store.leases import Leases
from gatehouse.graph.store.plain import (
    READ_BLOCKS,
    READ_HEAD,
    UnreadableValue,
    block_fields,
    interrupts_in,
    loads,
    task_order,
)
from gatehouse.graph.store.threads import PENDING_WHERE, ThreadIndex

if TYPE_CHECKING:
    from gatehouse.graph.protocol.messages import MessageView

# `checkpoint_edges` answers from this index alone: a scan of the rows (whole
# checkpoints) read every page of the thread (135 ms cold at 2,000 turns).
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


@contextmanager
def _uncollected() -> Iterator[None]:
    """No garbage collection while cards are built: its passes over a Session's heap
    found nothing to free and were 0.3-0.9 s of 10,000 cards (issue 58)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class ThreadReader:
    """Read-only views of threads, each one or two indexed queries."""

    def __init__(
        self, db: Database, location: str, *, on_close: Callable[[], None] | None = None
    ) -> None:
        self._db = db
        self.location = location
        self._index, self._leases = ThreadIndex(db), Leases(db)  # never written to here
        self._on_close = on_close
        # The stock savers' writes tables (LangGraph names them apart).
        self._writes_table, self._writes_value = (
            ("checkpoint_writes", "blob") if db.dialect.postgres else ("writes", "value")
        )

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._read(self._db.rows, sql, params)

    def _read(self, read: Callable[..., Any], *args: Any) -> Any:
        try:
            return read(*args)
        except _NoFile:
            return []
        except self._db.errors as exc:
            # A database no Gatehouse run has written to yet reads as empty.
            if getattr(exc, "sqlstate", None) == "42P01" or (  # Postgres: undefined_table
                isinstance(exc, sqlite3.OperationalError)
                and ("no such table" in str(exc) or "no such column" in str(exc))
            ):
                return []
            raise StorageError(
                f"cannot read the Gatehouse database {self.location}: {exc}"
            ) from exc

    # -- the thread list -------------------------------------------------------------
    def threads(self, limit: int = 200) -> list[ThreadInfo]:
        return self._infos("ORDER BY updated_at DESC LIMIT ?", [limit])

    def thread(self, thread_id: str) -> ThreadInfo | None:
        return next(iter(self._infos("WHERE thread_id = ?", [thread_id])), None)

    def awaiting(self) -> list[ThreadInfo]:
        """Threads with a pause pending, oldest first, but those a live run is deciding."""
        infos = self._infos(f"WHERE {PENDING_WHERE} ORDER BY pending_since ASC")
        return [i for i in infos if i.status != "running"]

    def exists(self, thread_id: str) -> bool:
        anywhere = "SELECT 1 FROM checkpoints WHERE thread_id = ? LIMIT 1"
        return self.thread(thread_id) is not None or bool(self._rows(anywhere, [thread_id]))

    def _infos(self, where: str, params: Sequence[Any] = ()) -> list[ThreadInfo]:
        """Index rows; "running" without a live lease (a killed run) shows as interrupted."""
        infos: list[ThreadInfo] = self._read(self._index.select, where, params)
        held = self._read(self._leases.held, [i.thread_id for i in infos if i.status == "running"])
        return [
            replace(i, status="interrupted")
            if i.status == "running" and i.thread_id not in held
            else i
            for i in infos
        ]

    # -- one thread ----------------------------------------------------------------------
    def latest_checkpoint(self, thread_id: str) -> str | None:
        rows = self._rows(
            "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            [thread_id],
        )
        return rows[0][0] if rows else None

    def tip_count(self, thread_id: str) -> int:
        """How many branches the thread's checkpoint tree has (1: never forked)."""
        rows = self._rows(
            "SELECT count(*) - count(DISTINCT parent_checkpoint_id) FROM checkpoints "
            "WHERE thread_id = ? AND checkpoint_ns = ''",
            [thread_id],
        )
        return int(rows[0][0] or 0) if rows else 0

    def checkpoint_edges(self, thread_id: str) -> list[tuple[str, str | None]]:
        """(checkpoint id, parent id) of every checkpoint of the thread, from `TREE_INDEX`."""
        return self._rows(  # the rows as fetched: copying 12,000 pairs costs more than reading them
            "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''",
            [thread_id],
        )

    def _interrupts(self, thread_ids: Sequence[str]) -> dict[str, list[tuple[str, Any]]]:
        """(interrupt id, value) of what each thread waits for, in LangGraph's order: the
        interrupt writes at each one's latest checkpoint, a query per 500 threads (under
        SQLite's least limit of 999 values)."""
        found: dict[str, list[tuple[str, Any]]] = {}
        chunks = [thread_ids[at : at + 500] for at in range(0, len(thread_ids), 500)]
        for chunk, rows in zip(chunks, self._prefetched(chunks), strict=True):
            by_thread: dict[str, list[tuple[Any, ...]]] = {t: [] for t in chunk}
            for row in rows:
                by_thread[row[0]].append(row[1:])
            found.update((t, self._asked(writes)) for t, writes in by_thread.items())
        return found

    def _prefetched(self, chunks: list[Sequence[str]]) -> Iterator[list[tuple[Any, ...]]]:
        """The writes of each chunk, the next chunk's read going on (in a thread of its
        own, the first in this one) while the caller decodes this one: the database's
        work and ours on two cores, 0.3 s of 10,000 cards (issue 58)."""
        done: list[tuple[Any, BaseException | None]] = []

        def read(chunk: Sequence[str]) -> None:
            try:
                done.append((self._interrupt_writes(chunk), None))
            except BaseException as exc:  # raised in the caller's thread
                done.append((None, exc))

        ahead: threading.Thread | None = None
        for at, chunk in enumerate(chunks):
            if ahead is None:
                read(chunk)
            else:
                ahead.join()
            rows, error = done.pop()
            if error is not None:
                raise error
            if at + 1 < len(chunks):
                ahead = threading.Thread(target=read, args=(chunks[at + 1],), daemon=True)
                ahead.start()
            try:
                yield rows
            finally:
                if ahead is not None:
                    ahead.join()  # also when the caller stops: the connection is shared

    def _interrupt_writes(self, chunk: Sequence[str]) -> list[tuple[Any, ...]]:
        # Driven by the ids, each head and its writes found by index. Postgres takes the
        # ids as one array (500 placeholders cost psycopg more to parse than Postgres to
        # run: 0.2 s of 10,000 cards), read in a LATERAL that OFFSET 0 keeps from being
        # flattened: as a join, a generic plan hashed a scan of every thread's writes
        # even for one id (issue 58).
        value = f"CASE WHEN w.channel = ? THEN w.{self._writes_value} END"
        columns = f"w.thread_id, w.task_id, w.task_path, w.idx, w.channel, CASE WHEN w.channel = ? THEN w.type END, {value}"
        head = "(SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = t.column1 AND checkpoint_ns = '')"
        if self._db.dialect.postgres:
            sql = (
                f"SELECT {columns} FROM unnest(?::text[]) t(column1) CROSS JOIN LATERAL "
                f"(SELECT * FROM {self._writes_table} w WHERE w.thread_id = t.column1 "
                f"AND w.checkpoint_ns = '' AND w.checkpoint_id = {head} OFFSET 0) w"
            )
            return self._rows(sql, [INTERRUPT, INTERRUPT, list(chunk)])
        sql = (
            f"SELECT {columns} FROM (SELECT t.column1 AS thread_id, {head} AS head "
            f"FROM (VALUES {','.join(['(?)'] * len(chunk))}) t) h JOIN {self._writes_table} w "
            "ON w.thread_id = h.thread_id AND w.checkpoint_ns = '' AND w.checkpoint_id = h.head"
        )
        return self._rows(sql, [INTERRUPT, INTERRUPT, *chunk])

    def pending_many(self, thread_ids: Sequence[str]) -> dict[str, Pause | None]:
        """`pending` of many threads (the inbox's cards); `MalformedPause` as `pending`."""
        with _uncollected():
            asked = self._interrupts(list(dict.fromkeys(thread_ids)))
            return {t: self._pause(t, interrupts) for t, interrupts in asked.items()}

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
        return self._pause(thread_id, self._interrupts([thread_id])[thread_id])

    @staticmethod
    def _pause(thread_id: str, asked: list[tuple[str, Any]]) -> Pause | None:
        pauses = [pause_from(thread_id, interrupt_id, value) for interrupt_id, value in asked]
        return next((p for p in pauses if isinstance(p, Approval)), None) or next(
            (p for p in pauses if isinstance(p, OutcomeUnknown)), None
        )

    def cut_off(self) -> bool:
        """Whether a dead run's thread has a journal entry that started and never finished
        (its "outcome unknown" question is still to be asked)."""
        dead = [
            i.thread_id for i in self._infos("WHERE status = 'running'") if i.status != "running"
        ]
        return bool(dead) and bool(
            self._rows(
                f"SELECT 1 FROM gatehouse_journal WHERE {among('thread_id', dead)} "
                "AND status = 'started' LIMIT 1",
                dead,
            )
        )

    def pending_count(self, thread_id: str) -> int:
        """How many calls `pending(thread_id)` holds (an outcome-unknown pause: 1)."""
        try:
            pause = self.pending(thread_id)
        except MalformedPause:  # it waits all the same; `pending` says what is wrong
            return 1
        return len(pause.actions) if isinstance(pause, Approval) else int(pause is not None)

    def recent_decisions(self, thread_id: str, limit: int = 50) -> list[DecisionRecord]:
        """The thread's decision log, newest first (as `Session.audit`)."""
        rows = self._rows(
            f"SELECT {decisions.COLUMNS} FROM gatehouse_decisions WHERE thread_id = ? ORDER BY decided_at DESC LIMIT ?",
            [thread_id, limit],
        )
        return [decisions.record_of(r) for r in rows]

    def transcript(self, thread_id: str) -> list[MessageView] | None:
        """The messages as `Session.transcript` shows them; None: no head at the latest
        checkpoint (ask the Session)."""
        checkpoint_id = self.latest_checkpoint(thread_id)
        if checkpoint_id is None:
            return []
        head = self._rows(READ_HEAD, [thread_id, "", MESSAGES])
        if not head or head[0][0] != checkpoint_id:
            return None
        rows = self._rows(READ_BLOCKS, [thread_id, "", MESSAGES])
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
        return [view_of_fields(m) for m in messages]

    def _pending_values(self, thread_id: str, checkpoint_id: str, channel: str) -> list[Any]:
        """Values finished tasks (and updates: the null task) wrote to `channel` at a
        checkpoint, in the order LangGraph applies them."""
        writes = self._rows(
            f"SELECT task_id, task_path, idx, channel, CASE WHEN channel = ? THEN type END, "
            f"CASE WHEN channel = ? THEN {self._writes_value} END FROM {self._writes_table} "
            "WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?",
            [channel, channel, thread_id, checkpoint_id],
        )
        finished = {w[0] for w in writes if w[3] not in CONTROL_WRITES}
        chosen = [
            w for w in writes if w[3] == channel and (w[0] in finished or w[0] == NULL_TASK_ID)
        ]
        chosen.sort(key=lambda w: (w[0] != NULL_TASK_ID, w[1] or "", w[0], w[2]))
        return [loads(w[4], w[5]) for w in chosen]

    def usage(self, thread_id: str) -> dict[str, float]:
        """Token usage totals (the `usage` channel at the latest checkpoint)."""
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
    """A database URL without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def open_reader(db: str) -> ThreadReader:
    """A reader of a SQLite path or postgresql:// URL."""
    if not is_postgres_url(db):
        return ThreadReader(read_sqlite(db), str(Path(db).expanduser()))
    import psycopg

    class _BinaryCursor(psycopg.Cursor[Any]):
        """Results in binary: a card's ~2 KB of interrupt arrive as bytes, not twice as
        many hex digits for Postgres to write and psycopg to read (issue 58)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.format = psycopg.pq.Format.BINARY

    lock = threading.Lock()
    own: list[Any] = []

    @contextmanager
    def connection() -> Iterator[Any]:  # one of the reader's own, opened at the first read
        with lock:
            if not own:
                own.append(
                    psycopg.connect(
                        db, autocommit=True, connect_timeout=10, cursor_factory=_BinaryCursor
                    )
                )
            yield own[0]

    def close() -> None:
        with lock:
            if own:
                own.pop().close()

    return ThreadReader(PostgresDatabase(connection), redact(db), on_close=close)


__all__ = ["ThreadReader", "open_reader", "redact"]

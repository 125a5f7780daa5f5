"""Postgres storage: for several app processes (or machines) sharing threads.

Selected by a URL (`GATEHOUSE_DB=postgresql://...`). Everything SQLite holds moves
here, in one database and one connection pool per process:
- checkpoints: `GatehousePostgresSaver` (pg_saver.py): the official `PostgresSaver`
  (langgraph-checkpoint-postgres) with the materialised head and the warm cache of
  the SQLite saver, the thread index kept in the checkpoint's transaction, and
  refused answers dropped (refusals.py);
- the thread index, the execution journal, run leases, the decision log and tool
  outputs stored aside: small `gatehouse_*` tables with the same interface as their
  SQLite versions (graph/store/threads.py, journal.py, leases.py, decisions.py,
  outputs.py).

The schema is created on first use. Several processes starting at once serialise
the set-up on an advisory lock, so concurrent `CREATE TABLE IF NOT EXISTS` never race;
a process that finds the schema complete (one query) skips the set-up.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import psycopg
from langchain_core.messages import ToolCall, ToolMessage, message_to_dict
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

from graph.protocol.decisions import DecisionRecord
from graph.protocol.errors import RunInProgress, StorageError
from graph.protocol.threads import ThreadInfo
from graph.store.binding import KEY_COLUMN
from graph.store.decision_chain import (
    CHAIN_SCHEMA,
    POSTGRES,
    ChainCheck,
    read_for_check,
    seal_existing,
)
from graph.store.decision_chain import check as check_chain
from graph.store.decisions import _COLUMNS as DECISION_COLUMNS
from graph.store.decisions import SCHEMA as DECISIONS_SCHEMA
from graph.store.decisions import Decisions, _record, grants_in_force, insert_chained
from graph.store.decisions import _legacy_key as _legacy_decision_key
from graph.store.journal import COLUMNS as _COLUMNS
from graph.store.journal import (
    RESTORE_COLUMNS,
    Journal,
    JournalEntry,
    _dumps,
    _entry,
    already_started,
    bound_entry,
    key_of,
    restore_row,
)
from graph.store.journal import SCHEMA as JOURNAL_SCHEMA
from graph.store.journal import _legacy_key as _legacy_journal_key
from graph.store.leases import DEFAULT_TTL_S, Lease, Leases, Renewals, _ttl_default
from graph.store.outputs import SCHEMA as OUTPUTS_SCHEMA
from graph.store.outputs import ToolOutputs
from graph.store.pg_saver import HEAD_SCHEMA, GatehousePostgresSaver
from graph.store.reader import TREE_INDEX, ThreadReader, _Postgres, redact
from graph.store.storage import Storage
from graph.store.threads import THREADS_INDEX, THREADS_TABLE, TOUCH, touch_params

POOL_MAX_ENV = "GATEHOUSE_PG_POOL_MAX"
SETUP_LOCK_KEY = 0x6761_7465  # "gate": one advisory lock for schema set-up
SETUP_WAIT_S = 120.0

def _rebind(table: str, old_key: str) -> list[str]:
    """Add `call_key` to `table`'s primary key, once (a no-op for a bound table)."""
    return [
        f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {KEY_COLUMN} TEXT NOT NULL DEFAULT ''",
        f"""DO $$ BEGIN
            IF NOT EXISTS (
                SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
                WHERE i.indrelid = '{table}'::regclass AND i.indisprimary AND a.attname = '{KEY_COLUMN}')
            THEN
                ALTER TABLE {table} DROP CONSTRAINT {table}_pkey;
                ALTER TABLE {table} ADD PRIMARY KEY ({old_key}, {KEY_COLUMN});
            END IF;
        END $$""",
    ]


SCHEMA = [
    THREADS_TABLE.format(real="DOUBLE PRECISION"),
    THREADS_INDEX,
    # Databases created before the index kept a run's failure reason.
    "ALTER TABLE gatehouse_threads ADD COLUMN IF NOT EXISTS reason TEXT",
    *HEAD_SCHEMA,
    JOURNAL_SCHEMA.replace(" REAL", " DOUBLE PRECISION"),
    # Databases created before the journal counted attempts.
    "ALTER TABLE gatehouse_journal ADD COLUMN IF NOT EXISTS attempts INTEGER NOT NULL DEFAULT 1",
    # Databases created before rows were bound to their call (graph/store/binding.py):
    # the key joins the primary key, old rows get theirs in `_bind_old_rows`.
    *_rebind("gatehouse_journal", "thread_id, tool_call_id"),
    DECISIONS_SCHEMA.replace("decided_at REAL", "decided_at DOUBLE PRECISION"),
    "ALTER TABLE gatehouse_decisions ADD COLUMN IF NOT EXISTS request_id TEXT",
    *_rebind("gatehouse_decisions", "thread_id, question, tool_call_id"),
    "CREATE INDEX IF NOT EXISTS gatehouse_decisions_time ON gatehouse_decisions(decided_at)",
    CHAIN_SCHEMA,
    OUTPUTS_SCHEMA.replace("stored_at REAL", "stored_at DOUBLE PRECISION"),
    """CREATE TABLE IF NOT EXISTS gatehouse_leases (
        thread_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL)""",
    TREE_INDEX,
]


class PgThreadIndex:
    """The thread list (`gatehouse_threads`), same methods as `threads.ThreadIndex`."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def touch(
        self, thread_id: str, *, title: str | None = None, status: str | None = None, owner: str | None = None,
        reason: str | None = None,
    ) -> None:
        with self._pool.connection() as conn:  # one statement: one round trip
            conn.execute(TOUCH.replace("?", "%s"), touch_params(thread_id, title, status, owner, time.time(), reason))

    def rename(self, thread_id: str, title: str) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "UPDATE gatehouse_threads SET title=%s, updated_at=%s WHERE thread_id=%s", (title, time.time(), thread_id)
            )

    def get(self, thread_id: str) -> ThreadInfo | None:
        rows = self._select("WHERE thread_id=%s", (thread_id,))
        return rows[0] if rows else None

    def list(self, *, limit: int = 200, status: str | None = None) -> list[ThreadInfo]:
        if status:
            return self._select("WHERE status=%s ORDER BY updated_at DESC LIMIT %s", (status, limit))
        return self._select("ORDER BY updated_at DESC LIMIT %s", (limit,))

    def pending(self) -> list[ThreadInfo]:
        return self._select("WHERE status='awaiting_approval' ORDER BY pending_since ASC", ())

    def delete(self, thread_id: str) -> None:
        with self._pool.connection() as conn:
            conn.execute("DELETE FROM gatehouse_threads WHERE thread_id=%s", (thread_id,))

    def close(self) -> None:
        pass  # the pool is closed with the checkpointer (Storage.close)

    def _select(self, where: str, params: tuple[Any, ...]) -> list[ThreadInfo]:
        rows = self._rows(
            "SELECT thread_id, title, status, created_at, updated_at, pending_since, owner, reason "
            f"FROM gatehouse_threads {where}",
            params,
        )
        return [ThreadInfo(*row) for row in rows]


class PgJournal(Journal):
    """The execution journal (`gatehouse_journal`): `graph.store.journal.Journal` on Postgres.
    Each write is its own committed transaction before the graph moves on."""

    def __init__(self, pool: ConnectionPool, location: str = "") -> None:
        self._pool = pool
        self.location = location

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def get(self, thread_id: str, tool_call_id: str) -> JournalEntry | None:
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM gatehouse_journal WHERE thread_id=%s AND tool_call_id=%s "
            "ORDER BY started_at DESC LIMIT 1",
            (thread_id, tool_call_id),
        )
        return _entry(rows[0]) if rows else None

    def find(self, thread_id: str, call: ToolCall) -> JournalEntry | None:
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM gatehouse_journal WHERE thread_id=%s AND tool_call_id=%s AND call_key=%s",
            (thread_id, call["id"], key_of(call)),
        )
        return bound_entry(rows[0] if rows else None, call)

    def entries(self, thread_id: str) -> list[JournalEntry]:
        rows = self._rows(f"SELECT {_COLUMNS} FROM gatehouse_journal WHERE thread_id=%s ORDER BY started_at", (thread_id,))
        return [_entry(r) for r in rows]

    def start(self, thread_id: str, call: ToolCall) -> None:
        with self._pool.connection() as conn:
            claimed = conn.execute(
                "INSERT INTO gatehouse_journal(thread_id, tool_call_id, name, args_json, status, started_at, pid, "
                "call_key) VALUES (%s, %s, %s, %s, 'started', %s, %s, %s) "
                "ON CONFLICT (thread_id, tool_call_id, call_key) DO NOTHING",
                (thread_id, call["id"], call["name"], _dumps(call["args"]), time.time(), os.getpid(), key_of(call)),
            ).rowcount
        if claimed != 1:
            raise already_started(thread_id, call)

    def restart(self, thread_id: str, call: ToolCall, attempts: int) -> None:
        with self._pool.connection() as conn:
            claimed = conn.execute(
                "UPDATE gatehouse_journal SET started_at=%s, pid=%s, attempts=attempts+1 "
                "WHERE thread_id=%s AND tool_call_id=%s AND call_key=%s AND status='started' AND attempts=%s",
                (time.time(), os.getpid(), thread_id, call["id"], key_of(call), attempts),
            ).rowcount
        if claimed != 1:
            raise already_started(thread_id, call)

    def finish(self, thread_id: str, call: ToolCall, result: ToolMessage) -> None:
        payload = json.dumps(message_to_dict(result), default=str)
        now = time.time()
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO gatehouse_journal(thread_id, tool_call_id, name, args_json, status, result_json, "
                "started_at, finished_at, pid, call_key) VALUES (%s, %s, %s, %s, 'finished', %s, %s, %s, %s, %s) "
                "ON CONFLICT (thread_id, tool_call_id, call_key) DO UPDATE SET status='finished', "
                "result_json=excluded.result_json, finished_at=excluded.finished_at",
                (thread_id, call["id"], call["name"], _dumps(call["args"]), payload, now, now, os.getpid(), key_of(call)),
            )

    def delete_thread(self, thread_id: str) -> None:
        with self._pool.connection() as conn:
            conn.execute("DELETE FROM gatehouse_journal WHERE thread_id=%s", (thread_id,))

    def restore(self, entries: Sequence[JournalEntry]) -> None:
        with self._pool.connection() as conn, conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO gatehouse_journal({RESTORE_COLUMNS}) VALUES ({', '.join(['%s'] * 11)}) "
                "ON CONFLICT (thread_id, tool_call_id, call_key) DO NOTHING",
                [restore_row(e) for e in entries],
            )

    def close(self) -> None:
        pass


class PgDecisions(Decisions):
    """The decision log (`gatehouse_decisions`): `decisions.Decisions` on Postgres."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def record(self, records: Sequence[DecisionRecord]) -> None:
        with self._pool.connection() as conn, conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            insert_chained(cur, POSTGRES, records)

    def verify(self) -> ChainCheck:
        with self._pool.connection() as conn, conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
            # One snapshot of both tables, as SQLite's reader sees.
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            rows, chain = read_for_check(cur)
        return check_chain(rows, chain)

    def grants(self, thread_id: str) -> list[tuple[str, str | None]]:
        rows = self._rows(
            "SELECT tool, always_allow, decision FROM gatehouse_decisions "
            "WHERE thread_id=%s AND always_allow IS NOT NULL ORDER BY decided_at",
            (thread_id,),
        )
        return grants_in_force(rows)

    def for_call(self, thread_id: str, tool_call_id: str) -> list[DecisionRecord]:
        return self._select("WHERE thread_id=%s AND tool_call_id=%s ORDER BY decided_at", (thread_id, tool_call_id))

    def for_thread(self, thread_id: str) -> list[DecisionRecord]:
        return self._select("WHERE thread_id=%s ORDER BY decided_at", (thread_id,))

    def recent(self, limit: int = 200) -> list[DecisionRecord]:
        return self._select("ORDER BY decided_at DESC LIMIT %s", (limit,))

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def _select(self, where: str, params: tuple[Any, ...]) -> list[DecisionRecord]:
        return [_record(r) for r in self._rows(f"SELECT {DECISION_COLUMNS} FROM gatehouse_decisions {where}", params)]

    def close(self) -> None:
        pass


class PgToolOutputs(ToolOutputs):
    """Tool outputs stored aside (`gatehouse_tool_outputs`): `outputs.ToolOutputs` on Postgres."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def put(self, thread_id: str, tool_call_id: str, tool: str, content: str) -> None:
        # Postgres text cannot hold NUL; a binary-ish output keeps everything else.
        content = content.replace("\x00", "\ufffd")
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO gatehouse_tool_outputs(thread_id, tool_call_id, tool, content, chars, stored_at) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (thread_id, tool_call_id) DO UPDATE SET "
                "tool=excluded.tool, content=excluded.content, chars=excluded.chars, stored_at=excluded.stored_at",
                (thread_id, tool_call_id, tool, content, len(content), time.time()),
            )

    def get(self, thread_id: str, tool_call_id: str) -> str | None:
        rows = self._rows(
            "SELECT content FROM gatehouse_tool_outputs WHERE thread_id=%s AND tool_call_id=%s", (thread_id, tool_call_id)
        )
        return rows[0][0] if rows else None

    def for_thread(self, thread_id: str) -> dict[str, str]:
        rows = self._rows(
            "SELECT tool_call_id, content FROM gatehouse_tool_outputs WHERE thread_id=%s ORDER BY stored_at", (thread_id,)
        )
        return {call_id: content for call_id, content in rows}

    def delete_thread(self, thread_id: str) -> None:
        with self._pool.connection() as conn:
            conn.execute("DELETE FROM gatehouse_tool_outputs WHERE thread_id=%s", (thread_id,))

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def close(self) -> None:
        pass


class PgLeases(Leases):
    """Run leases (`gatehouse_leases`), same rules as `leases.Leases`: one run per
    thread across every process on every machine sharing the database. A holder on
    another host is only taken over when its lease expired (its pid means nothing here)."""

    transient_errors = (psycopg.Error, PoolTimeout)  # a failover or a full pool

    def __init__(self, pool: ConnectionPool, *, ttl: float | None = None) -> None:
        self._pool = pool
        self._lock = threading.Lock()
        self.ttl = ttl if ttl is not None else _ttl_default()
        self._renewals = Renewals(self)
        self._host = socket.gethostname()
        self._abandoned: set[str] = set()

    def acquire(self, thread_id: str, *, what: str = "a run") -> Lease:
        owner = f"{self._host}|{os.getpid()}|{uuid.uuid4().hex}"
        now = time.time()
        with self._pool.connection() as conn:
            # The usual case in one round trip: nobody holds the thread (no row, or a
            # released or expired one). A live-looking holder takes the path below.
            taken = conn.execute(
                "INSERT INTO gatehouse_leases(thread_id, owner, expires_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (thread_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at "
                "WHERE gatehouse_leases.owner = '' OR gatehouse_leases.expires_at <= %s RETURNING owner",
                (thread_id, owner, now + self.ttl, now),
            ).fetchone()
        if taken is not None:
            return Lease(self, thread_id, owner)
        with self._pool.connection() as conn, conn.transaction():
            # A free placeholder row first, so FOR UPDATE has a row to lock even for a
            # thread that never had a lease: two processes racing queue up here.
            conn.execute(
                "INSERT INTO gatehouse_leases(thread_id, owner, expires_at) VALUES (%s, '', 0) "
                "ON CONFLICT (thread_id) DO NOTHING",
                (thread_id,),
            )
            row = conn.execute(
                "SELECT owner, expires_at FROM gatehouse_leases WHERE thread_id=%s FOR UPDATE", (thread_id,)
            ).fetchone()
            current = (row["owner"], row["expires_at"]) if isinstance(row, dict) else row
            if current is not None and current[0] and not self._free(current[0], current[1], now):
                raise RunInProgress(
                    f"{what} is already running on thread {thread_id} "
                    f"({self._describe(current[0])}); wait for it to finish or stop it"
                )
            conn.execute(
                "UPDATE gatehouse_leases SET owner=%s, expires_at=%s WHERE thread_id=%s",
                (owner, now + self.ttl, thread_id),
            )
        return Lease(self, thread_id, owner)

    def renew(self, lease: Lease) -> bool:
        with self._pool.connection() as conn:
            cur = conn.execute(
                "UPDATE gatehouse_leases SET expires_at=%s WHERE thread_id=%s AND owner=%s",
                (time.time() + self.ttl, lease.thread_id, lease.owner),
            )
            return cur.rowcount == 1

    def release(self, lease: Lease) -> None:
        try:
            with self._pool.connection() as conn:
                conn.execute(
                    "DELETE FROM gatehouse_leases WHERE thread_id=%s AND owner=%s", (lease.thread_id, lease.owner)
                )
        except (psycopg.Error, PoolTimeout):
            self._abandoned.add(lease.owner)

    def holder(self, thread_id: str) -> str | None:
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT owner, expires_at FROM gatehouse_leases WHERE thread_id=%s", (thread_id,)
            ).fetchone()
        if row is None:
            return None
        owner, expires_at = (row["owner"], row["expires_at"]) if isinstance(row, dict) else row
        if not owner or self._free(owner, expires_at, time.time()):
            return None
        return owner

    def close(self) -> None:
        self._renewals.close()


# The tables the last statements of SCHEMA create: all there means nothing to set up.
LAST_TABLES = (
    "gatehouse_threads", "gatehouse_heads", "gatehouse_head_blocks", "gatehouse_journal", "gatehouse_decisions",
    "gatehouse_tool_outputs", "gatehouse_leases", "gatehouse_checkpoint_tree", "gatehouse_decision_chain",
)


# How many of the journal and the decision log have `call_key` in their primary key.
BOUND_KEYS = (
    "SELECT count(*) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
    f"WHERE i.indisprimary AND a.attname = '{KEY_COLUMN}' "
    "AND i.indrelid IN ('gatehouse_journal'::regclass, 'gatehouse_decisions'::regclass)"
)


def _bind_old_rows(conn: psycopg.Connection[Any]) -> None:
    """Give rows written before rows were bound their key, computed from their own tool
    and arguments (as graph/store/binding.py does for SQLite)."""
    with conn.cursor(row_factory=dict_row) as cur:
        for row in cur.execute("SELECT thread_id, tool_call_id, name, args_json FROM gatehouse_journal WHERE call_key=''").fetchall():
            cur.execute(
                "UPDATE gatehouse_journal SET call_key=%s WHERE thread_id=%s AND tool_call_id=%s AND call_key=''",
                (_legacy_journal_key(row), row["thread_id"], row["tool_call_id"]),
            )
        for row in cur.execute(
            "SELECT thread_id, question, tool_call_id, tool, args_json, requested_args_json FROM gatehouse_decisions "
            "WHERE call_key=''"
        ).fetchall():
            cur.execute(
                "UPDATE gatehouse_decisions SET call_key=%s WHERE thread_id=%s AND question=%s AND tool_call_id=%s "
                "AND call_key=''",
                (_legacy_decision_key(row), row["thread_id"], row["question"], row["tool_call_id"]),
            )


def _set_up_already(conn: psycopg.Connection[Any], saver: GatehousePostgresSaver) -> bool:
    with conn.cursor(row_factory=tuple_row) as cur:
        row = cur.execute(
            "SELECT " + ", ".join(f"to_regclass('{t}') IS NOT NULL" for t in ("checkpoint_migrations", *LAST_TABLES))
        ).fetchone()
        if not row or not all(row):
            return False
        version = cur.execute("SELECT max(v) FROM checkpoint_migrations").fetchone()
        bound = cur.execute(BOUND_KEYS).fetchone()
    return version is not None and version[0] == len(saver.MIGRATIONS) - 1 and bound is not None and bound[0] == 2


def _setup(pool: ConnectionPool, saver: GatehousePostgresSaver) -> None:
    """Create (or migrate) the schema once, whichever process gets here first."""
    with pool.connection() as conn:
        # Polled, not a blocking pg_advisory_lock: the saver's migrations include
        # CREATE INDEX CONCURRENTLY, which waits for every open transaction in the
        # database, a process blocked inside pg_advisory_lock included: a deadlock.
        deadline = time.monotonic() + SETUP_WAIT_S
        while not conn.execute("SELECT pg_try_advisory_lock(%s) AS locked", (SETUP_LOCK_KEY,)).fetchone()["locked"]:
            if time.monotonic() > deadline:
                raise StorageError(f"another process has been setting up the database for {SETUP_WAIT_S:.0f} s")
            time.sleep(0.1)
        try:
            saver.setup()
            new_chain = conn.execute("SELECT to_regclass('gatehouse_decision_chain') IS NULL AS new").fetchone()["new"]
            for statement in SCHEMA:
                conn.execute(statement)
            # Old rows get their call keys before a new chain seals the log as it stands.
            _bind_old_rows(conn)
            if new_chain:  # a log recorded before the chain existed: chained as it stands
                with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
                    seal_existing(cur, POSTGRES)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK_KEY,))


def open_postgres_storage(url: str, *, max_size: int | None = None) -> Storage:
    """A Storage on the Postgres database at `url` (the schema is set up on first use)."""
    where = redact(url)
    size = max_size or int(os.environ.get(POOL_MAX_ENV, "") or 10)
    pool = ConnectionPool(
        url,
        min_size=1,
        max_size=max(size, 2),
        # What PostgresSaver needs from its connections.
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=False,
        name="gatehouse",
    )
    try:
        # The pool connects in the background while one plain connection checks the
        # URL (a wrong one fails at once, with the server's reason: the pool alone
        # would retry quietly until its timeout) and whether the schema is complete.
        pool.open(wait=False)
        saver = GatehousePostgresSaver(pool)
        with psycopg.connect(url, connect_timeout=10, autocommit=True) as check:
            ready = _set_up_already(check, saver)
        pool.wait(timeout=30)
        if not ready:
            _setup(pool, saver)
    except (psycopg.Error, PoolTimeout, StorageError) as exc:
        pool.close()
        raise StorageError(f"cannot use the Gatehouse database {where}: {exc}") from exc
    return Storage(
        checkpointer=saver,
        index=PgThreadIndex(pool),  # type: ignore[arg-type]
        location=where,
        journal=PgJournal(pool, where),  # type: ignore[arg-type]
        leases=PgLeases(pool),
        decisions=PgDecisions(pool),
        outputs=PgToolOutputs(pool),
        reader=ThreadReader(_Postgres(url, pool), where),
    )


__all__ = ["DEFAULT_TTL_S", "PgJournal", "PgLeases", "PgThreadIndex", "PgToolOutputs", "open_postgres_storage", "redact"]

"""Postgres storage, for app processes sharing threads (`GATEHOUSE_DB=postgresql://...`):
one connection pool per process, the same tables as on SQLite. The schema is set up on
first use under an advisory lock (concurrent `CREATE TABLE IF NOT EXISTS` race); a
process that finds it complete (one query) skips it.
"""

from __future__ import annotations

import os
import time
from contextlib import nullcontext
from typing import Any

import psycopg
from psycopg.rows import dict_row, tuple_row
from psycopg_pool import ConnectionPool, PoolTimeout

from gatehouse.graph.protocol.errors import StorageError
from gatehouse.graph.store.binding import KEY_COLUMN
from gatehouse.graph.store.database import PostgresDatabase
from gatehouse.graph.store.decisions import Decisions
from gatehouse.graph.store.dialect import POSTGRES
from gatehouse.graph.store.head import HEAD_TABLES
from gatehouse.graph.store.journal import Journal
from gatehouse.graph.store.leases import Leases
from gatehouse.graph.store.outputs import ToolOutputs
from gatehouse.graph.store.pg_saver import GatehousePostgresSaver
from gatehouse.graph.store.queued import QueuedMessages
from gatehouse.graph.store.reader import TREE_INDEX, ThreadReader, redact
from gatehouse.graph.store.storage import Storage
from gatehouse.graph.store.threads import ThreadIndex

POOL_MAX_ENV = "GATEHOUSE_PG_POOL_MAX"
SETUP_LOCK_KEY = 0x6761_7465  # "gate": one advisory lock for schema set-up
SETUP_WAIT_S = 120.0
TABLES = (ThreadIndex, Journal, Decisions, ToolOutputs, QueuedMessages, Leases)


# The tables set-up creates last: all there means nothing to set up.
LAST_TABLES = (
    *(table.name for table in TABLES),
    "gatehouse_heads",
    "gatehouse_head_blocks",
    "gatehouse_checkpoint_tree",
    "gatehouse_decision_chain",
)


# How many of the journal and the decision log have `call_key` in their primary key.
BOUND_KEYS = (
    "SELECT count(*) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
    f"WHERE i.indisprimary AND a.attname = '{KEY_COLUMN}' "
    "AND i.indrelid IN (to_regclass('gatehouse_journal'), to_regclass('gatehouse_decisions'))"
)


def _set_up_already(conn: psycopg.Connection[Any], saver: GatehousePostgresSaver) -> bool:
    """Whether the schema is complete and current, in one round trip."""
    tables = ", ".join(
        f"to_regclass('{t}') IS NOT NULL" for t in ("checkpoint_migrations", *LAST_TABLES)
    )
    try:
        with conn.pipeline():
            first = conn.cursor(row_factory=tuple_row).execute(f"SELECT {tables}, ({BOUND_KEYS})")
            second = conn.cursor(row_factory=tuple_row).execute(
                "SELECT max(v) FROM checkpoint_migrations"
            )
            found, version = first.fetchone(), second.fetchone()
    except psycopg.errors.UndefinedTable:
        return False
    return (
        found is not None
        and all(found[:-1])
        and found[-1] == 2
        and version is not None
        and version[0] == len(saver.MIGRATIONS) - 1
    )


def _setup(pool: ConnectionPool, saver: GatehousePostgresSaver) -> None:
    """Create (or migrate) the schema once, whichever process gets here first."""
    with pool.connection() as conn:
        db = PostgresDatabase(lambda: nullcontext(conn))
        # Polled: CREATE INDEX CONCURRENTLY (a migration) waits for every open
        # transaction, one blocked in pg_advisory_lock too: a deadlock.
        deadline = time.monotonic() + SETUP_WAIT_S
        while not db.rows("SELECT pg_try_advisory_lock(?)", (SETUP_LOCK_KEY,))[0][0]:
            if time.monotonic() > deadline:
                raise StorageError(
                    f"another process has been setting up the database for {SETUP_WAIT_S:.0f} s"
                )
            time.sleep(0.1)
        try:
            saver.setup()
            for statement in (*map(POSTGRES.ddl, HEAD_TABLES), TREE_INDEX):
                db.run(statement)
            # One transaction: a migration stopped half-way does not look complete.
            with db.transaction() as cur:
                for table in TABLES:
                    table.create(cur)
        finally:
            db.run("SELECT pg_advisory_unlock(?)", (SETUP_LOCK_KEY,))


def open_postgres_storage(url: str, *, max_size: int | None = None) -> Storage:
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
        # The pool connects in the background while one connection checks the URL (a
        # wrong one fails at once with the server's reason; the pool would retry) and
        # whether the schema is complete.
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
    db = PostgresDatabase(pool.connection)
    return Storage(
        checkpointer=saver,
        index=ThreadIndex(db),
        location=where,
        journal=Journal(db),
        leases=Leases(db),
        decisions=Decisions(db),
        outputs=ToolOutputs(db),
        queued=QueuedMessages(db),
        reader=ThreadReader(db, where),
    )


__all__ = ["open_postgres_storage", "redact"]

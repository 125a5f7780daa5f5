"""SQLite storage: opening the file (WAL, busy timeout, owner-only), the integrity check
at start, and the Storage: the checkpointer and each table on a connection of its own."""

from __future__ import annotations

import os
import sqlite3
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from gatehouse.graph.protocol.errors import StorageError
from gatehouse.graph.store.database import SqliteDatabase, Table

if TYPE_CHECKING:
    from gatehouse.graph.store.storage import Storage

BUSY_TIMEOUT_MS = 30_000
# The queued messages' connection: a file another process holds locked says so within
# seconds, before a run waits on it.
QUICK_BUSY_MS = 2_000
# A full check reads every page (~1 ms a MB): a file up to this size is checked whole at
# start; a larger one only its small, always-read tables (damage elsewhere shows when a
# damaged page is read, as an error naming the file).
QUICK_CHECK_FULL_BYTES = 1024 * 1024
# The WAL is folded into the database every WAL_PAGES pages and cut back to WAL_BYTES:
# by default it keeps ~4 MB on disk, as much again as a 200-turn thread's database.
WAL_PAGES = 256
WAL_BYTES = 1024 * 1024
ALWAYS_CHECKED = (
    "sqlite_schema",
    *(f"gatehouse_{t}" for t in ("threads", "leases", "journal", "heads")),
)


def connect_sqlite(
    path: str | Path, *, autocommit: bool = False, busy_ms: int = BUSY_TIMEOUT_MS
) -> sqlite3.Connection:
    """Open (creating if needed) a SQLite file tuned for several threads and processes."""
    file = Path(path).expanduser()
    try:
        file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if str(file) != ":memory:" and not file.exists():
            # A new file is its owner's only (0600, and so its -wal and -shm): whoever can
            # write it can approve.
            with suppress(FileExistsError):
                os.close(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        conn = sqlite3.connect(
            str(file),
            check_same_thread=False,
            timeout=busy_ms / 1000,
            isolation_level=None if autocommit else "DEFERRED",
        )
        conn.execute(f"PRAGMA busy_timeout={busy_ms}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
        conn.execute(f"PRAGMA journal_size_limit={WAL_BYTES}")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (sqlite3.Error, OSError) as exc:
        raise StorageError(f"cannot open the Gatehouse database {file}: {exc}") from exc
    return conn


def sqlite_database(
    path: str | Path, *tables: type[Table], lazy: bool = False, busy_ms: int = BUSY_TIMEOUT_MS
) -> SqliteDatabase:
    """A connection of its own (autocommit) to `path`, `tables` created or migrated in
    one transaction; `lazy` (no `tables`): opened at the first use."""
    if lazy:
        assert not tables, "a lazy connection creates no tables"
        return SqliteDatabase(
            None, connect=lambda: connect_sqlite(path, autocommit=True, busy_ms=busy_ms)
        )
    db = SqliteDatabase(connect_sqlite(path, autocommit=True))
    if not tables:
        return db
    try:
        with db.transaction() as cur:
            for table in tables:
                table.create(cur)
    except BaseException:
        db.close()
        raise
    return db


def quick_check(conn: sqlite3.Connection, file: Path) -> None:
    if not file.exists():
        return
    if file.stat().st_size <= QUICK_CHECK_FULL_BYTES:
        checks = ["PRAGMA quick_check(1)"]
    else:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        tables.add("sqlite_schema")
        checks = [f"PRAGMA quick_check({t})" for t in ALWAYS_CHECKED if t in tables]
    for check in checks:
        row = conn.execute(check).fetchone()
        if row and row[0] != "ok":
            raise StorageError(
                f"the Gatehouse database {file} is corrupt ({row[0]}); move it aside or restore a backup"
            )


def open_sqlite_storage(db: str) -> Storage:
    from gatehouse.graph.store.decisions import Decisions
    from gatehouse.graph.store.journal import Journal
    from gatehouse.graph.store.leases import Leases
    from gatehouse.graph.store.outputs import ToolOutputs
    from gatehouse.graph.store.queued import QueuedMessages
    from gatehouse.graph.store.reader import ThreadReader, read_sqlite
    from gatehouse.graph.store.saver import GatehouseSqliteSaver
    from gatehouse.graph.store.storage import Storage
    from gatehouse.graph.store.threads import ThreadIndex

    location = str(Path(db).expanduser())
    conn = connect_sqlite(db)
    try:
        quick_check(conn, Path(db).expanduser())
        saver = GatehouseSqliteSaver(conn)
        saver.setup()
        # Each table on its own connection (the saver locks its own); the outputs' opens
        # when first used (most sessions offload nothing).
        lease_db = sqlite_database(
            db, ThreadIndex, Journal, Decisions, ToolOutputs, QueuedMessages, Leases
        )
        # A read-only file opens and takes BEGIN IMMEDIATE: fail here, at start, not at a
        # person's first approval, with a write undone at once.
        with lease_db.transaction() as cur:
            cur.execute("SAVEPOINT probe")
            cur.execute("INSERT OR REPLACE INTO gatehouse_leases VALUES ('', '', 0)")
            cur.execute("ROLLBACK TO probe")
        return Storage(
            checkpointer=saver,
            index=ThreadIndex(sqlite_database(db)),
            location=location,
            journal=Journal(sqlite_database(db)),
            leases=Leases(lease_db),
            decisions=Decisions(sqlite_database(db)),
            outputs=ToolOutputs(sqlite_database(db, lazy=True)),
            queued=QueuedMessages(sqlite_database(db, lazy=True, busy_ms=QUICK_BUSY_MS)),
            reader=ThreadReader(read_sqlite(db), location),
        )
    except sqlite3.Error as exc:
        raise StorageError(f"cannot use the Gatehouse database {location}: {exc}") from exc

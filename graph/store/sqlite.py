"""SQLite plumbing shared by the checkpoints, the thread index, the journal and the
leases: one way to open the file (WAL, busy timeout) and one write transaction."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from graph.protocol.errors import StorageError

BUSY_TIMEOUT_MS = 30_000
# Corruption past the first page only shows when pages are read. A full check reads
# every page (about 1 ms a MB): a file up to this size is checked whole at start;
# a larger one has its small, always-read tables checked (thread index, leases,
# journal, heads: constant time, whatever the threads' length), and damage in the
# history tables shows when a damaged page is read, as an error naming the file.
QUICK_CHECK_FULL_BYTES = 1024 * 1024
ALWAYS_CHECKED = ("sqlite_schema", "gatehouse_threads", "gatehouse_leases", "gatehouse_journal", "gatehouse_heads")


def connect_sqlite(path: str | Path, *, autocommit: bool = False) -> sqlite3.Connection:
    """Open (creating if needed) a SQLite file tuned for several threads and processes."""
    file = Path(path).expanduser()
    try:
        file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _create_private(file)
        conn = sqlite3.connect(
            str(file),
            check_same_thread=False,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None if autocommit else "",
        )
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except (sqlite3.Error, OSError) as exc:
        raise StorageError(f"cannot open the Gatehouse database {file}: {exc}") from exc
    return conn


def _create_private(file: Path) -> None:
    """A new database file readable and writable by its owner only (0600): whoever can
    write it can approve (the terminal and the Python API trust the file's owner).
    SQLite gives its -wal and -shm files the database file's permissions."""
    if str(file) == ":memory:" or file.exists():
        return
    with suppress(FileExistsError):
        os.close(os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


@contextmanager
def immediate(conn: sqlite3.Connection, lock: threading.Lock) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE takes the write lock up front, so two processes deciding on the
    same row serialise here instead of failing later with "database is locked"."""
    with lock:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def quick_check(conn: sqlite3.Connection, file: Path) -> None:
    if not file.exists():
        return
    if file.stat().st_size <= QUICK_CHECK_FULL_BYTES:
        checks = ["PRAGMA quick_check(1)"]
    else:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        checks = [f"PRAGMA quick_check({t})" for t in ALWAYS_CHECKED if t in tables or t == "sqlite_schema"]
    for check in checks:
        row = conn.execute(check).fetchone()
        if row and row[0] != "ok":
            raise StorageError(
                f"the Gatehouse database {file} is corrupt ({row[0]}); move it aside or restore a backup"
            )

"""How the Gatehouse tables speak to SQLite and to Postgres, so each table is written once.

The tables (threads.py, journal.py, decisions.py, outputs.py, leases.py,
notifications.py) write their SQL once, with `?` placeholders, `{real}` for a float
column and `INSERT ... ON CONFLICT` upserts (a syntax both databases share), and run
it through a `Database`:
- `SqliteDatabase`: one connection and its lock; a write transaction is
  `BEGIN IMMEDIATE` (the write lock up front, so two processes writing the same row
  queue up instead of failing later with "database is locked");
- `PostgresDatabase`: connections from a psycopg pool (or one per statement), each
  statement committed on its own unless it runs inside `transaction()`.
`Dialect` holds the few real differences: placeholders, column types, row locks,
the schema queries the migrations need, what a TEXT column can hold.

Imports only the standard library (psycopg when a Postgres database is used), so the
fast read paths that import the tables stay fast.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

POSTGRES_SCHEMES = ("postgres://", "postgresql://")

Row = tuple[Any, ...]


def is_postgres_url(db: str) -> bool:
    """Whether a database setting names a Postgres server (else: a SQLite file)."""
    return db.startswith(POSTGRES_SCHEMES)


@lru_cache(maxsize=512)
def _pyformat(sql: str) -> str:
    """`?` placeholders -> psycopg's `%s`; a literal `%` doubled (psycopg reads `%` anywhere
    as the start of a placeholder). A `?` inside a quoted string stays."""
    out: list[str] = []
    quote = ""
    for ch in sql:
        if ch == "%":
            out.append("%%")
        elif quote:
            quote = "" if ch == quote else quote
            out.append(ch)
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        else:
            out.append("%s" if ch == "?" else ch)
    return "".join(out)


@dataclass(frozen=True)
class Dialect:
    """What differs between the two databases, as far as the tables care."""

    name: Literal["sqlite", "postgres"]
    real: str  # a float column (timestamps)
    blob: str  # a bytes column
    # Appended to a SELECT in a transaction: lock the rows read until it ends. SQLite's
    # write transaction holds the whole file already.
    for_update: str
    # A column in the order rows were inserted ("" where the database keeps none).
    insertion_column: str

    @property
    def postgres(self) -> bool:
        return self.name == "postgres"

    def sql(self, statement: str) -> str:
        """A statement written with `?` placeholders, as this database's driver takes it."""
        return _pyformat(statement) if self.postgres else statement

    def by_insertion(self, column: str) -> str:
        """An ORDER BY list: `column`, ties in the order the rows were inserted where the
        database can tell."""
        return f"{column}, {self.insertion_column}" if self.insertion_column else column

    def ddl(self, statement: str) -> str:
        """A table definition written with `{real}` / `{blob}` column types."""
        return statement.format(real=self.real, blob=self.blob)

    def text(self, value: str) -> str:
        """A string as a TEXT column stores it: Postgres text cannot hold NUL."""
        return value.replace("\x00", "\ufffd") if self.postgres else value

    def xact_lock(self, key: int) -> str | None:
        """A statement that serialises a transaction with every other one taking `key`
        (held until it ends); None for SQLite, whose write transaction is serial already."""
        return f"SELECT pg_advisory_xact_lock({int(key)})" if self.postgres else None

    def table_exists(self, cur: Cursor, table: str) -> bool:
        if self.postgres:
            return bool(cur.execute("SELECT to_regclass(?) IS NOT NULL", (table,)).fetchone()[0])  # type: ignore[index]  # one row always
        return cur.execute("SELECT 1 FROM sqlite_schema WHERE type='table' AND name=?", (table,)).fetchone() is not None

    def columns(self, cur: Cursor, table: str) -> set[str]:
        """The table's column names (empty: no such table)."""
        if self.postgres:
            rows = cur.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = ?", (table,)).fetchall()
            return {r[0] for r in rows}
        return {r[1] for r in cur.execute(f"PRAGMA table_info({table})").fetchall()}

    def primary_key(self, cur: Cursor, table: str) -> set[str]:
        """The columns of the table's primary key (empty: no such table)."""
        if self.postgres:
            if not self.table_exists(cur, table):
                return set()
            rows = cur.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(?) AND i.indisprimary", (table,),
            ).fetchall()
            return {r[0] for r in rows}
        return {r[1] for r in cur.execute(f"PRAGMA table_info({table})").fetchall() if r[5]}


SQLITE = Dialect("sqlite", real="REAL", blob="BLOB", for_update="", insertion_column="rowid")
POSTGRES = Dialect("postgres", real="DOUBLE PRECISION", blob="BYTEA", for_update=" FOR UPDATE", insertion_column="")


def upsert(table: str, columns: Sequence[str], key: Sequence[str], update: Sequence[str] = (), where: str = "") -> str:
    """`INSERT INTO table(columns) VALUES (?, ...) ON CONFLICT (key) DO ...`: DO NOTHING
    without `update`, else each `update` column takes the inserted value (`where`: only
    when the existing row passes it)."""
    sql = (f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
           f"ON CONFLICT ({', '.join(key)}) DO ")
    if not update:
        return sql + "NOTHING"
    return sql + "UPDATE SET " + ", ".join(f"{c}=excluded.{c}" for c in update) + (f" WHERE {where}" if where else "")


class Cursor:
    """A DB-API cursor that takes statements written with `?` and runs them in its dialect."""

    def __init__(self, raw: Any, dialect: Dialect) -> None:
        self.raw = raw
        self.dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        # Always a tuple, never None: psycopg then reads `%%` as the `%` it stands for.
        self.raw.execute(self.dialect.sql(sql), tuple(params))
        return self

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = [tuple(r) for r in rows]
        if rows:
            self.raw.executemany(self.dialect.sql(sql), rows)

    def fetchone(self) -> Row | None:
        row = self.raw.fetchone()
        return None if row is None else tuple(row)

    def fetchall(self) -> list[Row]:
        return [tuple(r) for r in self.raw.fetchall()]

    @property
    def rowcount(self) -> int:
        return int(self.raw.rowcount)

    @property
    def description(self) -> Any:
        return self.raw.description


class Database:
    """One database for one table: reads, single statements and transactions."""

    dialect: Dialect
    # What a failing statement raises (a busy or full disk, a failover, a full pool).
    errors: tuple[type[BaseException], ...]

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """A query's rows."""
        with self.snapshot() as cur:
            return cur.execute(sql, params).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """One statement in a transaction of its own; how many rows it changed."""
        with self.transaction() as cur:
            return cur.execute(sql, params).rowcount

    def transaction(self) -> AbstractContextManager[Cursor]:
        """Statements that commit together (or not at all, on an exception)."""
        raise NotImplementedError

    def snapshot(self) -> AbstractContextManager[Cursor]:
        """Reads that see one state of the database."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class SqliteDatabase(Database):
    """A SQLite connection (autocommit mode, see graph/store/sqlite.py) of one table's
    own, serialised by a lock: the connection is shared by the process's threads."""

    dialect = SQLITE

    def __init__(self, conn: Any) -> None:
        import sqlite3

        self.errors = (sqlite3.Error,)
        self._conn = conn
        self._lock = threading.Lock()

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._lock:  # one statement is its own snapshot
            rows: list[Row] = self._conn.execute(sql, tuple(params)).fetchall()
            return rows

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        with self._lock:
            yield from self._in("BEGIN IMMEDIATE")

    @contextmanager
    def snapshot(self) -> Iterator[Cursor]:
        with self._lock:
            yield from self._in("BEGIN")

    def _in(self, begin: str) -> Iterator[Cursor]:
        self._conn.execute(begin)
        try:
            yield Cursor(self._conn.cursor(), SQLITE)
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()


class PostgresDatabase(Database):
    """Postgres through `connect()`: a pool's `connection` (autocommit connections), or
    a function opening a connection of its own for each use."""

    dialect = POSTGRES

    def __init__(self, connect: Callable[[], AbstractContextManager[Any]]) -> None:
        import psycopg
        from psycopg.rows import tuple_row
        from psycopg_pool import PoolTimeout

        self.errors = (psycopg.Error, PoolTimeout)
        self._connect = connect
        self._tuple_row = tuple_row

    @classmethod
    def at(cls, url: str) -> PostgresDatabase:
        """A connection per use: for a table used now and then, beside no pool."""
        import psycopg

        return cls(lambda: psycopg.connect(url, autocommit=True, connect_timeout=10))

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._connect() as conn, conn.cursor(row_factory=self._tuple_row) as cur:
            return Cursor(cur, POSTGRES).execute(sql, params).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        # Autocommit: one statement commits on its own, in one round trip.
        with self._connect() as conn, conn.cursor(row_factory=self._tuple_row) as cur:
            return Cursor(cur, POSTGRES).execute(sql, params).rowcount

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        with self._connect() as conn, conn.transaction(), conn.cursor(row_factory=self._tuple_row) as cur:
            yield Cursor(cur, POSTGRES)

    @contextmanager
    def snapshot(self) -> Iterator[Cursor]:
        with self.transaction() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield cur

    def close(self) -> None:
        pass  # a pool is closed by its owner (Storage.close closes the checkpointer's)


class Table:
    """One table's rows on one database: a subclass writes its DDL (`create`) and its
    statements once, for either dialect."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self.dialect = db.dialect

    @staticmethod
    def create(cur: Cursor) -> None:
        """Create the table, or bring an older one up to date (in the caller's transaction)."""
        raise NotImplementedError

    def close(self) -> None:
        self._db.close()


__all__ = [
    "POSTGRES", "SQLITE", "Cursor", "Database", "Dialect", "PostgresDatabase", "SqliteDatabase", "Table",
    "is_postgres_url", "upsert",
]

"""How the Gatehouse tables run their statements (written with `?`, dialect.py) on
either database. SQLite writes begin with `BEGIN IMMEDIATE`: two processes writing one
row queue up instead of failing with "database is locked". Postgres statements commit
on their own unless inside `transaction()`; psycopg is imported only when used.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from gatehouse.graph.store.dialect import POSTGRES, SQLITE, Dialect

Row = tuple[Any, ...]


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

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)  # fetchone, fetchall, rowcount, description

    # What the migrations ask about the schema (empty: no such table).
    def table_exists(self, table: str) -> bool:
        return bool(self._names("table", table))

    def columns(self, table: str) -> set[str]:
        return self._names("columns", table)

    def primary_key(self, table: str) -> set[str]:
        return self._names("primary_key", table)

    def add_column(self, table: str, column: str) -> None:
        """Add `column` ("name TYPE ...") to an older `table` that lacks it."""
        if column.split()[0] not in self.columns(table):
            self.execute(self.dialect.ddl(f"ALTER TABLE {table} ADD COLUMN {column}"))

    def _names(self, question: str, table: str) -> set[str]:
        return {
            r[0] for r in self.execute(_SCHEMA[self.dialect.name][question], (table,)).fetchall()
        }


# The schema questions, one query per database each: a name per row, the table's as `?`.
_SCHEMA = {
    "sqlite": {
        "table": "SELECT name FROM sqlite_schema WHERE type='table' AND name=?",
        "columns": "SELECT name FROM pragma_table_info(?)",
        "primary_key": "SELECT name FROM pragma_table_info(?) WHERE pk > 0",
    },
    "postgres": {
        "table": "SELECT relname FROM pg_class WHERE oid = to_regclass(?)",
        "columns": "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = ?",
        "primary_key": "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(?) AND i.indisprimary",
    },
}


class Database:
    """One database for one table: reads, single statements and transactions."""

    dialect: Dialect
    # What a failing statement raises (a busy or full disk, a failover, a full pool).
    errors: tuple[type[BaseException], ...]

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self.read() as cur:
            return cur.execute(sql, params).fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """One statement in a transaction of its own; how many rows it changed."""
        raise NotImplementedError

    def transaction(self) -> AbstractContextManager[Cursor]:
        """Statements that commit together (or not at all, on an exception)."""
        raise NotImplementedError

    def snapshot(self) -> AbstractContextManager[Cursor]:
        """Reads that see one state of the database."""
        raise NotImplementedError

    def read(self) -> AbstractContextManager[Cursor]:
        """A cursor for one query, in no transaction of its own: one statement sees one
        state of the database already (on Postgres: one round trip, not four)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class SqliteDatabase(Database):
    """A SQLite connection in autocommit mode, serialised by a lock (threads share it)."""

    dialect = SQLITE

    def __init__(self, conn: Any, connect: Callable[[], Any] | None = None) -> None:
        import sqlite3

        self.errors = (sqlite3.Error,)
        self._conn = conn
        self._connect = connect
        self._lock = threading.Lock()

    def _connection(self) -> Any:
        # Called with the lock held.
        if self._conn is None:
            if self._connect is None:  # closed before its first use
                import sqlite3

                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            self._conn = self._connect()
        return self._conn

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._lock:  # one statement is its own snapshot
            rows: list[Row] = self._connection().execute(sql, tuple(params)).fetchall()
            return rows

    @contextmanager
    def read(self) -> Iterator[Cursor]:
        with self._lock:
            yield Cursor(self._connection().cursor(), SQLITE)

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        # `transaction()` without its layers: the hot path of every write.
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                count = int(conn.execute(sql, tuple(params)).rowcount)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return count

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        with self._lock:
            yield from self._in("BEGIN IMMEDIATE")

    @contextmanager
    def snapshot(self) -> Iterator[Cursor]:
        with self._lock:
            yield from self._in("BEGIN")

    def _in(self, begin: str) -> Iterator[Cursor]:
        conn = self._connection()
        conn.execute(begin)
        try:
            yield Cursor(conn.cursor(), SQLITE)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        # Under the lock, as every use: closing the connection in the middle of another
        # thread's statement crashes the process; after this, a use fails cleanly.
        with self._lock:
            self._connect = None
            if self._conn is not None:
                self._conn.close()


class PostgresDatabase(Database):
    """Postgres through `connect()`: a pool's `connection`, or a connection per use."""

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
        import psycopg

        return cls(lambda: psycopg.connect(url, autocommit=True, connect_timeout=10))

    @contextmanager
    def read(self) -> Iterator[Cursor]:
        with self._connect() as conn, conn.cursor(row_factory=self._tuple_row) as cur:
            yield Cursor(cur, POSTGRES)

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        # Autocommit: one statement commits on its own, in one round trip.
        with self.read() as cur:
            return cur.execute(sql, params).rowcount

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        with (
            self._connect() as conn,
            conn.transaction(),
            conn.cursor(row_factory=self._tuple_row) as cur,
        ):
            yield Cursor(cur, POSTGRES)

    @contextmanager
    def snapshot(self) -> Iterator[Cursor]:
        with self.transaction() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield cur

    def close(self) -> None:
        pass  # a pool is closed by its owner (Storage.close closes the checkpointer's)


class Table:
    """One table on one database, its DDL (`create`) and statements written once."""

    name: str
    schema: str  # its CREATE TABLE, with `{real}` / `{blob}` (dialect.py)

    def __init__(self, db: Database) -> None:
        self._db = db
        self.dialect = db.dialect

    @classmethod
    def create(cls, cur: Cursor) -> None:
        """Create the table, or bring an older one up to date (in the caller's transaction)."""
        cur.execute(cur.dialect.ddl(cls.schema))

    def close(self) -> None:
        self._db.close()

    def _which(
        self, column: str, values: Sequence[str], where: str = "", params: Row = ()
    ) -> set[str]:
        """Which of `values` some row passing `where` holds in `column`."""
        if not values:
            return set()
        sql = f"SELECT DISTINCT {column} FROM {self.name} WHERE {where}{among(column, values)}"
        return {r[0] for r in self._db.rows(sql, (*params, *values))}


class ThreadRows(Table):
    """A table whose rows go with their thread's."""

    def delete_thread(self, thread_id: str) -> None:
        self._db.run(f"DELETE FROM {self.name} WHERE thread_id=?", (thread_id,))


def among(column: str, values: Sequence[Any]) -> str:
    """`column IN (?, ...)`, a placeholder per value."""
    return f"{column} IN ({', '.join('?' * len(values))})"


__all__ = ["Cursor", "Database", "PostgresDatabase", "Row", "SqliteDatabase", "Table", "ThreadRows"]

"""How the tables' SQL differs between SQLite and Postgres, so each is written once: `?`
placeholders, `{real}` / `{blob}` column types, upserts, row locks, what TEXT holds.
Standard library only: the fast read paths import it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

POSTGRES_SCHEMES = ("postgres://", "postgresql://")


def is_postgres_url(db: str) -> bool:
    """Whether a database setting names a Postgres server (else: a SQLite file)."""
    return db.startswith(POSTGRES_SCHEMES)


# A quoted string (left as it is, but for `%`), a placeholder, a `%`.
_TOKENS = re.compile(r"'[^']*(?:'|$)|\"[^\"]*(?:\"|$)|[?%]")


@lru_cache(maxsize=512)
def _pyformat(sql: str) -> str:
    """`?` -> psycopg's `%s` (not inside quotes); a literal `%` doubled."""
    return _TOKENS.sub(lambda m: "%s" if m[0] == "?" else m[0].replace("%", "%%"), sql)


@dataclass(frozen=True)
class Dialect:
    name: Literal["sqlite", "postgres"]
    real: str  # a float column (timestamps)
    blob: str  # a bytes column
    # Appended to a SELECT: lock its rows (SQLite's write transaction holds the file).
    for_update: str
    # A column in the order rows were inserted ("" where the database keeps none).
    insertion_column: str

    @property
    def postgres(self) -> bool:
        return self.name == "postgres"

    def sql(self, statement: str) -> str:
        """A statement written with `?`, as this database's driver takes it."""
        return _pyformat(statement) if self.postgres else statement

    def ddl(self, statement: str) -> str:
        return statement.format(real=self.real, blob=self.blob)

    def text(self, value: str) -> str:
        """A string as a TEXT column stores it (Postgres: no NUL)."""
        return value.replace("\x00", "\ufffd") if self.postgres else value


SQLITE = Dialect("sqlite", real="REAL", blob="BLOB", for_update="", insertion_column="rowid")
POSTGRES = Dialect(
    "postgres", real="DOUBLE PRECISION", blob="BYTEA", for_update=" FOR UPDATE", insertion_column=""
)


def upsert(
    table: str,
    columns: Sequence[str],
    key: Sequence[str],
    update: Sequence[str] = (),
    where: str = "",
) -> str:
    """`INSERT ... ON CONFLICT (key) DO NOTHING`, or with `update`: those columns take the
    inserted values (when the existing row passes `where`)."""
    sql = (
        f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT ({', '.join(key)}) DO "
    )
    if not update:
        return sql + "NOTHING"
    return (
        sql
        + "UPDATE SET "
        + ", ".join(f"{c}=excluded.{c}" for c in update)
        + (f" WHERE {where}" if where else "")
    )


def in_one(
    insert: str, rows: Sequence[tuple[Any, ...]], columns: tuple[int, Sequence[str]]
) -> tuple[str, tuple[Any, ...]]:
    """The stock saver's `INSERT ... VALUES (%s, ...) ON CONFLICT ...` of many `rows` as one
    statement (one execution, not one per row): the first `columns[0]` values are the
    same in every row, each other column an array. Rows must not share a key."""
    same, types = columns
    into, values = insert.split("VALUES", 1)
    arrays = ", ".join(f"%s::{t}[]" for t in types)
    conflict = "".join(values.partition("ON CONFLICT")[1:])
    sql = f"{into} SELECT {', '.join(['%s'] * same)}, r.* FROM unnest({arrays}) AS r {conflict}"
    return sql, (*rows[0][:same], *map(list, list(zip(*rows, strict=True))[same:]))


def one_statement(
    parts: Sequence[tuple[str, Sequence[Any]]], checks: Sequence[int] = ()
) -> tuple[str, tuple[Any, ...]]:
    """Postgres: the statements `parts` (`%s` placeholders) as one, its own transaction in
    one round trip, which a part of `checks` (indexes) that changes no row aborts (a
    division by zero). Its parts see one snapshot (not each other's changes) and may
    change a row once."""
    ctes = ", ".join(f"p{i} AS ({sql.strip().rstrip(';')})" for i, (sql, _) in enumerate(parts))
    main = (
        f"SELECT 1 / count(*) FROM {', '.join(f'p{i}' for i in checks)}" if checks else "SELECT 1"
    )
    return f"WITH {ctes} {main}", tuple(p for _, params in parts for p in params)


__all__ = ["POSTGRES", "SQLITE", "Dialect", "in_one", "is_postgres_url", "one_statement", "upsert"]

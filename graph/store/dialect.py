"""How the tables' SQL differs between SQLite and Postgres, so each is written once: `?`
placeholders, `{real}` / `{blob}` column types, upserts, row locks, what TEXT holds.
Standard library only: the fast read paths import it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

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


__all__ = ["POSTGRES", "SQLITE", "Dialect", "is_postgres_url", "upsert"]

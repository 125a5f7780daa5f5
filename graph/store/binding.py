"""What a stored decision or journal row is bound to: one call, by its tool and
canonical arguments (`call_key`, in the primary key), not only by its id. Models reuse
ids (LiteLLM's mock calls are all `call_mock_1`) and clients can write any: by id alone
a later `delete_file` with id `w1` would inherit the approval of a `write_file` `w1`.
Older databases are migrated on open (`rebind`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gatehouse.graph.protocol.decisions import canonical_args, same_call
from gatehouse.graph.store.database import Cursor

__all__ = ["KEY_COLUMN", "call_key", "canonical_args", "dumps", "rebind", "same_call"]

KEY_COLUMN = "call_key"


def dumps(value: Any) -> str:
    """Stored arguments: JSON with sorted keys."""
    return json.dumps(value, default=str, sort_keys=True)


def call_key(tool: str, args: Any) -> str:
    """The digest a stored row is bound by: tool name and canonical arguments."""
    return hashlib.sha256(f"{tool}\x00{canonical_args(args)}".encode()).hexdigest()


KeyOf = Callable[[Mapping[str, Any]], str]


def rebind(cur: Cursor, table: str, schema: str, key: Sequence[str], key_of: KeyOf) -> None:
    """Make `call_key` part of the primary key `key` of `table` as in `schema` (a no-op
    for a new or bound table); `key_of(row)` computes an old row's key. Postgres changes
    the key in place; SQLite rebuilds the table, every column kept."""
    have = cur.primary_key(table)
    if not have or KEY_COLUMN in have:
        return
    if not cur.dialect.postgres:
        _rebuild_sqlite_table(cur, table, cur.dialect.ddl(schema), key_of)
        return
    cur.execute(
        f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {KEY_COLUMN} TEXT NOT NULL DEFAULT ''"
    )
    cur.execute(f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey")
    cur.execute(f"ALTER TABLE {table} ADD PRIMARY KEY ({', '.join(key)})")
    old_key = [c for c in key if c != KEY_COLUMN]
    cur.execute(f"SELECT * FROM {table} WHERE {KEY_COLUMN}=''")
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    cur.executemany(
        f"UPDATE {table} SET {KEY_COLUMN}=? WHERE {' AND '.join(f'{c}=?' for c in old_key)} AND {KEY_COLUMN}=''",
        [(key_of(row), *(row[c] for c in old_key)) for row in rows],
    )


def _rebuild_sqlite_table(conn: Cursor, table: str, schema: str, key_of: KeyOf) -> None:
    """SQLite: `table` rebuilt under `schema`, every row and column kept."""
    # cid, name, type, notnull, default, pk
    info = conn.execute(f"PRAGMA table_info({table})").fetchall()
    old = f"{table}_unbound"
    conn.execute(f"DROP TABLE IF EXISTS {old}")
    conn.execute(f"ALTER TABLE {table} RENAME TO {old}")
    conn.execute(schema)
    have = conn.columns(table)
    for _, name, kind, _, default, _ in info:
        # Columns another migration added to the old table stay (nullable here).
        if name not in have:
            extra = f" DEFAULT {default}" if default is not None else ""
            conn.execute(f'ALTER TABLE {table} ADD COLUMN "{name}" {kind}{extra}')
    names = [col[1] for col in info if col[1] != KEY_COLUMN]
    rows = conn.execute(f"SELECT {', '.join(names)} FROM {old}").fetchall()
    placeholders = ", ".join("?" * (len(names) + 1))
    conn.executemany(
        f"INSERT OR IGNORE INTO {table}({', '.join(names)}, {KEY_COLUMN}) VALUES ({placeholders})",
        [(*row, key_of(dict(zip(names, row, strict=True)))) for row in rows],
    )
    # Indexes went with the old table; their owners create them again (IF NOT EXISTS).
    conn.execute(f"DROP TABLE {old}")

"""`sql_query`: one SQL statement against the configured SQLite database. SQLite decides
whether it only reads: compiled (`EXPLAIN`) on a read-only connection whose authorizer
refuses all but reads and allow-listed functions, its program without writing opcodes,
it runs freely there; anything else asks, then runs on a normal connection.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from langchain_core.tools import BaseTool
from pydantic import Field

from gatehouse.tools.base import gatehouse_tool

ROW_CAP = 50
CELL_CHARS = 80
TIMEOUT_S = 30.0

# Authorizer actions that only read. FUNCTION and PRAGMA are judged by name (some write).
_READ_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
_COUNTED = (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_PRAGMA)  # a statement that reads something
# Pragmas that report on their argument (a table, an index): `PRAGMA table_info(t)`.
_INSPECT_PRAGMAS = {
    "table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list",
    "foreign_key_check", "integrity_check", "quick_check", "table_list",
}  # fmt: skip
# Pragmas that read a setting when given no value (and change it when given one).
_QUERY_PRAGMAS = {
    "database_list", "collation_list", "function_list", "pragma_list", "module_list",
    "compile_options", "user_version", "schema_version", "application_id", "page_count",
    "page_size", "freelist_count", "encoding", "data_version", "journal_mode", "foreign_keys",
}  # fmt: skip

# The only functions a free (read-only) statement may call: SQLite's core, date, math,
# window and JSON ones. Anything else (`fts3_tokenizer()`, `load_extension`, a function
# added later) asks a person: an allow list, never a deny list.
ALLOWED_FUNCTIONS = frozenset({
    "abs", "changes", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex", "ifnull", "iif",
    "instr", "last_insert_rowid", "length", "like", "likelihood", "likely", "lower", "ltrim", "max", "min",
    "nullif", "octet_length", "printf", "quote", "random", "randomblob", "replace", "round", "rtrim", "sign",
    "soundex", "sqlite_source_id", "sqlite_version", "substr", "substring", "total_changes", "trim",
    "typeof", "unhex", "unicode", "unistr", "unlikely", "upper", "zeroblob", "->", "->>",
    # aggregates and window functions
    "avg", "count", "group_concat", "string_agg", "sum", "total", "median", "row_number", "rank", "dense_rank",
    "percent_rank", "cume_dist", "ntile", "lag", "lead", "first_value", "last_value", "nth_value",
    # date and time
    "date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff", "current_date",
    "current_time", "current_timestamp",
    # math
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling", "cos", "cosh", "degrees",
    "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power", "radians", "sin", "sinh",
    "sqrt", "tan", "tanh", "trunc",
    # JSON
    "json", "jsonb", "json_array", "jsonb_array", "json_array_length", "json_error_position", "json_extract",
    "jsonb_extract", "json_insert", "jsonb_insert", "json_object", "jsonb_object", "json_patch", "jsonb_patch",
    "json_pretty", "json_quote", "json_remove", "jsonb_remove", "json_replace", "jsonb_replace", "json_set",
    "jsonb_set", "json_type", "json_valid", "json_group_array", "jsonb_group_array", "json_group_object",
    "jsonb_group_object", "json_each", "json_tree", "jsonb_each", "jsonb_tree",
    # full-text search ranking and snippets (they only read the matched rows)
    "match", "bm25", "highlight", "snippet", "offsets", "matchinfo",
})  # fmt: skip

Param = str | int | float | None


class SQLError(ValueError):
    """A statement SQLite refused, or the database could not be opened."""


def _read_only_authorizer(
    action: int, arg1: str | None, arg2: str | None, db: str | None, _trigger: str | None
) -> int:
    name = (arg1 or "").lower()
    if action == sqlite3.SQLITE_FUNCTION:
        ok = (arg2 or "").lower() in ALLOWED_FUNCTIONS
    elif action == sqlite3.SQLITE_PRAGMA:
        ok = name in _INSPECT_PRAGMAS or (name in _QUERY_PRAGMAS and arg2 is None)
    else:
        ok = action in _READ_ACTIONS
    return sqlite3.SQLITE_OK if ok else sqlite3.SQLITE_DENY


def _connect(database: Path, *, read_only: bool) -> sqlite3.Connection:
    try:
        if read_only:
            conn = sqlite3.connect(f"{database.absolute().as_uri()}?mode=ro", uri=True, timeout=5)
            conn.set_authorizer(_read_only_authorizer)
        else:
            conn = sqlite3.connect(database, timeout=5)
    except sqlite3.Error as exc:
        raise SQLError(f"cannot open database {database}: {exc}") from exc
    return conn


def reads_only(database: Path, query: str) -> bool:
    """True when SQLite compiles `query` as one statement that only reads."""
    if not query.strip() or not database.is_file():
        return False
    conn = _connect(database, read_only=True)
    reads: list[int] = []

    def judge(action: int, *rest: Any) -> int:
        verdict = _read_only_authorizer(action, *rest)
        if verdict == sqlite3.SQLITE_OK and action in _COUNTED:
            reads.append(action)
        return verdict

    conn.set_authorizer(judge)
    try:
        # EXPLAIN compiles the statement (the authorizer sees every action) without running it.
        program = conn.execute("EXPLAIN " + query).fetchall()
    except (sqlite3.Error, sqlite3.Warning):
        return False
    finally:
        conn.close()
    # VACUUM (INTO) and REINDEX never reach the authorizer, and `VACUUM INTO (SELECT
    # '/x')` looks like a read to it: the compiled program must write nothing too.
    # EXPLAIN rows: addr, opcode, p1, p2, p3, p4, p5, comment.
    return bool(reads) and not any(
        op[1] in _WRITING_OPCODES or (op[1] == "Transaction" and op[3] != 0) for op in program
    )


# Opcodes that write without a write transaction (`Transaction` with P2 != 0).
_WRITING_OPCODES = frozenset({
    "Vacuum", "JournalMode", "Checkpoint", "IncrVacuum", "VUpdate", "VCreate", "VDestroy", "VBegin",
    "ParseSchema", "CreateBtree", "Destroy", "OpenWrite", "SqlExec", "DropTable", "DropIndex", "DropTrigger",
})  # fmt: skip


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], more: bool) -> str:
    def cell(v: Any) -> str:
        if v is None:
            text = "NULL"
        elif isinstance(v, bytes):
            text = f"<{len(v)} bytes>"
        else:
            text = str(v).replace("\n", "\\n")
        return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"

    grid = [list(columns)] + [[cell(v) for v in r] for r in rows]
    widths = [max(len(line[i]) for line in grid) for i in range(len(columns))]
    lines = [
        " | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in grid
    ]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    stopped = f"; stopped at {ROW_CAP}, more rows not shown" if more else ""
    footer = f"({len(rows)} {'row' if len(rows) == 1 else 'rows'}{stopped})"
    return "\n".join([*lines, footer])


def make_sql_tool(
    database: str, *, row_cap: int = ROW_CAP, timeout_s: float = TIMEOUT_S
) -> BaseTool:
    db = Path(database).expanduser()

    def preview(args: dict[str, Any]) -> str:
        params = args.get("params")
        return f"database: {db}\n{args.get('query', '')}" + (
            f"\nparams: {params}" if params else ""
        )

    @gatehouse_tool(
        risk="write",
        match_arg="query",
        preview=preview,
        auto_allow=lambda a: reads_only(db, str(a.get("query", ""))),
    )
    def sql_query(
        query: Annotated[
            str, Field(description="One SQLite statement; use ? placeholders for values")
        ],
        params: Annotated[
            list[Param] | None, Field(description="Values for the ? placeholders")
        ] = None,
    ) -> str:
        """Run one SQL statement on the project's SQLite database and return the result.

        SELECTs (and other statements that only read) run at once and come back as a
        table of at most 50 rows; statements that change data or schema wait for a
        person's approval. Only one statement per call.
        """
        read = reads_only(db, query)
        conn = _connect(db, read_only=read)
        started = time.monotonic()
        # Stops a runaway query: SQLite calls this every N steps; non-zero aborts.
        conn.set_progress_handler(lambda: int(time.monotonic() - started > timeout_s), 10_000)
        try:
            cur = conn.execute(query, params or [])
            if cur.description is None:
                conn.commit()
                return f"OK: {cur.rowcount} row(s) changed." if cur.rowcount >= 0 else "OK."
            columns = [d[0] for d in cur.description]
            if read:
                rows = cur.fetchmany(row_cap + 1)
            else:  # e.g. INSERT … RETURNING: finish the statement, then commit
                rows = cur.fetchall()
                conn.commit()
            return format_table(columns, rows[:row_cap], more=len(rows) > row_cap)
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise SQLError(f"query stopped after {timeout_s:g}s") from exc
            raise SQLError(str(exc)) from exc
        except (sqlite3.Error, sqlite3.Warning) as exc:
            raise SQLError(str(exc)) from exc
        finally:
            conn.close()

    return sql_query

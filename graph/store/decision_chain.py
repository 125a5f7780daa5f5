"""The decision log's hash chain: each decision gets an entry in recording order,
`entry_hash = sha256(prev_hash, seq, the whole row as canonical JSON)`, so an edited,
inserted or deleted decision shows (`gatehouse audit --verify`). It cannot catch a
rewrite of every entry from the change on, or dropping the newest entries with their
rows: note the head hash `--verify` prints. Appends are serialised (SQLite's write lock,
a Postgres advisory lock) in the decision row's transaction.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gatehouse.graph.store.database import Cursor

GENESIS = "0" * 64
CHAIN_SCHEMA = """CREATE TABLE IF NOT EXISTS gatehouse_decision_chain (
    seq BIGINT PRIMARY KEY,
    thread_id TEXT NOT NULL,
    question TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    call_key TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    entry_hash TEXT NOT NULL,
    UNIQUE (thread_id, question, tool_call_id, call_key))"""
# Postgres: one appender at a time across processes (held until the transaction ends).
PG_CHAIN_LOCK = 0x6761746563686E  # "gatechn"
# A decision row's key: a reused call id stands for several calls, bound by `call_key`.
KEY = ("thread_id", "question", "tool_call_id", "call_key")


def entry_hash(prev_hash: str, seq: int, row: dict[str, Any]) -> str:
    # NULLs left out: a column added later keeps older entries' hashes valid.
    present = {k: v for k, v in row.items() if v is not None}
    canonical = json.dumps(
        present, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False
    )
    return hashlib.sha256(f"{prev_hash}\n{seq}\n{canonical}".encode()).hexdigest()


def dicts(cursor: Any) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def lock(cur: Cursor) -> None:
    """Hold the chain's append lock until the transaction ends (before any `append`)."""
    if cur.dialect.postgres:  # SQLite's write transactions are serial already
        cur.execute(f"SELECT pg_advisory_xact_lock({PG_CHAIN_LOCK})")


# The chain's last entry, as two columns of a statement run under `lock` (the row
# insert's RETURNING: no statement of its own).
_LAST = "(SELECT {} FROM gatehouse_decision_chain ORDER BY seq DESC LIMIT 1)"
TAIL = (
    f"COALESCE({_LAST.format('seq')}, 0) AS chain_tail_seq, "
    f"COALESCE({_LAST.format('entry_hash')}, '{GENESIS}') AS chain_tail_hash"
)


def tail(cur: Cursor) -> tuple[int, str]:
    """The chain's last entry (seq, hash): (0, GENESIS) for an empty chain."""
    seq, hashed = cur.execute(f"SELECT {TAIL}").fetchone()
    return int(seq), str(hashed)


def append(cur: Cursor, rows: Sequence[dict[str, Any]], last: tuple[int, str]) -> None:
    """Chain decision rows (as stored: every column), just written in this transaction
    under `lock`, in order, after the chain's `last` entry (read under the lock)."""
    seq, prev = last
    entries = []
    for row in rows:
        seq, hashed = seq + 1, entry_hash(prev, seq + 1, row)
        entries.append((seq, *(row[k] for k in KEY), prev, hashed))
        prev = hashed
    cur.executemany(
        "INSERT INTO gatehouse_decision_chain(seq, thread_id, question, tool_call_id, call_key, prev_hash, "
        "entry_hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
        entries,
    )


def seal_existing(cur: Cursor) -> None:
    """Chain the rows of a log recorded before it had a chain (oldest first)."""
    lock(cur)
    rows = dicts(cur.execute("SELECT * FROM gatehouse_decisions ORDER BY decided_at"))
    if rows:
        append(cur, rows, tail(cur))


# A decision row with its chain entry and the entry before it: what `vouched` checks.
VOUCHED_SELECT = (
    "SELECT d.*, c.seq AS chain_seq, c.prev_hash AS chain_prev, c.entry_hash AS chain_hash, "
    "p.entry_hash AS chain_before FROM gatehouse_decisions d "
    "JOIN gatehouse_decision_chain c ON c.thread_id=d.thread_id AND c.question=d.question "
    "AND c.tool_call_id=d.tool_call_id AND c.call_key=d.call_key "
    "LEFT JOIN gatehouse_decision_chain p ON p.seq=c.seq-1"
)


def vouched(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of a `VOUCHED_SELECT` query that hash to their own chain entry, which
    continues from the one before, in chain order: the gate never acts on a row inserted
    with SQL (no entry) or edited (its hash differs)."""
    found = []
    for row in rows:
        seq, prev = int(row.pop("chain_seq")), str(row.pop("chain_prev"))
        stated, before = row.pop("chain_hash"), row.pop("chain_before")
        # Each turn reads the grants again: checked once per exact stored values.
        key = (seq, prev, stated, before, *sorted(row.items()))
        ok = _checked.get(key)
        if ok is None:
            if len(_checked) > 10_000:
                _checked.clear()
            ok = _checked[key] = prev == (GENESIS if seq == 1 else before) and (
                entry_hash(prev, seq, row) == stated
            )
        if ok:
            found.append((seq, row))
    return [row for _, row in sorted(found, key=lambda p: p[0])]


_checked: dict[tuple[Any, ...], bool] = {}


@dataclass(frozen=True)
class ChainCheck:
    """What `gatehouse audit --verify` reports."""

    entries: int
    head: str
    problems: list[str] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return not self.problems

    @property
    def first_problem(self) -> str | None:
        return self.problems[0] if self.problems else None


def read_for_check(cur: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cur.execute("SELECT * FROM gatehouse_decisions")
    rows = dicts(cur)
    cur.execute(
        "SELECT seq, thread_id, question, tool_call_id, call_key, prev_hash, entry_hash "
        "FROM gatehouse_decision_chain ORDER BY seq"
    )
    return rows, dicts(cur)


def check(rows: Sequence[dict[str, Any]], chain: Sequence[dict[str, Any]]) -> ChainCheck:
    """Walk the chain in order; problems come in log order, the first one first."""
    by_key = {tuple(str(r[k]) for k in KEY): r for r in rows}
    problems: list[tuple[float, str]] = []
    prev, expected_seq, last_time = GENESIS, 1, 0.0
    chained: set[tuple[str, ...]] = set()
    for entry in chain:
        seq = int(entry["seq"])
        key = tuple(str(entry[k]) for k in KEY)
        chained.add(key)
        what = f"entry #{seq} (thread {key[0]}, call {key[2]})"
        if seq != expected_seq:
            gone = f"#{expected_seq}" if seq == expected_seq + 1 else f"#{expected_seq}–#{seq - 1}"
            problems.append((last_time, f"entry {gone} was deleted: the chain jumps to #{seq}"))
        elif entry["prev_hash"] != prev:
            why = "an entry was deleted or inserted, or the chain rewritten"
            problems.append((last_time, f"{what} does not follow the entry before it: {why}"))
        row = by_key.get(key)
        if row is None:
            problems.append((last_time, f"{what} was deleted from the decision log"))
        else:
            last_time = float(row.get("decided_at") or last_time)
            if entry_hash(str(entry["prev_hash"]), seq, row) != entry["entry_hash"]:
                problems.append((last_time, f"{what} was edited after it was recorded"))
        prev, expected_seq = str(entry["entry_hash"]), seq + 1
    for key, row in by_key.items():
        if key not in chained:
            inserted = "a decision was inserted into the log without being recorded"
            what = f"thread {key[0]}, call {key[2]}, {row.get('decision')} of {row.get('tool')}"
            problems.append((float(row.get("decided_at") or 0.0), f"{inserted} ({what})"))
    problems.sort(key=lambda p: p[0])
    return ChainCheck(entries=len(chain), head=prev, problems=[p for _, p in problems])

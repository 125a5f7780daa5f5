"""The decision log: every answer a person gave to a pause, append-only, beside the
checkpoints. `review` writes a row per decided call before it may run, and `run_tool`
runs a gated call only when its row approves exactly those arguments: state a client
can send or edit approves nothing. Rows are keyed by (thread, question, call id, call
key: binding.py), so a re-run review's second write changes nothing. Auto-approve is a
grant of tool "*". The gate reads only rows whose chain entry checks out, of the
thread's current life (a "life" record, for a delete or an import, ends the one before).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any, Protocol

from gatehouse.graph.protocol.decisions import (
    ALL_TOOLS,
    GRANT,
    GRANT_QUESTION,
    HISTORY_IMPORTED,
    LIFE_QUESTION,
    REVOKE,
    THREAD_CREATED,
    THREAD_DELETED,
    DecisionRecord,
    StandingGrant,
)
from gatehouse.graph.store.binding import KEY_COLUMN, call_key, dumps, rebind
from gatehouse.graph.store.database import Cursor, Table, among
from gatehouse.graph.store.decision_chain import (
    CHAIN_SCHEMA,
    TAIL,
    VOUCHED_SELECT,
    ChainCheck,
    append,
    check,
    dicts,
    lock,
    read_for_check,
    seal_existing,
    vouched,
)
from gatehouse.graph.store.dialect import upsert

SCHEMA = """CREATE TABLE IF NOT EXISTS gatehouse_decisions (
    thread_id TEXT NOT NULL,
    question TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    decision TEXT NOT NULL,
    args_json TEXT NOT NULL,
    requested_args_json TEXT,
    message TEXT,
    always_allow TEXT,
    source TEXT,
    actor TEXT,
    decided_at {real} NOT NULL,
    request_id TEXT,
    call_key TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (thread_id, question, tool_call_id, call_key))"""


COLUMNS = (
    "thread_id, question, tool_call_id, tool, decision, args_json, requested_args_json, "
    "message, always_allow, source, actor, decided_at, request_id"
)
_NAMES = COLUMNS.split(", ")
KEY = ("thread_id", "question", "tool_call_id", KEY_COLUMN)
# A row already there is kept, unless the chain never recorded it (written with SQL):
# a forged row cannot block a real answer.
INSERT = (
    upsert(
        "gatehouse_decisions",
        (*_NAMES, KEY_COLUMN),
        KEY,
        update=[c for c in _NAMES if c not in KEY],
        where="NOT EXISTS (SELECT 1 FROM gatehouse_decision_chain c WHERE "
        + " AND ".join(f"c.{k}=gatehouse_decisions.{k}" for k in KEY)
        + ")",
    )
    + f" RETURNING *, {TAIL}"  # the row as stored, and the chain's tail under `lock`
)


_LOGGED = f"SELECT tool_call_id FROM gatehouse_decisions WHERE question <> '{LIFE_QUESTION}' AND thread_id=?"
_JOURNALED = "SELECT tool_call_id FROM gatehouse_journal WHERE thread_id=?"


class Logged(Protocol):
    def logged_ids(self, thread_id: str, tool_call_ids: Sequence[str]) -> set[str]: ...


def record_key(tool: str, args: Any, requested_args: Any) -> str:
    """A record is bound to the call as the person saw it (before any edit)."""
    return call_key(tool, args if requested_args is None else requested_args)


def _row(record: DecisionRecord) -> tuple[Any, ...]:
    values = [getattr(record, f.name) for f in fields(DecisionRecord)]  # the columns' order
    values[5] = dumps(record.args)
    values[6] = None if record.requested_args is None else dumps(record.requested_args)
    values[11] = record.decided_at or time.time()
    return (*values, record_key(record.tool, record.args, record.requested_args))


def insert_chained(cur: Cursor, records: Sequence[DecisionRecord]) -> None:
    """Append and chain decisions in the caller's transaction (one recorded already stays)."""
    lock(cur)
    written, last = [], None
    for record in records:
        for row in dicts(cur.execute(INSERT, _row(record))):  # a row back: new, chained below
            tail = (int(row.pop("chain_tail_seq")), str(row.pop("chain_tail_hash")))
            last = last or tail
            # As a read gives it back: SQLite's RETURNING gives a whole REAL as an integer.
            written.append({**row, "decided_at": float(row["decided_at"])})
    if last is not None:
        append(cur, written, last)


def record_of(row: Sequence[Any]) -> DecisionRecord:
    fields = list(row[:13])  # the columns in DecisionRecord's order; two stored as JSON
    fields[5] = json.loads(fields[5])
    fields[6] = json.loads(fields[6]) if fields[6] else None
    return DecisionRecord(*fields)


def grants_in_force(thread_id: str, records: Sequence[DecisionRecord]) -> list[StandingGrant]:
    """The grants the latest record for each (tool, value) leaves standing, oldest first."""
    latest: dict[tuple[str, str], DecisionRecord] = {}
    for record in records:
        if record.always_allow is not None:
            latest.pop((record.tool, record.always_allow), None)
            latest[(record.tool, record.always_allow)] = record
    return [
        StandingGrant(
            thread_id=thread_id,
            tool=tool,
            pattern=None if always == "*" else always,
            granted_at=r.decided_at,
            source=r.source,
            actor=r.actor,
        )
        for (tool, always), r in latest.items()
        if r.decision != REVOKE
    ]


def life_record(thread_id: str, decision: str, actor: str | None = None) -> DecisionRecord:
    """The record that begins a new life of the thread (`decision`: why)."""
    return DecisionRecord(
        thread_id=thread_id,
        question=LIFE_QUESTION,
        tool_call_id=f"life-{uuid.uuid4().hex}",
        tool=ALL_TOOLS,
        decision=decision,
        args={},
        message="approvals, grants and switches recorded before this are history",
        actor=actor,
        decided_at=time.time(),
    )


def switch_record(
    thread_id: str, on: bool, *, source: str | None, actor: str | None, decided_at: float
) -> DecisionRecord:
    """The record that turns a thread's auto-approve switch on or off (a revoke)."""
    return DecisionRecord(
        thread_id=thread_id,
        question=GRANT_QUESTION,
        tool_call_id=f"auto-approve-{uuid.uuid4().hex}",
        tool=ALL_TOOLS,
        decision=GRANT if on else REVOKE,
        args={},
        message="auto-approve on" if on else "auto-approve off",
        always_allow="*",
        source=source,
        actor=actor,
        decided_at=decided_at,
    )


def _legacy_key(row: Mapping[str, Any]) -> str:
    requested = row.get("requested_args_json")
    return record_key(
        str(row["tool"]), json.loads(row["args_json"]), json.loads(requested) if requested else None
    )


# What the gate reads of the log: the grants in force, the records under some calls.
GateReads = tuple[list[StandingGrant], list[DecisionRecord]]


def _gate_reads(
    cur: Cursor, thread_id: str, call_ids: Sequence[str], held: Held | None = None
) -> tuple[GateReads, set[str]]:
    ids = tuple(dict.fromkeys(call_ids))
    arms = [_LIFE, ("d.always_allow IS NOT NULL", ())]
    if ids:
        arms.append((among("d.tool_call_id", ids), ids))
    records, found = _chained(cur, thread_id, arms, held)
    begins = max((i for i, r in enumerate(records) if r.question == LIFE_QUESTION), default=-1)
    records = records[begins + 1 :]  # the thread's current life
    reads = grants_in_force(thread_id, records), [r for r in records if r.tool_call_id in ids]
    return reads, found


# A condition on a thread's rows and its parameters.
Arm = tuple[str, tuple[Any, ...]]
_LIFE: Arm = (f"d.question='{LIFE_QUESTION}'", ())
# A query of call ids (`held`: its SQL and parameters) whose rows come back beside a
# VOUCHED_SELECT's, shaped as its rows: no chain_seq, the id as chain_prev. The join
# finds no row (`= NULL` is never true) by the key's index (SQLite scanned the whole
# table for `ON 1=0`).
Held = tuple[str, tuple[Any, ...]]
_HELD = (
    " UNION ALL SELECT d.*, NULL, h.tool_call_id, NULL, NULL FROM ({}) h "
    "LEFT JOIN gatehouse_decisions d ON d.thread_id=NULL"
)


def _chained(
    cur: Cursor, thread_id: str, arms: Sequence[Arm], held: Held | None = None
) -> tuple[list[DecisionRecord], set[str]]:
    """The thread's records passing any of `arms` that the chain vouches for, and the
    ids `held` finds (one statement: one state of both tables). The thread is named in
    each arm: each is one index range (SQLite's multi-index OR, Postgres's BitmapOr),
    not a scan of all the thread's rows."""
    where = " OR ".join(f"(d.thread_id=? AND {sql})" for sql, _ in arms)
    params = tuple(p for _, ps in arms for p in (thread_id, *ps))
    sql = f"{VOUCHED_SELECT} WHERE {where}"
    if held is not None:
        sql, params = sql + _HELD.format(held[0]), params + held[1]
    rows = dicts(cur.execute(sql, params))
    found = {str(r["chain_prev"]) for r in rows if r["chain_seq"] is None}
    chained = vouched([r for r in rows if r["chain_seq"] is not None])
    return [record_of(tuple(r[c] for c in _NAMES)) for r in chained], found


class Decisions(Table):
    """`gatehouse_decisions` and its hash chain (graph/store/decision_chain.py)."""

    name = "gatehouse_decisions"

    @staticmethod
    def create(cur: Cursor) -> None:
        rebind(cur, "gatehouse_decisions", SCHEMA, KEY, _legacy_key)
        cur.execute(cur.dialect.ddl(SCHEMA))
        cur.add_column("gatehouse_decisions", "request_id TEXT")
        cur.execute(
            "CREATE INDEX IF NOT EXISTS gatehouse_decisions_time ON gatehouse_decisions(decided_at)"
        )
        # The gate's read stays flat as a thread grows (`_chained`): its calls' rows and
        # its grants by index; its "life" rows by the key's (thread_id, question). With
        # `question` the call-id check (`_LOGGED`) reads the index only.
        cur.execute(
            "CREATE INDEX IF NOT EXISTS gatehouse_decisions_call "
            "ON gatehouse_decisions(thread_id, tool_call_id, question)"
        )
        cur.execute(
            "CREATE INDEX IF NOT EXISTS gatehouse_decisions_grant ON gatehouse_decisions(thread_id) "
            "WHERE always_allow IS NOT NULL"
        )
        # After rebind: a log recorded before the chain existed is chained as it stands.
        new_chain = not cur.table_exists("gatehouse_decision_chain")
        cur.execute(CHAIN_SCHEMA)
        if new_chain:
            seal_existing(cur)

    def record(self, records: Sequence[DecisionRecord]) -> None:
        """Append decisions; one already recorded for the same call stays as it was."""
        with self._db.transaction() as cur:
            insert_chained(cur, records)

    def record_and_read(self, records: Sequence[DecisionRecord]) -> GateReads:
        """`record` one thread's decisions, then `gate_reads` of their calls in the same
        transaction: what the gate reads the moment they are in."""
        with self._db.transaction() as cur:
            insert_chained(cur, records)
            return _gate_reads(cur, records[0].thread_id, [r.tool_call_id for r in records])[0]

    def for_call(self, thread_id: str, tool_call_id: str) -> list[DecisionRecord]:
        return self._select(
            "AND thread_id=? AND tool_call_id=? ORDER BY decided_at", (thread_id, tool_call_id)
        )

    def reply_reads(
        self, thread_id: str, call_ids: Sequence[str], journal: Logged | None = None
    ) -> tuple[GateReads, set[str]]:
        """`gate_reads` of `call_ids`, and which of them the thread's log holds a record
        under (any life, vouched or not) or `journal` a row under (the model node's
        check of a reply's call ids): one statement when the journal is on this database."""
        ids = list(dict.fromkeys(call_ids))
        held = f"{_LOGGED} AND {among('tool_call_id', ids)}"
        params: tuple[Any, ...] = (thread_id, *ids)
        one_db = isinstance(journal, Table) and journal._db is self._db  # a Storage's
        if one_db:
            held += f" UNION {_JOURNALED} AND {among('tool_call_id', ids)}"
            params *= 2
        with self._db.read() as cur:
            reads, found = _gate_reads(cur, thread_id, ids, (held, params) if ids else None)
        rest = [i for i in ids if i not in found]
        if journal is not None and not one_db and rest:
            found |= journal.logged_ids(thread_id, rest)
        return reads, found

    def for_thread(self, thread_id: str) -> list[DecisionRecord]:
        return self._select("AND thread_id=? ORDER BY decided_at", (thread_id,))

    def latest_for_thread(self, thread_id: str, limit: int) -> list[DecisionRecord]:
        """The thread's last `limit` records, newest first (ties: last inserted first)."""
        ties = self.dialect.insertion_column
        order = f"decided_at DESC, {ties} DESC" if ties else "decided_at DESC"
        return self._select(f"AND thread_id=? ORDER BY {order} LIMIT ?", (thread_id, limit))

    def recent(self, limit: int = 200) -> list[DecisionRecord]:
        return self._select("ORDER BY decided_at DESC LIMIT ?", (limit,))

    def record_history(self, thread_id: str, records: Sequence[DecisionRecord]) -> None:
        """Keep an import's `records` as history: chained, then a "life" record, so none
        of them approves or grants anything."""
        with self._db.transaction() as cur:
            insert_chained(cur, [*records, life_record(thread_id, HISTORY_IMPORTED)])

    def end_life(self, thread_id: str) -> None:
        """The thread is deleted: a new thread by its id inherits no approval or grant."""
        self.record([life_record(thread_id, THREAD_DELETED)])

    def begin_life(self, thread_id: str, owner: str) -> None:
        """A LangGraph Server user created the thread: theirs (graph/service/server_auth.py)."""
        self.record([life_record(thread_id, THREAD_CREATED, owner)])

    def life(self, thread_id: str) -> DecisionRecord | None:
        """The thread's latest "life" record the chain vouches for."""
        with self._db.read() as cur:
            lives = _chained(cur, thread_id, [_LIFE])[0]
        return lives[-1] if lives else None

    def approvals(self, thread_id: str, tool_call_id: str) -> list[DecisionRecord]:
        """The records under this call id the gate may act on (see the module doc)."""
        return self.gate_reads(thread_id, [tool_call_id])[1]

    def grants(self, thread_id: str) -> list[StandingGrant]:
        """Every "always allow" in force (tool "*": auto-approve); a later "revoke"
        record for the same tool and value withdraws one."""
        return self.gate_reads(thread_id, [])[0]

    def gate_reads(self, thread_id: str, call_ids: Sequence[str]) -> GateReads:
        """`grants` and the `approvals` of every id in `call_ids`, in one query."""
        with self._db.read() as cur:
            return _gate_reads(cur, thread_id, call_ids)[0]

    def verify(self) -> ChainCheck:
        """Check the hash chain: the first edited, inserted or deleted entry, if any."""
        with self._db.snapshot() as cur:  # one state of both tables
            rows, chain = read_for_check(cur)
        return check(rows, chain)

    def _select(self, where: str, params: tuple[Any, ...]) -> list[DecisionRecord]:
        # For people (audit, export): "life" records are the gate's bookkeeping.
        rows = self._db.rows(
            f"SELECT {COLUMNS} FROM gatehouse_decisions WHERE question <> '{LIFE_QUESTION}' {where}",
            params,
        )
        return [record_of(r) for r in rows]

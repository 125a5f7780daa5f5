"""The execution journal: a side-effecting tool call is written down before it runs
and again, with its result, after it ran — in the same database as the checkpoints.

A crash can land between any two of these writes, and each gap has one safe reading:
- started, not finished: the tool may or may not have done its work. It is not run
  again silently; the run pauses with an "outcome unknown" request (run again / mark
  as failed with a note / respond with the real outcome), whatever the tool declares
  about idempotence: at-most-once is about the person's intent, not the bytes.
- finished, but the checkpoint never saw the ToolMessage (a crash after the tool,
  before the checkpoint write): the stored result is the answer; the tool is not run.

The agent's `run_tool` node (graph/agent/tool_node.py) reads and writes the rows;
`graph/agent/crash.py` lets tests kill the process at each gap.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import ToolCall, ToolMessage, message_to_dict, messages_from_dict

from graph.protocol.errors import CallAlreadyStarted
from graph.store.binding import KEY_COLUMN, call_key, rebind, same_call
from graph.store.database import Cursor, Database, Table
from graph.store.dialect import upsert

SCHEMA = """CREATE TABLE IF NOT EXISTS gatehouse_journal (
    thread_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    args_json TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('started', 'finished')),
    result_json TEXT,
    started_at {real} NOT NULL,
    finished_at {real},
    pid INTEGER,
    attempts INTEGER NOT NULL DEFAULT 1,
    call_key TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (thread_id, tool_call_id, call_key))"""

COLUMNS = "thread_id, tool_call_id, name, args_json, status, started_at, finished_at, pid, result_json, attempts"
KEY = ("thread_id", "tool_call_id", KEY_COLUMN)
# A claim: the row, unless the call has one already.
CLAIM = upsert(
    "gatehouse_journal",
    ("thread_id", "tool_call_id", "name", "args_json", "status", "started_at", "pid", KEY_COLUMN),
    KEY,
)
# Every column (a thread's import restores its rows whole).
RESTORE_COLUMNS = (
    "thread_id",
    "tool_call_id",
    "name",
    "args_json",
    "status",
    "result_json",
    "started_at",
    "finished_at",
    "pid",
    "attempts",
    KEY_COLUMN,
)
# A result: the row finished (written whole if the claim is gone, e.g. a thread imported since).
FINISH = upsert(
    "gatehouse_journal",
    (*RESTORE_COLUMNS[:-2], KEY_COLUMN),
    KEY,
    update=("status", "result_json", "finished_at"),
)


@dataclass(frozen=True)
class JournalEntry:
    thread_id: str
    tool_call_id: str
    name: str
    args: dict[str, Any]
    status: Literal["started", "finished"]
    started_at: float
    finished_at: float | None
    pid: int | None
    result: ToolMessage | None
    # How many times the call was started (a person may choose "run again").
    attempts: int = 1

    @property
    def finished(self) -> bool:
        return self.status == "finished" and self.result is not None


class Journal(Table):
    """Rows of `gatehouse_journal`, keyed by (thread_id, tool_call_id, call_key): one
    row per call, bound to its tool and canonical arguments (graph/store/binding.py).
    Each write commits before the graph moves on."""

    def __init__(self, db: Database, location: str = "") -> None:
        super().__init__(db)
        self.location = location

    @staticmethod
    def create(cur: Cursor) -> None:
        rebind(cur, "gatehouse_journal", SCHEMA, KEY, _legacy_key)
        cur.execute(cur.dialect.ddl(SCHEMA))
        if "attempts" not in cur.columns(
            "gatehouse_journal"
        ):  # written before attempts were counted
            cur.execute(
                "ALTER TABLE gatehouse_journal ADD COLUMN attempts INTEGER NOT NULL DEFAULT 1"
            )

    def get(self, thread_id: str, tool_call_id: str) -> JournalEntry | None:
        """The latest row for a call id, whatever its tool (for views; the agent uses `find`)."""
        rows = self._select(
            "tool_call_id=? ORDER BY started_at DESC LIMIT 1", (thread_id, tool_call_id)
        )
        return _entry(rows[0]) if rows else None

    def logged_ids(self, thread_id: str, tool_call_ids: Sequence[str]) -> set[str]:
        """Which of these call ids the thread's journal holds a row under (one query)."""
        if not tool_call_ids:
            return set()
        marks = ", ".join("?" * len(tool_call_ids))
        rows = self._db.rows(
            f"SELECT DISTINCT tool_call_id FROM gatehouse_journal WHERE thread_id=? AND tool_call_id IN ({marks})",
            (thread_id, *tool_call_ids),
        )
        return {r[0] for r in rows}

    def find(self, thread_id: str, call: ToolCall) -> JournalEntry | None:
        """The row of exactly this call: its id, tool and canonical arguments."""
        rows = self._select("tool_call_id=? AND call_key=?", (thread_id, call["id"], key_of(call)))
        return bound_entry(rows[0] if rows else None, call)

    def entries(self, thread_id: str) -> list[JournalEntry]:
        return [_entry(r) for r in self._select("1=1 ORDER BY started_at", (thread_id,))]

    def _select(self, where: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """The thread's rows (`params[0]`) that pass `where`."""
        return self._db.rows(
            f"SELECT {COLUMNS} FROM gatehouse_journal WHERE thread_id=? AND {where}", params
        )

    def unfinished(self, thread_ids: Sequence[str]) -> set[str]:
        """Which of these threads have a call that started and never finished (one query)."""
        if not thread_ids:
            return set()
        marks = ",".join("?" * len(thread_ids))
        rows = self._db.rows(
            f"SELECT DISTINCT thread_id FROM gatehouse_journal WHERE thread_id IN ({marks}) "
            "AND status='started'",
            tuple(thread_ids),
        )
        return {r[0] for r in rows}

    def start(self, thread_id: str, call: ToolCall) -> None:
        """Claim the call before it runs (committed before it runs). Atomic: a second
        claimant (two clients resuming one approval at once) gets `CallAlreadyStarted`
        and must not run it."""
        claimed = self._db.run(
            CLAIM,
            (
                thread_id,
                call["id"],
                call["name"],
                _dumps(call["args"]),
                "started",
                time.time(),
                os.getpid(),
                key_of(call),
            ),
        )
        if claimed != 1:
            raise already_started(thread_id, call)

    def restart(self, thread_id: str, call: ToolCall, attempts: int) -> None:
        """Claim a crashed call again, after a person chose "run again" for its attempt
        number `attempts`: only one claimant of that attempt wins."""
        claimed = self._db.run(
            "UPDATE gatehouse_journal SET started_at=?, pid=?, attempts=attempts+1 "
            "WHERE thread_id=? AND tool_call_id=? AND call_key=? AND status='started' AND attempts=?",
            (time.time(), os.getpid(), thread_id, call["id"], key_of(call), attempts),
        )
        if claimed != 1:
            raise already_started(thread_id, call)

    def finish(self, thread_id: str, call: ToolCall, result: ToolMessage) -> None:
        """Record the result; from now on the call is answered by this row."""
        payload = json.dumps(message_to_dict(result), default=str)
        now = time.time()
        self._db.run(
            FINISH,
            (
                thread_id,
                call["id"],
                call["name"],
                _dumps(call["args"]),
                "finished",
                payload,
                now,
                now,
                os.getpid(),
                key_of(call),
            ),
        )

    def delete_thread(self, thread_id: str) -> None:
        self._db.run("DELETE FROM gatehouse_journal WHERE thread_id=?", (thread_id,))

    def restore(self, entries: Sequence[JournalEntry]) -> None:
        """Write rows as they were (a thread's import brings its journal back, so a
        call that ran is never claimed anew). A row already there stays as it is."""
        with self._db.transaction() as cur:
            cur.executemany(RESTORE, [restore_row(e) for e in entries])


def already_started(thread_id: str, call: ToolCall) -> CallAlreadyStarted:
    return CallAlreadyStarted(
        f"{call['name']} (call {call['id']}) was already started by another run on thread {thread_id}; "
        "it was not run again here. Reload the thread to see its result."
    )


RESTORE = upsert("gatehouse_journal", RESTORE_COLUMNS, KEY)


def restore_row(e: JournalEntry) -> tuple[Any, ...]:
    result = None if e.result is None else json.dumps(message_to_dict(e.result), default=str)
    return (
        e.thread_id,
        e.tool_call_id,
        e.name,
        _dumps(e.args),
        e.status,
        result,
        e.started_at,
        e.finished_at,
        e.pid,
        e.attempts,
        call_key(e.name, e.args),
    )


def key_of(call: ToolCall) -> str:
    return call_key(call["name"], call["args"])


def bound_entry(row: tuple[Any, ...] | None, call: ToolCall) -> JournalEntry | None:
    """The entry of `row` when it is exactly `call` (the key is a digest: the stored tool
    and arguments are compared too)."""
    if row is None:
        return None
    entry = _entry(row)
    return entry if same_call(entry.name, entry.args, call["name"], call["args"]) else None


def _legacy_key(row: Mapping[str, Any]) -> str:
    """The key of a row written before rows were bound (migration)."""
    return call_key(str(row["name"]), json.loads(row["args_json"]))


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)


def _entry(row: tuple[Any, ...]) -> JournalEntry:
    thread_id, call_id, name, args_json, status, started_at, finished_at, pid, result_json = row[:9]
    attempts = row[9] if len(row) > 9 and row[9] is not None else 1
    result = messages_from_dict([json.loads(result_json)])[0] if result_json else None
    return JournalEntry(
        thread_id,
        call_id,
        name,
        json.loads(args_json),
        status,
        started_at,
        finished_at,
        pid,
        result if isinstance(result, ToolMessage) else None,
        attempts,
    )

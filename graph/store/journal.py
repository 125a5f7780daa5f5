"""The execution journal: a side-effecting tool call is written down before it runs and
again, with its result, after (graph/agent/tool_node.py), beside the checkpoints. After
a crash, started but not finished: the call is not run again silently, the run pauses
with an "outcome unknown" request, whatever the tool says of idempotence; finished but
not in the checkpoint: the stored result is the answer.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import ToolCall, ToolMessage, message_to_dict, messages_from_dict

from gatehouse.graph.protocol.errors import CallAlreadyStarted
from gatehouse.graph.store.binding import KEY_COLUMN, call_key, dumps, rebind, same_call
from gatehouse.graph.store.database import Cursor, ThreadRows
from gatehouse.graph.store.dialect import upsert

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
# A claim: the row, unless the call has one already (a row back: claimed).
_CLAIMED = ("thread_id", "tool_call_id", "name", "args_json", "status", "started_at", "pid")
CLAIM = upsert("gatehouse_journal", (*_CLAIMED, KEY_COLUMN), KEY) + " RETURNING 1"
# Every column (a thread's import restores its rows whole).
RESTORE_COLUMNS = (*COLUMNS.split(", "), KEY_COLUMN)
# A result: the row finished (written whole if the claim is gone: a thread imported since).
FINISH = upsert(
    "gatehouse_journal",
    (*RESTORE_COLUMNS[:-2], KEY_COLUMN),  # all but `attempts`
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
    attempts: int = 1

    @property
    def finished(self) -> bool:
        return self.status == "finished" and self.result is not None


class Journal(ThreadRows):
    """`gatehouse_journal`: one row per call, bound to its tool and canonical arguments
    (binding.py); each write commits before the graph moves on."""

    name = "gatehouse_journal"

    @staticmethod
    def create(cur: Cursor) -> None:
        rebind(cur, "gatehouse_journal", SCHEMA, KEY, _legacy_key)
        cur.execute(cur.dialect.ddl(SCHEMA))
        cur.add_column("gatehouse_journal", "attempts INTEGER NOT NULL DEFAULT 1")

    def get(self, thread_id: str, tool_call_id: str) -> JournalEntry | None:
        """The latest row for a call id, whatever its tool (views; the agent uses `find`)."""
        rows = self._select(
            "tool_call_id=? ORDER BY started_at DESC LIMIT 1", (thread_id, tool_call_id)
        )
        return _entry(rows[0]) if rows else None

    def logged_ids(self, thread_id: str, tool_call_ids: Sequence[str]) -> set[str]:
        """Which of these call ids the thread's journal holds a row under."""
        return self._which("tool_call_id", tool_call_ids, "thread_id=? AND ", (thread_id,))

    def find(self, thread_id: str, call: ToolCall) -> JournalEntry | None:
        """The row of exactly this call: its id, tool and canonical arguments."""
        rows = self._select("tool_call_id=? AND call_key=?", (thread_id, call["id"], key_of(call)))
        entry = _entry(rows[0]) if rows else None
        # The key is a digest: the stored tool and arguments are compared too.
        same = entry is not None and same_call(entry.name, entry.args, call["name"], call["args"])
        return entry if same else None

    def entries(self, thread_id: str) -> list[JournalEntry]:
        return [_entry(r) for r in self._select("1=1 ORDER BY started_at", (thread_id,))]

    def _select(self, where: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self._db.rows(
            f"SELECT {COLUMNS} FROM gatehouse_journal WHERE thread_id=? AND {where}", params
        )

    def unfinished(self, thread_ids: Sequence[str]) -> set[str]:
        """Which of these threads have a call that started and never finished."""
        return self._which("thread_id", thread_ids, "status='started' AND ")

    def claim(self, thread_id: str, call: ToolCall) -> JournalEntry | None:
        """Claim the call before it runs (None), in one statement; else the row already
        there (`find`: finished, or started by a run that crashed or is running)."""
        row = (thread_id, call["id"], call["name"], dumps(call["args"]), "started")
        # Postgres: the statement commits on its own; SQLite: BEGIN IMMEDIATE (database.py).
        with self._db.read() if self.dialect.postgres else self._db.transaction() as cur:
            claimed = cur.execute(CLAIM, (*row, time.time(), os.getpid(), key_of(call)))
            if claimed.fetchall():
                return None
        found = self.find(thread_id, call)
        if found is None:  # the row of another call whose key is the same digest
            raise already_started(thread_id, call)
        return found

    def start(self, thread_id: str, call: ToolCall) -> None:
        """Claim the call before it runs; a second claimant (two clients resuming one
        approval) gets `CallAlreadyStarted` and must not run it."""
        if self.claim(thread_id, call) is not None:
            raise already_started(thread_id, call)

    def restart(self, thread_id: str, call: ToolCall, attempts: int) -> None:
        """Claim a crashed call again ("run again" for attempt `attempts`): one wins."""
        claimed = self._db.run(
            "UPDATE gatehouse_journal SET started_at=?, pid=?, attempts=attempts+1 "
            "WHERE thread_id=? AND tool_call_id=? AND call_key=? AND status='started' AND attempts=?",
            (time.time(), os.getpid(), thread_id, call["id"], key_of(call), attempts),
        )
        if claimed != 1:
            raise already_started(thread_id, call)

    def finish(self, thread_id: str, call: ToolCall, result: ToolMessage) -> None:
        """Record the result: from now on this row answers the call."""
        payload = json.dumps(message_to_dict(result), default=str)
        now, row = time.time(), (thread_id, call["id"], call["name"], dumps(call["args"]))
        self._db.run(FINISH, (*row, "finished", now, now, os.getpid(), payload, key_of(call)))

    def restore(self, entries: Sequence[JournalEntry]) -> None:
        """Write rows as they were (an import: a call that ran is never claimed anew); a
        row already there stays."""
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
    head = (e.thread_id, e.tool_call_id, e.name, dumps(e.args), e.status, e.started_at)
    return (*head, e.finished_at, e.pid, result, e.attempts, call_key(e.name, e.args))


def key_of(call: ToolCall) -> str:
    return call_key(call["name"], call["args"])


def _legacy_key(row: Mapping[str, Any]) -> str:
    return call_key(str(row["name"]), json.loads(row["args_json"]))


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

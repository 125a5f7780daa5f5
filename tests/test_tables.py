"""The tables beside the checkpoints (thread index, journal, decision log, tool outputs,
run leases, notification log) behave the same on SQLite and on Postgres: each is one
module over graph/store/dialect.py, and every test here runs on both databases
(the `db` fixture; the Postgres runs carry the `postgres` marker).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from gatehouse.graph import CallAlreadyStarted, DecisionRecord, RunInProgress, tool_call
from gatehouse.graph.store import is_postgres_url, open_storage
from gatehouse.graph.store.decisions import switch_record
from gatehouse.graph.store.dialect import POSTGRES, SQLITE, upsert
from gatehouse.graph.store.journal import JournalEntry
from gatehouse.graph.store.notifications import NotificationLog
from gatehouse.graph.store.storage import Storage


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database setting: a new SQLite file, or a new Postgres database's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "gatehouse.db")
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def storage(db: str) -> Iterator[Storage]:
    opened = open_storage(db)
    try:
        yield opened
    finally:
        opened.close()


def raw_sql(db: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """A statement run behind Gatehouse's back (`?` placeholders, either database)."""
    if is_postgres_url(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            cur = conn.execute(POSTGRES.sql(sql), params)
            return cur.fetchall() if cur.description else []
    with sqlite3.connect(db) as lite:
        return lite.execute(sql, params).fetchall()


# -- the dialect -------------------------------------------------------------------------
def test_statements_are_written_once_and_spoken_in_each_dialect() -> None:
    sql = "SELECT a FROM t WHERE b=? AND c LIKE 'x%' AND d='?'"
    assert SQLITE.sql(sql) == sql
    assert POSTGRES.sql(sql) == "SELECT a FROM t WHERE b=%s AND c LIKE 'x%%' AND d='?'"
    assert SQLITE.ddl("x {real}, y {blob}") == "x REAL, y BLOB"
    assert POSTGRES.ddl("x {real}, y {blob}") == "x DOUBLE PRECISION, y BYTEA"
    assert upsert("t", ("k", "v"), ("k",), update=("v",)) == (
        "INSERT INTO t(k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v=excluded.v"
    )
    assert is_postgres_url("postgresql://u@h/db") and is_postgres_url("postgres://h/db")
    assert not is_postgres_url("/home/ann/postgresql://x.db") and not is_postgres_url(
        "gatehouse.db"
    )


def test_every_table_is_on_the_database_it_was_opened_on(db: str, storage: Storage) -> None:
    tables = (storage.index, storage.journal, storage.leases, storage.decisions, storage.outputs)
    want = POSTGRES if is_postgres_url(db) else SQLITE
    assert all(table is not None and table.dialect is want for table in tables)


# -- thread index ------------------------------------------------------------------------
def test_thread_index_rows(storage: Storage) -> None:
    index = storage.index
    index.touch("a", owner="ann")  # the owner is who started the thread
    assert index.get("a").title == "New thread" and index.get("a").status == "idle"
    index.touch("a", title="first words", owner="bob")
    index.touch("a", title="later words")  # the first real title stays
    assert (index.get("a").title, index.get("a").owner) == ("first words", "ann")
    index.touch("a", status="awaiting_approval")
    since = index.get("a").pending_since
    assert since is not None
    index.touch("a", status="awaiting_approval")  # still the same wait
    assert index.get("a").pending_since == since
    index.touch("a", status="failed", reason="model down")
    assert (index.get("a").status, index.get("a").reason, index.get("a").pending_since) == (
        "failed",
        "model down",
        None,
    )
    index.touch("a", status="completed")  # a new status clears the reason
    assert index.get("a").reason is None
    index.rename("a", "renamed")
    assert index.get("a").title == "renamed"

    index.touch("b", status="awaiting_approval")
    index.touch("c", status="awaiting_approval")
    assert [t.thread_id for t in index.pending()] == ["b", "c"]  # oldest wait first
    assert [t.thread_id for t in index.list()] == ["c", "b", "a"]  # latest update first
    assert [t.thread_id for t in index.list(limit=1)] == ["c"]
    assert [t.thread_id for t in index.list(status="completed")] == ["a"]
    index.delete("b")
    assert index.get("b") is None and [t.thread_id for t in index.pending()] == ["c"]


# -- journal -----------------------------------------------------------------------------
def test_journal_claims_a_call_once_and_keeps_its_result(storage: Storage) -> None:
    journal = storage.journal
    assert journal is not None
    call = tool_call("send_email", {"to": "a@x", "body": "1"}, "c1")
    journal.start("t1", call)
    entry = journal.get("t1", "c1")
    assert (
        entry.status == "started"
        and not entry.finished
        and entry.args == {"to": "a@x", "body": "1"}
    )
    journal.finish("t1", call, ToolMessage(content="sent", tool_call_id="c1", name="send_email"))
    entry = journal.get("t1", "c1")
    assert entry.finished and entry.result.content == "sent"
    # A second claim of the same call is refused, started or finished (issue 15).
    with pytest.raises(CallAlreadyStarted):
        journal.start("t1", call)
    # The row is bound to its tool and arguments: the same id on another call is not it.
    assert journal.find("t1", call).result.content == "sent"
    assert journal.find("t1", tool_call("delete_file", {"path": "a"}, "c1")) is None

    crashed = tool_call("send_email", {"to": "b@x", "body": "2"}, "c2")
    journal.start("t1", crashed)  # ... and the process died: "run again"
    journal.restart("t1", crashed, attempts=1)
    assert journal.get("t1", "c2").attempts == 2
    with pytest.raises(CallAlreadyStarted):  # a second "run again" of attempt 1
        journal.restart("t1", crashed, attempts=1)
    assert [e.tool_call_id for e in journal.entries("t1")] == ["c1", "c2"]
    storage.delete_thread("t1")
    assert journal.entries("t1") == []


def test_journal_restore_brings_rows_back_and_keeps_rows_there(storage: Storage) -> None:
    journal = storage.journal
    assert journal is not None
    ran = tool_call("write_file", {"path": "a.md"}, "w1")
    journal.start("t", ran)
    kept = journal.get("t", "w1")
    imported = [
        JournalEntry(
            "t",
            "w1",
            "write_file",
            {"path": "a.md"},
            "finished",
            1.0,
            2.0,
            9,
            ToolMessage(content="other", tool_call_id="w1", name="write_file"),
            1,
        ),
        JournalEntry(
            "t",
            "w2",
            "write_file",
            {"path": "b.md"},
            "finished",
            3.0,
            4.0,
            9,
            ToolMessage(content="wrote b.md", tool_call_id="w2", name="write_file"),
            2,
        ),
    ]
    journal.restore(imported)
    journal.restore([])
    assert journal.get("t", "w1") == kept  # a row already there stays as it is
    back = journal.find("t", tool_call("write_file", {"path": "b.md"}, "w2"))
    assert (
        back is not None
        and back.finished
        and back.result.content == "wrote b.md"
        and back.attempts == 2
    )
    with pytest.raises(CallAlreadyStarted):  # a call that ran is never claimed anew
        journal.start("t", tool_call("write_file", {"path": "b.md"}, "w2"))


# -- decision log ------------------------------------------------------------------------
def _decision(call_id: str, decision: str = "approve", **kw: Any) -> DecisionRecord:
    fields: dict[str, Any] = {
        "thread_id": "t",
        "question": "review",
        "tool_call_id": call_id,
        "tool": "write_file",
        "decision": decision,
        "args": {"path": f"{call_id}.md"},
        "source": "web",
        "actor": "ann",
        "decided_at": time.time(),
    }
    return DecisionRecord(**{**fields, **kw})


def test_decision_log_appends_once_and_chains_every_row(storage: Storage) -> None:
    log = storage.decisions
    assert log is not None
    log.record([_decision("c1"), _decision("c2", "reject", message="no")])
    log.record([_decision("c1", "reject")])  # recorded before: stays as it was
    assert [r.decision for r in log.for_call("t", "c1")] == ["approve"]
    assert [(r.tool_call_id, r.decision, r.message) for r in log.for_thread("t")] == [
        ("c1", "approve", None),
        ("c2", "reject", "no"),
    ]
    assert [r.tool_call_id for r in log.recent(limit=1)] == ["c2"]
    check = log.verify()
    assert check.intact and check.entries == 2


def test_grants_follow_the_latest_record(storage: Storage) -> None:
    log = storage.decisions
    assert log is not None
    now = time.time()
    log.record([_decision("g1", always_allow="notes/*", decided_at=now)])
    log.record([switch_record("t", True, source="api", actor="ann", decided_at=now + 1)])
    assert sorted((g.tool, g.pattern) for g in log.grants("t")) == [
        ("*", None),
        ("write_file", "notes/*"),
    ]
    log.record([switch_record("t", False, source="api", actor="ann", decided_at=now + 2)])
    assert [(g.tool, g.pattern) for g in log.grants("t")] == [("write_file", "notes/*")]
    assert log.grants("other") == []
    assert log.verify().entries == 3


# -- tool outputs ------------------------------------------------------------------------
def test_tool_outputs_are_kept_whole_and_replaced_by_a_rerun(db: str, storage: Storage) -> None:
    outputs = storage.outputs
    assert outputs is not None
    big = "line\n" * 50_000
    outputs.put("t", "c1", "read_file", big)
    outputs.put("t", "c2", "run_command", "first")
    outputs.put("t", "c2", "run_command", "second")  # the call ran again
    assert outputs.get("t", "c1") == big and outputs.get("t", "c2") == "second"
    assert outputs.for_thread("t") == {"c1": big, "c2": "second"}
    assert raw_sql(
        db, "SELECT chars FROM gatehouse_tool_outputs WHERE tool_call_id=?", ("c2",)
    ) == [(6,)]
    # Binary-ish output: Postgres text cannot hold NUL, everything else is kept.
    outputs.put("t", "c3", "run_command", "a\x00b")
    assert outputs.get("t", "c3") == ("a\ufffdb" if is_postgres_url(db) else "a\x00b")
    storage.delete_thread("t")
    assert outputs.for_thread("t") == {} and outputs.get("t", "c1") is None


# -- queued messages ---------------------------------------------------------------------
def test_queued_messages_keep_their_order_and_are_taken_once(db: str, storage: Storage) -> None:
    queued = storage.queued
    assert queued is not None
    first, second = queued.add("t", "one\n# two"), queued.add("t", "three")
    queued.add("other", "elsewhere")
    assert [m.text for m in queued.waiting("t")] == ["one\n# two", "three"]
    assert queued.take("t", first.id) and not queued.take("t", first.id)  # taken once
    queued.add("t", first.text, keep=first)  # put back in its place: still first
    assert [m.id for m in queued.waiting("t")] == [first.id, second.id]
    queued.writable()
    # A second Storage on the same database (another process, a restart) sees them.
    again = open_storage(db)
    try:
        assert again.queued is not None
        assert [m.text for m in again.queued.waiting("t")] == ["one\n# two", "three"]
    finally:
        again.close()
    storage.delete_thread("t")
    assert queued.waiting("t") == [] and [m.text for m in queued.waiting("other")] == ["elsewhere"]


# -- run leases --------------------------------------------------------------------------
def test_one_lease_per_thread_until_released_or_expired(db: str, storage: Storage) -> None:
    leases = storage.leases
    assert leases is not None
    lease = leases.acquire("t1")
    assert leases.holder("t1") == lease.owner
    with pytest.raises(RunInProgress, match="already running on thread t1 \\(in this process\\)"):
        leases.acquire("t1")
    second = open_storage(db)  # another process's view of the same database
    try:
        assert second.leases is not None and second.leases.holder("t1") == lease.owner
        with pytest.raises(RunInProgress):
            second.leases.acquire("t1")
        assert leases.renew(lease)
        lease.release()
        assert leases.holder("t1") is None and not leases.renew(lease)
        taken = second.leases.acquire("t1")
        taken.release()
        # A lease nobody renews is taken over once it expired.
        second.leases.ttl = -1.0
        second.leases.acquire("t2")
        assert leases.holder("t2") is None
        leases.acquire("t2").release()
    finally:
        second.close()


# -- notification log --------------------------------------------------------------------
def test_a_pause_is_claimed_for_notifying_once(db: str) -> None:
    log, other = NotificationLog(db), NotificationLog(db)
    try:
        assert log.claim("t", "i1", "http://hook", {"thread": "t", "text": "é"})
        assert not other.claim("t", "i1", "http://hook", {"thread": "t"})  # already notified
        assert other.claim("u", "i1", "http://hook", {"thread": "u"})
        log.attempted("t", "i1", error="HTTP 500", final=False)
        log.attempted("t", "i1", error=None, final=False)
        other.attempted("u", "i1", error="timeout", final=True)
        [t] = other.list("t")
        assert (t.status, t.attempts, t.last_error, t.payload["text"]) == (
            "delivered",
            2,
            None,
            "é",
        )
        assert t.delivered_at is not None
        assert [(n.thread_id, n.status) for n in log.list()] == [
            ("t", "delivered"),
            ("u", "failed"),
        ]
    finally:
        log.close()
        other.close()


# -- databases written by older versions ----------------------------------------------------
def test_older_tables_are_brought_up_to_date_on_open(db: str) -> None:
    """A thread index from before runs kept a failure reason, a journal from before it
    counted attempts, a decision log from before requests had ids."""
    real = POSTGRES.real if is_postgres_url(db) else SQLITE.real
    raw_sql(
        db,
        "CREATE TABLE gatehouse_threads (thread_id TEXT PRIMARY KEY, title TEXT NOT NULL DEFAULT '', "
        f"status TEXT NOT NULL DEFAULT 'idle', owner TEXT, created_at {real} NOT NULL, "
        f"updated_at {real} NOT NULL, pending_since {real})",
    )
    raw_sql(
        db,
        "INSERT INTO gatehouse_threads VALUES ('old', 'kept title', 'completed', 'ann', 1.0, 2.0, NULL)",
    )
    storage = open_storage(db)
    try:
        old = storage.index.get("old")
        assert (old.title, old.owner, old.reason) == ("kept title", "ann", None)
        storage.index.touch("old", status="failed", reason="disk full")
        assert storage.index.get("old").reason == "disk full"
    finally:
        storage.close()
    again = open_storage(db)  # opened again: nothing to migrate, nothing lost
    try:
        assert again.index.get("old").reason == "disk full"
    finally:
        again.close()

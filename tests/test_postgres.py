"""Postgres storage (issue 9): the core suite, cross-process resume and three app
processes sharing threads, against a real throwaway Postgres server.

The core suite's tests are imported and run a second time here with
`make_session` pointed at a fresh Postgres database per test (see `pg_sessions`).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.postgres import PostgresSaver

import tests.test_core_graph as core
from gatehouse.graph import StorageError, ai, tool_call
from gatehouse.graph.store import open_storage
from gatehouse.graph.store.dialect import POSTGRES
from gatehouse.graph.store.postgres import redact
from tests.support.core_fixtures import Ledger, make_session
from tests.support.postgres import PostgresServer

# The core approval-contract suite, collected again in this module (on Postgres).
from tests.test_core_graph import *  # noqa: F403

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def pg_sessions(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every `make_session` in this module (and in the imported core tests) opens
    the test's own Postgres database; the sessions are closed afterwards."""
    opened: list[Any] = []

    def on_postgres(tmp: Path, script: list[Any], *, db: str | None = None, **kwargs: Any) -> Any:
        result = make_session(tmp, script, db=db or postgres_url, **kwargs)
        opened.append(result[0])
        return result

    monkeypatch.setattr(core, "make_session", on_postgres)
    yield postgres_url
    for session in opened:
        session.close()


def pg_session(script: list[Any], tmp: Path) -> Any:
    """A Session on this test's Postgres database (closed after the test)."""
    return core.make_session(tmp, script)


# -- storage itself ---------------------------------------------------------------


def _rows_read(conn: Any, sql: str, params: tuple[Any, ...], table: str) -> int:
    """Rows of `table` that `sql`'s plan read, kept or filtered out (EXPLAIN ANALYZE)."""
    [(plan,)] = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchall()

    def walk(node: dict[str, Any]) -> int:
        own = 0
        if node.get("Relation Name") == table:
            rows = node.get("Actual Rows", 0) + node.get("Rows Removed by Filter", 0)
            own = rows * node.get("Actual Loops", 1)
        return own + sum(walk(child) for child in node.get("Plans", []))

    return int(walk(plan[0]["Plan"]))


def test_a_checkpoint_is_read_by_its_own_rows_on_a_database_never_analysed(
    pg_sessions: str, tmp_path: Path
) -> None:
    """A new database is never analysed until autovacuum gets to it. Reading a thread's
    latest checkpoint, and the writes `put` reads at its parent, must look up that
    checkpoint's own rows: the stock read hashed every blob of the thread, and the
    writes' `= ANY(...)` filtered every write of the thread, so both grew with it (a
    Postgres turn at 300 turns took 108 ms against 37 ms at 50). The thread gets 20,000
    rows of older history here (as a long thread has), so the planner sees the sizes."""
    import psycopg

    from gatehouse.graph.store.delta_reads import writes_at_sql
    from gatehouse.graph.store.dialect import POSTGRES
    from gatehouse.graph.store.pg_saver import GatehousePostgresSaver

    session, _, _ = pg_session([], tmp_path)
    for turn in range(3):
        session.send("t1", f"turn {turn}").collect()
    with psycopg.connect(pg_sessions, autocommit=True) as conn:
        for table in ("checkpoint_blobs", "checkpoint_writes"):
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        conn.execute(
            "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) "
            "SELECT 't1', '', 'old-' || g % 20, 'v' || g, 'empty', NULL FROM generate_series(1, 20000) g"
        )
        conn.execute(
            "INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, "
            "task_path, idx, channel, type, blob) SELECT 't1', '', '0-old-' || g, 'task', '', 0, "
            "'messages', 'empty', ''::bytea FROM generate_series(1, 20000) g"
        )
        stats = conn.execute(
            "SELECT count(*) FROM pg_stats WHERE tablename LIKE 'checkpoint%'"
        ).fetchone()
        assert stats == (0,), "the tables were analysed: this test would prove nothing"
        latest = conn.execute(
            "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = 't1' "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        assert latest is not None
        read = " WHERE thread_id = %s AND checkpoint_ns = '' ORDER BY checkpoint_id DESC LIMIT 1"
        [(versions,)] = conn.execute(
            "SELECT count(*) FROM checkpoints, jsonb_object_keys(checkpoint -> 'channel_versions') "
            "WHERE thread_id = 't1' AND checkpoint_id = %s",
            (latest[0],),
        ).fetchall()
        ours = _rows_read(
            conn, GatehousePostgresSaver.SELECT_SQL + read, ("t1",), "checkpoint_blobs"
        )
        stock = _rows_read(conn, PostgresSaver.SELECT_SQL + read, ("t1",), "checkpoint_blobs")
        assert ours <= versions and stock > 20_000, (ours, stock)
        [(written,)] = conn.execute(
            "SELECT count(*) FROM checkpoint_writes WHERE thread_id = 't1' AND checkpoint_id = %s",
            (latest[1],),
        ).fetchall()
        at_parent = ("t1", "", "messages", latest[1])
        ours_sql = writes_at_sql(POSTGRES, "checkpoint_writes", "blob", "task_path", 1)
        ours = _rows_read(conn, ours_sql, at_parent, "checkpoint_writes")
        before = (*at_parent[:3], [latest[1]])  # as `put` asked before: `= ANY(...)`
        stock = _rows_read(
            conn, ours_sql.replace("IN (%s)", "= ANY(%s)"), before, "checkpoint_writes"
        )
        assert ours <= written and stock > 20_000, (ours, stock)
    # A LangGraph release that words its query differently leaves ours unchanged: this
    # says so.
    assert GatehousePostgresSaver.SELECT_SQL != PostgresSaver.SELECT_SQL


@pytest.mark.parametrize("failing", ["head rewrite", "head append", "writes"])
def test_a_write_that_fails_half_way_is_rolled_back_and_the_next_one_lands(
    failing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The saver writes a checkpoint, or a step's writes, in one statement
    (graph/store/pg_saver.py). A part failing after others ran leaves nothing behind,
    and the thread goes on. "head rewrite": a branch from an older checkpoint, whose
    head rows are rewritten once the compare-and-set aborted the first transaction (a
    second one); "head append": in the checkpoint's statement; "writes": a step's
    writes."""
    import psycopg

    import gatehouse.graph.store.head as head

    session, _, _ = pg_session(["first", "second"], tmp_path)
    session.send("t1", "hi").collect()
    saver = session.storage.checkpointer
    before = [s.config for s in session.agent.get_state_history(core.CFG)]
    where = core.CFG

    def nowhere(params: int, mark: str = "?") -> str:
        return "INSERT INTO gatehouse_nowhere VALUES (" + ", ".join([mark] * params) + ")"

    with monkeypatch.context() as broken:
        if failing == "head rewrite":
            broken.setattr(head, "UPSERT_HEAD", nowhere(5))
            where = before[1]  # the checkpoint before the latest: a branch
        elif failing == "head append":
            broken.setattr(head, "_EXTEND_BLOCK", nowhere(6))
        else:
            broken.setattr(saver, "INSERT_CHECKPOINT_WRITES_SQL", nowhere(9, "%s"))
        with pytest.raises(psycopg.errors.UndefinedTable):
            session.agent.invoke({"messages": [("user", "lost")]}, where)
    after = [s.config for s in session.agent.get_state_history(core.CFG)]
    if failing == "head rewrite":  # the branch's first checkpoint failed: nothing new
        assert after == before
    else:  # the run's input checkpoint landed first, in a transaction of its own
        assert after[1:] == before

    session.send("t1", "again").collect()
    expected = ["hi", "first", "again", "second"]
    got = session.agent.get_state(core.CFG).values["messages"]
    assert [m.content for m in got] == expected
    # Read back from the database (another session: nothing cached), through the head.
    other, _, _ = pg_session([], tmp_path / "other")
    assert [m.content for m in other.agent.get_state(core.CFG).values["messages"]] == expected


def test_postgres_url_selects_the_official_saver_and_postgres_tables(
    pg_sessions: str, tmp_path: Path
) -> None:
    session, _, _ = pg_session([], tmp_path)
    storage = session.storage
    assert isinstance(storage.checkpointer, PostgresSaver)
    tables = (storage.index, storage.journal, storage.leases, storage.decisions, storage.outputs)
    assert all(table is not None and table.dialect is POSTGRES for table in tables)
    import psycopg

    with psycopg.connect(pg_sessions) as conn:
        tables = {
            r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname='public'")
        }
    assert {
        "checkpoints",
        "checkpoint_writes",
        "gatehouse_threads",
        "gatehouse_journal",
        "gatehouse_leases",
    } <= tables
    # Opening again (a second process, a restart) finds the schema and keeps the data.
    session.storage.index.touch("kept", title="still here")
    again = open_storage(pg_sessions)
    try:
        assert again.index.get("kept").title == "still here"
    finally:
        again.close()


def test_unreachable_postgres_is_a_clear_storage_error(postgres_server: PostgresServer) -> None:
    url = f"postgresql://postgres:secret@127.0.0.1:{postgres_server.port}/no_such_database"
    with pytest.raises(StorageError) as err:
        open_storage(url)
    assert "no_such_database" in str(err.value) and "secret" not in str(err.value)
    assert (
        redact(url)
        == f"postgresql://postgres:***@127.0.0.1:{postgres_server.port}/no_such_database"
    )


# -- processes ----------------------------------------------------------------------


class App:
    """One app process (tests/support/multi_process_worker.py) on the shared database."""

    def __init__(self, db: str, folder: Path, *, wait: bool = True) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.multi_process_worker", db, str(folder)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if wait:
            self.ready()

    def ready(self) -> None:
        assert self.read()["ready"]

    def read(self) -> dict[str, Any]:
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"app process died: {self.proc.stderr.read()}")
        return json.loads(line)

    def post(self, **cmd: Any) -> None:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def ask(self, **cmd: Any) -> dict[str, Any]:
        self.post(**cmd)
        return self.read()

    def quit(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.post(op="quit")
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()


@pytest.fixture
def apps(pg_sessions: str, tmp_path: Path) -> Iterator[list[App]]:
    # Started side by side: each import of the stack takes seconds on a busy machine.
    started = [App(pg_sessions, tmp_path, wait=False) for _ in range(3)]
    try:
        for app in started:
            app.ready()
        yield started
    finally:
        for app in started:
            with contextlib.suppress(OSError):
                app.post(op="quit")
        for app in started:
            app.quit()


APPROVE = {"decisions": [{"type": "approve"}]}


def test_pause_in_one_process_resume_in_another(pg_sessions: str, tmp_path: Path) -> None:
    first = App(pg_sessions, tmp_path)
    try:
        reply = first.ask(op="send", thread="shared", text="email ops")
    finally:
        first.quit()
    assert reply["status"] == "awaiting_approval"
    request = next(e for e in reply["events"] if e["type"] == "approval_required")["request"]
    assert request["action_requests"][0]["args"] == {"to": "ops@example.com", "body": "email ops"}
    ledger = Ledger(tmp_path / "ledger.jsonl")
    assert ledger.count("send_email") == 0

    # The first process has exited; a fresh one resumes by thread id.
    second = App(pg_sessions, tmp_path)
    try:
        reply = second.ask(op="resume", thread="shared", answer=APPROVE)
        assert reply["status"] == "completed"
        assert ledger.count("send_email") == 1
        again = second.ask(op="resume", thread="shared", answer=APPROVE)
        assert not again["ok"] and "not waiting for a decision" in again["message"]
    finally:
        second.quit()
    session, _, _ = pg_session([], tmp_path)
    assert [m.content for m in session.view("shared").messages][-1] == "Email sent."
    assert session.view("shared").info.status == "completed"
    assert ledger.count("send_email") == 1


def test_three_app_processes_share_threads(apps: list[App], tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    # Each process starts two threads, all six at about the same time.
    at = time.time() + 0.5
    threads = {i: [f"p{i}-a", f"p{i}-b"] for i in range(3)}
    for i, app in enumerate(apps):
        for t in threads[i]:
            app.post(op="send", thread=t, text=f"mail from {t}", at=at)
    for app in apps:
        for _ in range(2):
            assert app.read()["status"] == "awaiting_approval"
    everyone = sorted(t for ts in threads.values() for t in ts)
    # Every process sees every paused thread in its approvals inbox.
    for app in apps:
        assert sorted(app.ask(op="pending")["threads"]) == everyone
    assert ledger.count("send_email") == 0

    # Each process approves the threads another one started.
    for i, app in enumerate(apps):
        for t in threads[(i + 1) % 3]:
            app.post(op="resume", thread=t, answer=APPROVE)
    for app in apps:
        for _ in range(2):
            assert app.read()["status"] == "completed"
    assert sorted(e["args"]["body"] for e in ledger.entries()) == sorted(
        f"mail from {t}" for t in everyone
    )
    for app in apps:
        assert app.ask(op="pending")["threads"] == []
        listed = app.ask(op="threads")["threads"]
        assert sorted(t["thread_id"] for t in listed) == everyone
        assert {t["status"] for t in listed} == {"completed"}
        assert app.ask(op="messages", thread="p2-b")["messages"][-1] == "Email sent."


def test_three_processes_racing_on_one_approval_run_the_tool_once(
    apps: list[App], tmp_path: Path
) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    for round_ in range(3):
        thread = f"race-{round_}"
        assert (
            apps[round_].ask(op="send", thread=thread, text=f"race {round_}")["status"]
            == "awaiting_approval"
        )
        at = time.time() + 0.5
        for app in apps:
            app.post(op="resume", thread=thread, answer=APPROVE, at=at)
        replies = [app.read() for app in apps]
        winners = [r for r in replies if r["ok"]]
        losers = [r for r in replies if not r["ok"]]
        assert len(winners) == 1 and winners[0]["status"] == "completed", replies
        assert {r["error"] for r in losers} <= {"AlreadyDecided", "NothingPending"}, losers
        assert sum(1 for e in ledger.entries() if e["args"]["body"] == f"race {round_}") == 1

    # A second message on a thread while another process runs on it is refused, not interleaved.
    session, _, _ = pg_session([ai("", tool_call("lookup", {"key": "k"}, "l1")), "done"], tmp_path)
    lease = session.storage.leases.acquire("busy")
    try:
        refused = apps[0].ask(op="send", thread="busy", text="hello")
        assert not refused["ok"] and refused["error"] == "RunInProgress"
    finally:
        lease.release()
    assert apps[0].ask(op="send", thread="busy", text="hello")["ok"]


def test_postgres_tables_have_the_sqlite_columns(pg_sessions: str, tmp_path: Path) -> None:
    """Each table, written once for both databases (graph/store/dialect.py), has the
    same columns on both, migrations included. The tables themselves are tested on
    both in tests/test_tables.py."""
    import sqlite3

    import psycopg

    open_storage(str(tmp_path / "columns.db")).close()
    pg = open_storage(pg_sessions)
    pg.close()
    tables = (
        "gatehouse_threads",
        "gatehouse_journal",
        "gatehouse_leases",
        "gatehouse_decisions",
        "gatehouse_decision_chain",
        "gatehouse_tool_outputs",
        "gatehouse_queued",
    )
    with sqlite3.connect(tmp_path / "columns.db") as lite, psycopg.connect(pg_sessions) as conn:
        for table in tables:
            expected = {row[1] for row in lite.execute(f"PRAGMA table_info({table})")}
            actual = {
                row[0]
                for row in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name=%s",
                    (table,),
                )
            }
            assert actual == expected, (
                f"{table}: Postgres {sorted(actual)} != SQLite {sorted(expected)}"
            )


def test_first_use_by_several_processes_at_once_sets_the_schema_up_once(pg_sessions: str) -> None:
    """Replicas starting together on a fresh database. The saver's migrations use
    CREATE INDEX CONCURRENTLY, which waits for every open transaction, so a starter
    blocked inside pg_advisory_lock deadlocked them (threads here; processes in the
    three-app tests)."""
    import threading

    barrier = threading.Barrier(4)
    opened: list[Any] = []
    failed: list[BaseException] = []

    def start() -> None:
        barrier.wait()
        try:
            opened.append(open_storage(pg_sessions))
        except BaseException as exc:
            failed.append(exc)

    starters = [threading.Thread(target=start) for _ in range(4)]
    for s in starters:
        s.start()
    for s in starters:
        s.join(timeout=120)
    try:
        assert not failed and len(opened) == 4 and not any(s.is_alive() for s in starters)
    finally:
        for storage in opened:
            storage.close()


def test_concurrent_raw_resumes_on_postgres_run_the_call_once(
    pg_sessions: str, tmp_path: Path
) -> None:
    """Two `graph.invoke(Command(resume=approve))` at the same instant, no Session: the
    journal's claim in Postgres lets one of them run the call (issue 15)."""
    import contextlib
    import threading

    from langgraph.types import Command

    from gatehouse.graph import CallAlreadyStarted, ScriptedModel, StaleDecision, build_graph
    from tests.support.counting_tools import make_counting_tools, runs

    for n in range(15):
        counter = tmp_path / f"count{n}"
        storage = open_storage(pg_sessions)
        graph = build_graph(
            model=ScriptedModel(script=[ai("", tool_call("bump", {"label": "x"}, "c1")), "Done."]),
            tools=make_counting_tools(counter),
            checkpointer=storage.checkpointer,
            journal=storage.journal,
            decisions=storage.decisions,
        )
        config = {"configurable": {"thread_id": f"raw-{n}"}}
        try:
            graph.invoke({"messages": [("user", "bump")]}, config)
            start = threading.Barrier(2)

            def resume(
                graph: Any = graph, start: threading.Barrier = start, config: Any = config
            ) -> None:
                start.wait()
                # The loser is told so and runs nothing: the call is running
                # (CallAlreadyStarted), or the winner's run had ended (StaleDecision).
                with contextlib.suppress(CallAlreadyStarted, StaleDecision):
                    graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)

            workers = [threading.Thread(target=resume) for _ in range(2)]
            for w in workers:
                w.start()
            for w in workers:
                w.join(60)
            assert runs(counter) == {"x": 1}, f"trial {n}"
        finally:
            storage.close()

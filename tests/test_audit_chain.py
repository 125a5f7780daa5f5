"""The decision log is tamper-evident on SQLite and Postgres: rows edited, deleted or
inserted with plain SQL behind Gatehouse's back are named by `Session.verify_audit`
and `gatehouse audit --verify` (the first one first), and an untouched log verifies.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gatehouse.graph import DecisionRecord, Settings, open_session
from gatehouse.graph.store.decision_chain import entry_hash, read_for_check

CALLS = ("c1", "c2", "c3", "c4")


def _records() -> list[DecisionRecord]:
    now = time.time()
    return [
        DecisionRecord(
            thread_id="t-a" if i % 2 else "t-b",
            question="review",
            tool_call_id=call,
            tool="write_file",
            decision="approve",
            args={"path": f"{call}.md", "content": "x"},
            source="web",
            actor="ana@example.com",
            decided_at=now + i,
        )
        for i, call in enumerate(CALLS)
    ]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def log(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Any, Callable[[str], None], str]]:
    """(a Session whose log holds four decisions, run(sql) on its database, db)."""
    if request.param == "sqlite":
        db = str(tmp_path / "gatehouse.db")

        def run(sql: str) -> None:
            with sqlite3.connect(db) as conn:
                conn.execute(sql)
    else:
        import psycopg

        db = request.getfixturevalue("postgres_url")

        def run(sql: str) -> None:
            with psycopg.connect(db, autocommit=True) as conn:
                conn.execute(sql)

    session = open_session(Settings(db=db, workspace=str(tmp_path)))
    session.storage.decisions.record(_records())
    session.storage.decisions.record(_records()[:1])  # recorded again: no new entry
    try:
        yield session, run, db
    finally:
        session.close()


def test_untouched_log_verifies(log: tuple[Any, Callable[[str], None], str]) -> None:
    session, _, _ = log
    result = session.verify_audit()
    assert result.intact and result.entries == 4 and len(result.head) == 64


def test_edited_row_is_named(log: tuple[Any, Callable[[str], None], str]) -> None:
    session, run, _ = log
    run("UPDATE gatehouse_decisions SET actor = 'alice (security lead)' WHERE tool_call_id = 'c2'")
    result = session.verify_audit()
    assert not result.intact
    assert result.first_problem == "entry #2 (thread t-a, call c2) was edited after it was recorded"


def test_deleted_row_is_named(log: tuple[Any, Callable[[str], None], str]) -> None:
    session, run, _ = log
    run("DELETE FROM gatehouse_decisions WHERE tool_call_id = 'c3'")
    assert (
        session.verify_audit().first_problem
        == "entry #3 (thread t-b, call c3) was deleted from the decision log"
    )


def test_deleted_row_and_its_entry_show_as_a_gap(
    log: tuple[Any, Callable[[str], None], str],
) -> None:
    session, run, _ = log
    run("DELETE FROM gatehouse_decisions WHERE tool_call_id = 'c2'")
    run("DELETE FROM gatehouse_decision_chain WHERE tool_call_id = 'c2'")
    assert session.verify_audit().first_problem == "entry #2 was deleted: the chain jumps to #3"


def test_inserted_row_is_named(log: tuple[Any, Callable[[str], None], str]) -> None:
    session, run, _ = log
    run(
        "INSERT INTO gatehouse_decisions(thread_id, question, tool_call_id, tool, decision, args_json, source, actor, "
        "decided_at) VALUES ('t-a', 'review', 'forged', 'run_command', 'approve', '{}', 'web', 'ana', 1.0)"
    )
    result = session.verify_audit()
    assert result.first_problem == (
        "a decision was inserted into the log without being recorded "
        "(thread t-a, call forged, approve of run_command)"
    )


def test_a_rewritten_entry_breaks_the_next_link(
    log: tuple[Any, Callable[[str], None], str],
) -> None:
    """Someone who edits a row and recomputes its own entry's hash is caught by the next entry."""
    session, run, _ = log
    run("UPDATE gatehouse_decisions SET decision = 'reject' WHERE tool_call_id = 'c1'")
    rows = [r for r in _rows(session) if r["tool_call_id"] == "c1"]
    run(
        f"UPDATE gatehouse_decision_chain SET entry_hash = '{entry_hash('0' * 64, 1, rows[0])}' WHERE seq = 1"
    )
    result = session.verify_audit()
    assert result.first_problem.startswith(
        "entry #2 (thread t-a, call c2) does not follow the entry before it"
    )


def _rows(session: Any) -> list[dict[str, Any]]:
    """The decision rows as the store reads them (the hash covers exactly these)."""
    with (
        session.storage.decisions._db.snapshot() as cur
    ):  # either database, as Decisions.verify reads
        return read_for_check(cur)[0]


def test_cli_verify_says_intact_or_names_the_first_problem(
    log: tuple[Any, Callable[[str], None], str],
) -> None:
    from gatehouse.ui.term.cli import app

    session, run, db = log
    runner = CliRunner()
    ok = runner.invoke(app, ["audit", "--verify", "--db", db])
    assert ok.exit_code == 0 and "Decision log intact: 4 entries" in ok.output
    run(
        "UPDATE gatehouse_decisions SET args_json = '{\"path\": \"other.md\"}' WHERE tool_call_id = 'c4'"
    )
    bad = runner.invoke(app, ["audit", "--verify", "--db", db, "--json"])
    assert bad.exit_code == 1
    report = json.loads(bad.output)
    assert not report["intact"] and report["problems"] == [
        "entry #4 (thread t-a, call c4) was edited after it was recorded"
    ]


def test_a_log_from_before_the_chain_is_sealed_as_it_stands(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    session = open_session(Settings(db=str(db), workspace=str(tmp_path)))
    session.storage.decisions.record(_records())
    session.close()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "DROP TABLE gatehouse_decision_chain"
        )  # what a database from before the chain looks like
    session = open_session(Settings(db=str(db), workspace=str(tmp_path)))
    try:
        assert session.verify_audit().entries == 4 and session.verify_audit().intact
    finally:
        session.close()


def test_a_column_added_later_keeps_older_entries_valid(
    log: tuple[Any, Callable[[str], None], str],
) -> None:
    session, run, _ = log
    run(
        "ALTER TABLE gatehouse_decisions ADD COLUMN bound_args_hash TEXT"
    )  # a later schema, NULL for old rows
    assert session.verify_audit().intact
    run("UPDATE gatehouse_decisions SET bound_args_hash = 'x' WHERE tool_call_id = 'c3'")
    assert (
        session.verify_audit().first_problem
        == "entry #3 (thread t-b, call c3) was edited after it was recorded"
    )

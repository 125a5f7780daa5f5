"""Issue 22 on Postgres: outputs stored aside, the decision audit log and
export/import behave as on SQLite, against a real throwaway Postgres server."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gatehouse.graph import ScriptedModel, Settings, ai, open_session, tool_call
from gatehouse.graph.protocol.operations import Delete, ImportThread
from gatehouse.graph.store import open_storage
from tests.test_long_conversations import big_file, finished, read_more

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]


def test_offloading_audit_and_import_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    text = big_file(tmp_path)
    model = ScriptedModel(
        script=[
            ai("", tool_call("read_file", {"path": "big.txt"}, "c1")),
            read_more,
            "Found it.",
            ai("", tool_call("write_file", {"path": "a.md", "content": "one\ntwo\n"}, "w1")),
            "Wrote it.",
        ]
    )
    session = open_session(
        Settings(db=postgres_url, workspace=str(tmp_path / "ws")),
        model=model,
        source="web",
        actor="erin",
    )
    try:
        run = session.send(None, "read it")
        events = run.collect()
        tid = run.thread_id
        assert finished(events).status == "completed"
        assert "row 1499: " in session.view(tid).tool_output("r1")
        assert session.view(tid).tool_output("c1") == text  # stored whole in Postgres

        session.send(tid, "write").collect()
        session.resume(
            tid,
            {
                "decisions": [
                    {
                        "type": "edit",
                        "edited_action": {
                            "name": "write_file",
                            "args": {"path": "a.md", "content": "one\n2\n"},
                        },
                    },
                ]
            },
        ).collect()
        [record] = session.view(tid).audit()
        assert (record.decision, record.source, record.actor) == ("edit", "web", "erin")
        assert "-two\n+2" in (record.diff() or "")

        exported = session.view(tid).export("json")
        copy = session.submit(ImportThread(exported)).result().thread_id
        assert copy != tid and session.view(copy).messages == session.view(tid).messages
        assert session.view(copy).tool_output("c1") == text

        session.submit(Delete(tid))
        assert session.view(tid).tool_output("c1") is None
        assert [r.tool_call_id for r in session.view(tid).audit()] == [
            "w1"
        ]  # the log outlives the thread
    finally:
        session.close()


def test_postgres_tables_for_decisions_and_outputs_have_the_sqlite_columns(
    postgres_url: str, tmp_path: Path
) -> None:
    import psycopg

    open_storage(str(tmp_path / "columns.db")).close()
    open_storage(postgres_url).close()
    with sqlite3.connect(tmp_path / "columns.db") as lite, psycopg.connect(postgres_url) as conn:
        for table in ("gatehouse_decisions", "gatehouse_tool_outputs"):
            expected = {row[1] for row in lite.execute(f"PRAGMA table_info({table})")}
            actual = {
                row[0]
                for row in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name=%s",
                    (table,),
                )
            }
            assert expected and actual == expected, table

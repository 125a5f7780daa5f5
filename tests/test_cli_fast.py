"""Issue 18: the terminal's read-only commands answer at once because they never
import LangGraph or LangChain (over a second of imports): `--help`, `threads`,
`pending`, `show` read the database through `graph.open_reader`. Run here as a user
runs them, in a new process each, which reports the modules it loaded; and their
output is what the Session API reads (so going fast changed nothing shown).

Their wall time is measured by bench/cold.py (BENCHMARKS.md), not here.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver

from gatehouse.graph import DemoModel, Settings, build_graph, open_session
from gatehouse.graph.store.saver import compact_serde
from gatehouse.ui.term import render as term
from tests.support.clean_env import without_settings

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("langgraph", "langchain", "langchain_core", "langsmith", "openai", "prompt_toolkit")
# Runs the CLI like the console script (gatehouse.ui.term.entry) and writes the modules it loaded at exit.
WRAPPER = """
import atexit, json, sys
report = sys.argv.pop(1)
atexit.register(lambda: open(report, "w").write(json.dumps(sorted(sys.modules))))
sys.argv[0] = "gatehouse"
from gatehouse.ui.term.entry import main
main()
"""


@pytest.fixture
def db(tmp_path: Path) -> dict[str, Any]:
    """A database with a paused thread (a write waiting for approval) and a finished one."""
    path, ws = tmp_path / "gh.db", tmp_path / "ws"
    ws.mkdir()
    session = open_session(Settings(db=str(path), workspace=str(ws)))
    paused = session.send(None, "write todo.md: buy milk")
    paused.collect()
    done = session.send(None, "list files")
    done.collect()
    session.close()
    assert paused.status == "awaiting_approval" and done.status == "completed"
    env = without_settings()
    env.update(
        GATEHOUSE_DB=str(path), GATEHOUSE_WORKSPACE=str(ws), PYTHONPATH=str(ROOT), NO_COLOR="1"
    )
    return {
        "path": path,
        "ws": ws,
        "env": env,
        "paused": paused.thread_id,
        "done": done.thread_id,
        "tmp": tmp_path,
    }


def gatehouse(db: dict[str, Any], *args: str) -> tuple[str, list[str]]:
    """stdout, and the modules the process loaded."""
    report = db["tmp"] / "modules.json"
    out = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(report), *args],
        env=db["env"],
        cwd=db["tmp"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout, json.loads(report.read_text())


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["threads"],
        ["threads", "--json"],
        ["pending"],
        ["pending", "--json"],
        ["show", "{paused}"],
        ["show", "{paused}", "--json"],
        ["show", "{done}"],
    ],
)
def test_read_only_commands_load_no_langgraph_or_langchain(
    db: dict[str, Any], args: list[str]
) -> None:
    stdout, modules = gatehouse(db, *[a.format(**db) for a in args])
    heavy = sorted({m.split(".")[0] for m in modules if m.split(".")[0] in HEAVY})
    assert heavy == [], f"gatehouse {' '.join(args)} imported {heavy}"
    if args[0] != "--help":  # rich and the reader: no parser, no pydantic models
        loaded = sorted({m.split(".")[0] for m in modules} & {"typer", "pydantic", "click"})
        assert loaded == [], f"gatehouse {' '.join(args)} imported {loaded}"
    assert stdout.strip()
    # The check itself works: a command that runs the agent does load them.
    if args == ["--help"]:
        _, modules = gatehouse(db, "resume", db["done"], "--json")
        assert "langgraph" in {m.split(".")[0] for m in modules}


def test_read_only_commands_print_what_the_session_reads(db: dict[str, Any]) -> None:
    session = open_session(Settings(db=str(db["path"]), workspace=str(db["ws"])))
    try:
        paused, done = db["paused"], db["done"]
        threads = json.loads(gatehouse(db, "threads", "--json")[0])
        assert threads == [
            {**t.to_dict(), "pending": 1 if t.thread_id == paused else 0}
            for t in session.thread_list().threads
        ]
        pending = json.loads(gatehouse(db, "pending", "--json")[0])
        request = session.view(paused).pending
        assert request is not None
        assert [p["thread_id"] for p in pending] == [paused]
        assert {
            k: v for k, v in pending[0].items() if k not in ("thread_id", "title", "pending_since")
        } == term.pending_json(request)
        for thread in (paused, done):
            shown = json.loads(gatehouse(db, "show", thread, "--json")[0])
            assert shown["messages"] == [m.to_dict() for m in session.view(thread).transcript]
            assert shown["usage"] == session.view(thread).usage
            assert shown["thread"] == session.view(thread).info.to_dict()  # type: ignore[union-attr]
        assert json.loads(gatehouse(db, "show", paused, "--json")[0])[
            "pending"
        ] == term.pending_json(request)
    finally:
        session.close()


def test_show_falls_back_to_the_session_for_a_thread_the_reader_cannot_rebuild(
    db: dict[str, Any],
) -> None:
    """A thread continued by a stock saver (no materialised head): `show` still prints it all."""
    saver = SqliteSaver(
        sqlite3.connect(str(db["path"]), check_same_thread=False), serde=compact_serde()
    )
    session = open_session(Settings(db=str(db["path"]), workspace=str(db["ws"])))
    stock = build_graph(model=DemoModel(), tools=list(session.tools.values()), checkpointer=saver)
    stock.invoke(
        {"messages": [HumanMessage("list files")]}, {"configurable": {"thread_id": db["done"]}}
    )
    want = [m.to_dict() for m in session.view(db["done"]).transcript]
    session.close()
    stdout, modules = gatehouse(db, "show", db["done"], "--json")
    assert json.loads(stdout)["messages"] == want and len(want) > 4
    assert "langgraph" in {m.split(".")[0] for m in modules}  # it asked the Session


def test_pending_count_is_what_pending_holds(db: dict[str, Any]) -> None:
    """`threads` counts a thread's pending calls from the stored values (no pause models):
    the same number `pending` builds the pause for."""
    from gatehouse.graph import Approval, open_reader

    reader = open_reader(str(db["path"]))
    try:
        counts = {}
        for thread in (db["paused"], db["done"]):
            pause = reader.pending(thread)
            want = 0 if pause is None else len(pause.actions) if isinstance(pause, Approval) else 1
            counts[thread] = reader.pending_count(thread)
            assert counts[thread] == want
        assert counts == {db["paused"]: 1, db["done"]: 0}
    finally:
        reader.close()

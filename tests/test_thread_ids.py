"""Thread ids are validated everywhere (issue 32, item 4): a malformed id (a NUL byte,
control characters, 5,000 characters) is refused by the Session, the raw graph on
Gatehouse's saver, the terminal and the web app, and changes nothing; an unknown id
in the web app's URL gets a "thread not found" page instead of a new thread; and
`gatehouse threads` never prints raw control characters.
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
from streamlit.testing.v1 import AppTest

from gatehouse.graph import InvalidThreadId, ScriptedModel, Settings, open_session
from gatehouse.graph.protocol.operations import (
    Compact,
    Delete,
    ImportThread,
    Rename,
    SetAutoApprove,
    Undo,
)
from gatehouse.graph.protocol.threads import printable, thread_id_problem
from tests.support.app_page import app_page
from tests.support.clean_env import offline_settings, without_settings

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "ui" / "web" / "app.py")
BAD_IDS = [
    "a\x00b",
    "x" * 5_000,
    "evil\x1b[2J\x1b[31m",
    "line\nbreak",
    "",
    " padded",
    "rtl\u202eexe",
    "ü",
]


def settings(tmp: Path) -> Settings:
    (tmp / "ws").mkdir(parents=True, exist_ok=True)
    return Settings(db=str(tmp / "gh.db"), workspace=str(tmp / "ws"))


def test_the_rule_accepts_what_clients_make_and_refuses_the_rest() -> None:
    from gatehouse.graph import Session

    for good in ["t", "t-1", Session.new_thread_id(), "user@example.com:42", "a" * 128]:
        assert thread_id_problem(good) is None, good
    for bad in [*BAD_IDS, "a" * 129, None, 7]:
        assert thread_id_problem(bad) is not None, repr(bad)
    assert "5,000" in (thread_id_problem("x" * 5_000) or "")


@pytest.mark.parametrize("bad", [b for b in BAD_IDS if b])
def test_session_refuses_a_malformed_id_and_writes_nothing(tmp_path: Path, bad: str) -> None:
    session = open_session(settings(tmp_path), model=ScriptedModel(fallback="ok"))
    try:
        session.send("good", "hello").collect()
        calls = [
            lambda: session.send(bad, "hello"),
            lambda: session.resume(bad, {"decisions": [{"type": "approve"}]}),
            lambda: session.retry(bad),
            lambda: session.view(bad).messages,
            lambda: session.view(bad).transcript,
            lambda: session.view(bad).pending,
            lambda: session.view(bad).info,
            lambda: session.view(bad).exists,
            lambda: session.view(bad).export(),
            lambda: session.submit(Undo(bad)).result().removed,
            lambda: session.fork(bad, 0, "again"),
            lambda: session.submit(Rename(bad, "x")),
            lambda: session.submit(Delete(bad)),
            lambda: session.submit(Compact(bad)).result().compacted,
            lambda: session.view(bad).tool_output("c1"),
            lambda: session.view(bad).audit(),
            lambda: session.submit(SetAutoApprove(bad, True)),
        ]
        for call in calls:
            with pytest.raises(InvalidThreadId, match="thread id"):
                call()
        assert [t.thread_id for t in session.thread_list().threads] == ["good"]
        assert session.thread_list().audit() == []
        # The raw compiled graph on Gatehouse's saver refuses it too (Studio, SDK clients).
        with pytest.raises(InvalidThreadId):
            session.agent.invoke(
                {"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": bad}}
            )
        with sqlite3.connect(tmp_path / "gh.db") as conn:
            assert conn.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall() == [
                ("good",)
            ]
    finally:
        session.close()


def test_an_import_with_a_malformed_exported_id_gets_a_new_one(tmp_path: Path) -> None:
    session = open_session(settings(tmp_path), model=ScriptedModel(fallback="ok"))
    try:
        session.send("good", "hello").collect()
        data = json.loads(session.view("good").export("json"))
        data["thread_id"] = "bad\x00id"
        new = session.submit(ImportThread(data)).result().thread_id
        assert thread_id_problem(new) is None and session.view(new).transcript[0].content == "hello"
        with pytest.raises(InvalidThreadId):
            session.submit(ImportThread(data, thread_id="also\x1bbad"))
    finally:
        session.close()


# -- the terminal -------------------------------------------------------------------
def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gatehouse.ui.term.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    session = open_session(settings(tmp_path), model=ScriptedModel(fallback="ok"))
    # A title that tries to drive the terminal: clear the screen, turn text red, a NUL.
    session.send("good", "hello \x1b[2J\x1b[31mred\x00 \u202eexe.txt").collect()
    session.close()
    # A row written before ids were checked (an older version, another tool).
    with sqlite3.connect(tmp_path / "gh.db") as conn:
        conn.execute(
            "INSERT INTO gatehouse_threads (thread_id, title, status, created_at, updated_at) "
            "VALUES (?, ?, 'idle', 1, 1)",
            ("old\x00\x1b[5mid", "legacy\x07 title"),
        )
    env = without_settings()
    env.update(
        GATEHOUSE_DB=str(tmp_path / "gh.db"),
        GATEHOUSE_WORKSPACE=str(tmp_path / "ws"),
        PYTHONPATH=str(ROOT),
        NO_COLOR="1",
        COLUMNS="200",
    )
    return env


def test_cli_refuses_malformed_ids_clearly_and_as_json(cli_env: dict[str, str]) -> None:
    for command in (["show"], ["send"], ["export"], ["undo"], ["approve"], ["delete"]):
        bad = "a\x01b" if command[0] != "delete" else "x" * 5_000
        args = (
            ["send", "hello", "--json", "--thread", bad]
            if command[0] == "send"
            else [command[0], bad]
        )
        done = cli(cli_env, *args)
        assert done.returncode == 2, (command, done.stderr)
        assert "not a thread id" in done.stderr and "\x01" not in done.stderr
        if "--json" in args:
            assert json.loads(done.stdout)["exit_code"] == 2
    # Nothing was created.
    with sqlite3.connect(cli_env["GATEHOUSE_DB"]) as conn:
        assert conn.execute("SELECT DISTINCT thread_id FROM checkpoints").fetchall() == [("good",)]


def test_threads_never_prints_raw_control_characters(cli_env: dict[str, str]) -> None:
    listed = cli(cli_env, "threads")
    assert listed.returncode == 0, listed.stderr
    assert not any(c in listed.stdout for c in "\x00\x1b\x07\u202e")
    assert (
        "good" in listed.stdout
        and "\\x1b[2J" in listed.stdout
        and "old\\x00\\x1b[5mid" in listed.stdout
    )
    # JSON keeps the data exact, escaped by JSON itself.
    rows = json.loads(cli(cli_env, "threads", "--json").stdout)
    assert {r["thread_id"] for r in rows} == {"good", "old\x00\x1b[5mid"}
    assert printable("a\x00\u202e") == "a\\x00\\u202e"


# -- the web app --------------------------------------------------------------------
@pytest.fixture
def web_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    offline_settings(tmp_path, monkeypatch, "ws")
    return tmp_path


def page_for(thread: str) -> AppTest:
    at = app_page(30)
    at.query_params["thread"] = thread
    return at.run()


def shown(at: AppTest) -> str:
    parts: list[Any] = (
        [m.value for m in at.markdown] + [e.value for e in at.error] + [c.value for c in at.code]
    )
    return "\n".join(str(p) for p in [*parts, *(h.value for h in at.header)])


@pytest.mark.parametrize("thread", ["no-such-thread", "a\x00b", "x" * 5_000, "evil\x1b[31m"])
def test_web_app_says_thread_not_found_and_creates_nothing(web_env: Path, thread: str) -> None:
    at = page_for(thread)
    assert not at.exception
    text = shown(at)
    assert "Thread not found" in text and "Nothing was created" in text
    assert "\x00" not in text and "\x1b" not in text
    assert not [c for c in at.get("chat_input")]  # nothing to type into: no thread gets created
    at.button(key="not-found-new").click().run()
    assert "thread" not in at.query_params and "Thread not found" not in shown(at)
    assert (
        not (web_env / "gh.db").exists()
        or not sqlite3.connect(web_env / "gh.db")
        .execute("SELECT count(*) FROM checkpoints")
        .fetchone()[0]
    )


def test_web_app_opens_an_existing_thread_by_its_link(web_env: Path) -> None:
    session = open_session(Settings(db=str(web_env / "gh.db"), workspace=str(web_env / "ws")))
    run = session.send(None, "list files")
    run.collect()
    session.close()
    at = page_for(run.thread_id)
    assert not at.exception and "Thread not found" not in shown(at)
    assert "list files" in shown(at)

"""The terminal a person trusts (issue 32, item 8), in-process through typer's
CliRunner on a real SQLite file: `gatehouse --port N` starts the web UI on that port
and the help says so; "already decided" says who and from which front end; resuming
a long thread prints only its last turns (`--all` for everything); turns are numbered
1…n alike in `show`, `fork`, `branches`, `switch`, `undo` and the web app's Find;
`undo` with nothing to undo fails without mentioning `force=True`; `export --json`
errors are JSON; `reject` needs no reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gatehouse.graph import DecisionError, Session, Settings, open_session
from gatehouse.ui.term import cli, cli_interactive
from tests.support.app_page import app_page
from tests.support.clean_env import offline_settings

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    workspace = offline_settings(tmp_path, monkeypatch, "ws")
    (workspace / "notes.md").write_text("hello notes\n")
    monkeypatch.setenv("GATEHOUSE_ACTOR", "terry")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    return tmp_path


@pytest.fixture
def session(env: Path) -> Iterator[Session]:
    s = open_session(
        Settings(db=str(env / "gh.db"), workspace=str(env / "ws")), source="web", actor="alice"
    )
    yield s
    s.close()


def gh(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli.app, list(args))
    assert result.exit_code == code, (args, result.output, result.exception)
    return result.output


def test_top_level_port_starts_the_web_ui_there_and_help_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    launched: list[list[str]] = []
    monkeypatch.setattr(
        cli_interactive, "run_child", lambda cmd, cwd=None: launched.append(cmd) or 0
    )
    gh("--port", "8601")
    [cmd] = launched
    assert cmd[cmd.index("--server.port") + 1] == "8601" and cmd[1:4] == ["-m", "streamlit", "run"]
    helped = gh("--help")
    assert "--port" in helped and "gatehouse --port 8601" in helped
    # With a command it means nothing: refused, nothing started.
    assert "--port is for the web UI" in gh("--port", "8601", "threads", code=2)
    assert len(launched) == 1


def test_already_decided_says_who_and_from_which_front_end(env: Path, session: Session) -> None:
    run = session.send(None, "write todo.md: buy milk")
    run.collect()
    pause = session.view(run.thread_id).pending
    session.resume(
        run.thread_id, {"decisions": [{"type": "approve"}]}
    ).collect()  # alice, in the web app
    said = gh("approve", run.thread_id, "--json", code=2)
    error = json.loads(said.splitlines()[-1])["error"]
    assert "already decided: approved write_file by alice via web" in error
    # A stale answer through the API says the same.
    with pytest.raises(
        DecisionError, match=r"already decided \(approved write_file by alice via web at "
    ):
        session.resume(
            run.thread_id, {"decisions": [{"type": "approve"}]}, interrupt_id=pause.interrupt_id
        )


def test_resuming_a_long_thread_prints_its_last_turns(env: Path, session: Session) -> None:
    from rich.console import Console

    from gatehouse.ui.term.chat import RESUME_TURNS, Chat

    tid = session.new_thread_id()
    for i in range(12):
        session.send(tid, f"list files {i:02d}").collect()
    chat = Chat(
        session,
        Console(record=True, width=200),
        Console(record=True, width=200),
        session.check_args,
        cli.drive,
    )
    chat.start(tid)
    shown = chat.out.export_text()
    assert "7 earlier turns not shown" in shown and f"--thread {tid} --all" in shown
    assert "list files 06" not in shown and f"#{12 - RESUME_TURNS + 1} you ▸ list files 07" in shown
    assert "#12 you ▸ list files 11" in shown
    whole = Chat(
        session,
        Console(record=True, width=200),
        Console(record=True, width=200),
        session.check_args,
        cli.drive,
    )
    whole.whole_history = True
    whole.start(tid)
    everything = whole.out.export_text()
    assert "not shown" not in everything and "#1 you ▸ list files 00" in everything


def test_turns_are_numbered_alike_in_show_fork_branches_switch_undo_and_the_web(
    env: Path, session: Session
) -> None:
    tid = session.new_thread_id()
    for text in ("list files", "read notes.md", "list files"):
        session.send(tid, text).collect()
    shown = gh("show", tid)
    assert [int(n) for n in re.findall(r"#(\d+) you ▸", shown)] == [1, 2, 3]
    forked = json.loads(gh("fork", tid, "read notes.md again", "--at", "2", "--json"))
    assert forked["status"] == "completed"
    assert [m.content for m in session.view(tid).transcript if m.role == "user"] == [
        "list files",
        "read notes.md again",
    ]
    assert "#2  version 2/2" in gh("branches", tid)
    assert json.loads(gh("switch", tid, "--at", "2", "--to", "1", "--json"))["at"] == 2
    assert [m.content for m in session.view(tid).transcript if m.role == "user"] == [
        "list files",
        "read notes.md",
        "list files",
    ]
    assert "undone: turn #3" in gh("undo", tid)
    # The web app's Find names the same turn numbers.
    at = app_page(30)
    at.query_params["thread"] = tid
    at.run()
    from gatehouse.ui.web.history import turns_of

    assert [t.number for t in turns_of(session.view(tid).transcript)] == [1, 2]


def test_undo_with_nothing_to_undo_fails_and_export_json_errors_are_json(
    env: Path, session: Session
) -> None:
    tid = session.new_thread_id()
    session.send(tid, "list files").collect()
    gh("undo", tid)
    said = gh("undo", tid, code=2)
    assert "nothing to undo" in said and "force" not in said
    error = json.loads(gh("export", "no-such-thread", "--json", code=1).splitlines()[-1])
    assert error["exit_code"] == 1 and "no thread no-such-thread" in error["error"]


def test_reject_needs_no_reason(env: Path, session: Session) -> None:
    run = session.send(None, "write todo.md: buy milk")
    run.collect()
    pending = session.view(run.thread_id).pending
    assert pending is not None
    done = json.loads(
        gh("reject", run.thread_id, "--interrupt-id", pending.interrupt_id, "--json", code=0)
    )
    assert done["status"] == "completed" and done["tools"][0]["status"] == "rejected"
    assert not (env / "ws" / "todo.md").exists()
    [record] = [r for r in session.view(run.thread_id).audit() if r.decision == "reject"]
    assert record.message is None and record.actor == "terry"

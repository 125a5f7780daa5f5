"""Standing permissions made visible (issue 32, item 5): a call that runs without a
click because an "always allow" grant covers it says so on the stream and in the
history, and gets a decision-log entry naming the grant; grants are listed and
revoked through the Session, the terminal (`gatehouse grants`, `gatehouse revoke`)
and the web app's sidebar.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from gatehouse.graph import Session, Settings, open_session
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.operations import Revoke, RunOptions, SetAutoApprove
from tests.support.app_page import app_page
from tests.support.clean_env import offline_settings, without_settings

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "ui" / "web" / "app.py")
ALWAYS = {"decisions": [{"type": "approve", "always_allow": True}]}


def settings(tmp: Path) -> Settings:
    (tmp / "ws").mkdir(parents=True, exist_ok=True)
    return Settings(db=str(tmp / "gh.db"), workspace=str(tmp / "ws"))


def granted_thread(session: Session) -> str:
    """A thread where the person approved a write with "always allow write_file"."""
    run = session.send(None, "write a.md: one")
    run.collect()
    assert run.status == "awaiting_approval"
    assert session.resume(run.thread_id, ALWAYS).collect()[-1].status == "completed"
    return run.thread_id


def test_a_call_run_under_a_grant_is_marked_logged_listed_and_revocable(tmp_path: Path) -> None:
    session = open_session(settings(tmp_path), source="api", actor="alice")
    try:
        tid = granted_thread(session)
        [grant] = session.view(tid).grants
        assert (grant.tool, grant.pattern, grant.label, grant.actor, grant.source) == (
            "write_file",
            None,
            "write_file",
            "alice",
            "api",
        )

        events = session.send(tid, "write b.md: two").collect()
        assert events[-1].status == "completed"  # nobody was asked
        [started] = [e for e in events if isinstance(e, ev.ToolStarted)]
        assert started.grant == "write_file" and not started.auto_approved
        result = session.view(tid).transcript[-2]
        assert (
            result.role == "tool"
            and result.decision == "always_allowed"
            and result.grant == "write_file"
        )
        assert result.without_a_click == "always allowed (write_file)"
        assert "## tool · write_file · always allowed (write_file)" in session.view(tid).export()
        # The call the person approved is not marked as run without a click.
        assert [m.without_a_click for m in session.view(tid).transcript if m.role == "tool"] == [
            None,
            "always allowed (write_file)",
        ]
        logged = [r for r in session.view(tid).audit() if r.tool_call_id == started.call_id]
        assert [(r.question, r.decision, r.actor) for r in logged] == [
            ("standing", "always_allowed", "alice")
        ]
        assert "write_file" in (logged[0].message or "") and logged[0].args == started.args

        # Withdrawn: the next write asks again; the log says who withdrew it.
        with pytest.raises(ValueError, match="no grant 'shell'.*in force: write_file"):
            session.submit(Revoke(tid, "shell"))
        assert (
            session.submit(Revoke(tid, "write_file"), RunOptions(actor="bob")).result().grant.label
            == "write_file"
        )
        assert session.view(tid).grants == []
        assert session.send(tid, "write c.md: three").collect()[-1].status == "awaiting_approval"
        assert [(r.decision, r.actor) for r in session.view(tid).audit(1)] == [("revoke", "bob")]
    finally:
        session.close()


def test_the_auto_approve_switch_is_the_grant_star(tmp_path: Path) -> None:
    session = open_session(settings(tmp_path))
    try:
        tid = session.new_thread_id()
        session.send(tid, "list files").collect()
        session.submit(SetAutoApprove(tid, True), RunOptions(actor="carol"))
        assert [(g.label, g.actor) for g in session.view(tid).grants] == [("*", "carol")]
        events = session.send(tid, "write x.md: y").collect()
        assert events[-1].status == "completed"
        assert [e.auto_approved for e in events if isinstance(e, ev.ToolStarted)] == [True]
        assert session.view(tid).transcript[-2].without_a_click == "auto-approved"
        session.submit(Revoke(tid, "*"))
        assert not session.view(tid).auto_approve and session.view(tid).grants == []
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


def test_terminal_lists_and_revokes_grants_and_marks_the_row(tmp_path: Path) -> None:
    session = open_session(settings(tmp_path), source="api", actor="alice")
    tid = granted_thread(session)
    session.send(tid, "write b.md: two").collect()
    session.close()
    env = without_settings()
    env.update(
        GATEHOUSE_DB=str(tmp_path / "gh.db"),
        GATEHOUSE_WORKSPACE=str(tmp_path / "ws"),
        PYTHONPATH=str(ROOT),
        NO_COLOR="1",
        COLUMNS="200",
        GATEHOUSE_ACTOR="dave",
    )
    listed = cli(env, "grants", tid)
    assert listed.returncode == 0, listed.stderr
    assert (
        "write_file" in listed.stdout
        and "alice" in listed.stdout
        and "gatehouse revoke" in listed.stdout
    )
    data = json.loads(cli(env, "grants", tid, "--json").stdout)
    assert [(g["grant"], g["actor"]) for g in data] == [("write_file", "alice")]
    shown = cli(env, "show", tid).stdout
    assert "always allowed (write_file)" in shown
    refused = cli(env, "revoke", tid, "shell", "--json")
    assert refused.returncode == 2 and "no grant" in json.loads(refused.stdout)["error"]
    done = cli(env, "revoke", tid, "write_file", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["revoked"] == "write_file"
    assert json.loads(cli(env, "grants", tid, "--json").stdout) == []
    session = open_session(settings(tmp_path))
    try:
        assert session.view(tid).audit(1)[0].actor == "dave"
    finally:
        session.close()


# -- the web app --------------------------------------------------------------------
@pytest.fixture
def web_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    offline_settings(tmp_path, monkeypatch, "ws")
    return tmp_path


def texts(at: AppTest) -> str:
    parts: list[Any] = [m.value for m in at.markdown] + [c.value for c in at.caption]
    return "\n".join(str(p) for p in parts)


def test_web_sidebar_lists_grants_and_revokes_one_and_rows_say_why(web_env: Path) -> None:
    session = open_session(
        Settings(db=str(web_env / "gh.db"), workspace=str(web_env / "ws")), actor="alice"
    )
    tid = granted_thread(session)
    session.send(tid, "write b.md: two").collect()
    session.close()
    at = app_page(30)
    at.query_params["thread"] = tid
    at.run()
    assert not at.exception
    shown = texts(at)
    assert "always allowed (write_file)" in shown  # the tool row says why nobody was asked
    assert "Always allowed in this thread" in shown and "by alice" in shown
    at.button(key=f"revoke-{tid}-write_file").click().run()
    assert not at.exception
    assert "Always allowed in this thread" not in texts(at)
    check = open_session(Settings(db=str(web_env / "gh.db"), workspace=str(web_env / "ws")))
    try:
        assert check.view(tid).grants == [] and check.view(tid).audit(1)[0].source == "web"
    finally:
        check.close()

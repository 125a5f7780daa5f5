"""kill -9 at the moments that matter, with real processes, then resume the thread.

Each victim process is a `tests/support/crash_worker.py` run on a shared SQLite file;
the restart happens in this (fresh) process. After every restart: the thread resumes,
every tool call has exactly one result, and the counter file written by the tool
shows how often it really ran.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from gatehouse.graph import AlreadyDecided, DecisionError, NothingPending, RunInProgress, Session
from gatehouse.graph.store.journal import Journal
from gatehouse.graph.store.leases import Leases
from gatehouse.graph.store.sqlite import sqlite_database
from tests.support.counting_tools import runs
from tests.support.crash_worker import open_session

ROOT = Path(__file__).resolve().parents[1]
APPROVE = {"decisions": [{"type": "approve"}]}


def spawn(db: Path, counter: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    full_env.pop("GATEHOUSE_CRASH_AT", None)
    full_env.update({k: v for k, v in env.items() if k == "GATEHOUSE_CRASH_AT"})
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.crash_worker", str(db), str(counter), *args],
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(marker: Path, text: str, proc: subprocess.Popen[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker.exists() and marker.read_text().startswith(text):
            return
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(
                f"worker exited early ({proc.returncode}) before {text!r}:\n{out[-2000:]}\n{err[-4000:]}"
            )
        time.sleep(0.02)
    proc.kill()
    pytest.fail(f"worker never reached {text!r}")


def kill9(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL


def assert_paired(session: Session, thread_id: str) -> list[ToolMessage]:
    """Every tool call has exactly one ToolMessage, right after its AIMessage."""
    messages = session.view(thread_id).messages
    results: list[ToolMessage] = []
    for i, m in enumerate(messages):
        if isinstance(m, AIMessage) and m.tool_calls:
            ids = [c["id"] for c in m.tool_calls]
            following = []
            for nxt in messages[i + 1 :]:
                if not isinstance(nxt, ToolMessage):
                    break
                following.append(nxt)
            assert sorted(t.tool_call_id for t in following) == sorted(ids), messages
            results += following
    all_ids = [t.tool_call_id for t in messages if isinstance(t, ToolMessage)]
    assert len(all_ids) == len(set(all_ids)), f"a call answered twice: {all_ids}"
    return results


def assert_intact(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    return tmp_path / "gatehouse.sqlite", tmp_path / "counter.txt", tmp_path / "marker.txt"


def test_kill_while_model_streams(files: tuple[Path, Path, Path]) -> None:
    db, counter, marker = files
    victim = spawn(
        db,
        counter,
        "send",
        "t-a",
        "hello",
        GATEHOUSE_TEST_MODEL_SLEEP="60",
        GATEHOUSE_TEST_MARKER=str(marker),
    )
    wait_for(marker, "streaming", victim)
    kill9(victim)
    assert_intact(db)

    session = open_session(str(db), str(counter))
    try:
        assert session.retry("t-a").collect()[-1].status == "awaiting_approval"
        assert session.resume("t-a", APPROVE).collect()[-1].status == "completed"
        [result] = assert_paired(session, "t-a")
        assert result.content == "bump ran for hello"
        assert runs(counter) == {"hello": 1}
    finally:
        session.close()


def test_kill_while_waiting_for_approval(files: tuple[Path, Path, Path]) -> None:
    db, counter, marker = files
    victim = spawn(db, counter, "send", "t-b", "hello", "--hold", GATEHOUSE_TEST_MARKER=str(marker))
    wait_for(marker, "pending", victim)
    kill9(victim)
    assert_intact(db)

    session = open_session(str(db), str(counter))
    try:
        pending = session.view("t-b").pending
        assert pending is not None and pending.kind == "approval"
        assert runs(counter) == {}
        assert session.resume("t-b", APPROVE).collect()[-1].status == "completed"
        assert len(assert_paired(session, "t-b")) == 1
        assert runs(counter) == {"hello": 1}
    finally:
        session.close()


def test_kill_during_approved_tool_asks_outcome_unknown(files: tuple[Path, Path, Path]) -> None:
    db, counter, marker = files
    session = open_session(str(db), str(counter))
    assert session.send("t-c", "hello").collect()[-1].status == "awaiting_approval"
    session.close()

    victim = spawn(
        db,
        counter,
        "resume",
        "t-c",
        json.dumps(APPROVE),
        GATEHOUSE_TEST_TOOL_SLEEP="60",
        GATEHOUSE_TEST_MARKER=str(marker),
    )
    wait_for(marker, "in_tool", victim)
    kill9(victim)
    assert_intact(db)
    assert runs(counter) == {"hello": 1}

    session = open_session(str(db), str(counter))
    try:
        # The run does not silently run the call again: it asks.
        assert session.retry("t-c").collect()[-1].status == "awaiting_approval"
        pending = session.view("t-c").pending
        assert pending is not None and pending.kind == "outcome_unknown"
        assert pending.call.tool_call_id == "call0"
        assert set(pending.allowed) == {"run_again", "mark_failed", "respond"}
        assert runs(counter) == {"hello": 1}
        events = session.resume(
            "t-c", {"type": "respond", "message": "It did run: counter is 1."}
        ).collect()
        assert events[-1].status == "completed"
        [result] = assert_paired(session, "t-c")
        assert result.content == "It did run: counter is 1."
        assert runs(counter) == {"hello": 1}
    finally:
        session.close()


def test_kill_during_approved_tool_is_in_the_inbox_at_once(
    files: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Nobody retries the thread: the first look at an inbox (the terminal's `pending`,
    the Session's list and cards) already shows the "outcome unknown" question, and
    the call did not run again."""
    from gatehouse.ui.term import readonly

    db, counter, marker = files
    session = open_session(str(db), str(counter))
    assert session.send("t-u", "hello").collect()[-1].status == "awaiting_approval"
    session.close()
    victim = spawn(
        db,
        counter,
        "resume",
        "t-u",
        json.dumps(APPROVE),
        GATEHOUSE_TEST_TOOL_SLEEP="60",
        GATEHOUSE_TEST_MARKER=str(marker),
    )
    wait_for(marker, "in_tool", victim)
    kill9(victim)

    # The terminal's reader alone cannot ask; it has the Session (the app's tools) do it.
    monkeypatch.setattr(
        readonly.graph, "open_session", lambda *a, **k: open_session(str(db), str(counter))
    )
    readonly.pending(str(db), as_json=True)
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["thread_id"] == "t-u" and listed["kind"] == "outcome_unknown"
    session = open_session(str(db), str(counter))
    try:
        [(info, pause)] = session.thread_list().pending_cards()
        assert info.thread_id == "t-u" and info.status == "awaiting_approval"
        assert pause.kind == "outcome_unknown" and pause.interrupt_id == listed["interrupt_id"]
        assert runs(counter) == {"hello": 1}
        answer = {"type": "mark_failed", "message": "checked: it did not finish"}
        assert session.resume("t-u", answer).collect()[-1].status == "completed"
        assert runs(counter) == {"hello": 1} and session.thread_list().awaiting_approval == []
    finally:
        session.close()


def test_kill_after_tool_before_checkpoint_uses_journal(files: tuple[Path, Path, Path]) -> None:
    db, counter, _ = files
    session = open_session(str(db), str(counter))
    assert session.send("t-d", "hello").collect()[-1].status == "awaiting_approval"
    session.close()

    victim = spawn(
        db, counter, "resume", "t-d", json.dumps(APPROVE), GATEHOUSE_CRASH_AT="after_tool"
    )
    victim.wait(30)
    assert victim.returncode == -signal.SIGKILL, victim.communicate()
    assert_intact(db)
    assert runs(counter) == {"hello": 1}

    session = open_session(str(db), str(counter))
    try:
        # The checkpoint never saw the result; the journal did.
        assert not any(isinstance(m, ToolMessage) for m in session.view("t-d").messages)
        assert session.retry("t-d").collect()[-1].status == "completed"
        [result] = assert_paired(session, "t-d")
        assert result.content == "bump ran for hello"
        assert runs(counter) == {"hello": 1}
    finally:
        session.close()


def test_two_processes_resume_the_same_approval_one_runs(files: tuple[Path, Path, Path]) -> None:
    db, counter, _ = files
    session = open_session(str(db), str(counter))
    assert session.send("t-e", "hello").collect()[-1].status == "awaiting_approval"
    session.close()

    procs = [
        spawn(db, counter, "resume", "t-e", json.dumps(APPROVE), GATEHOUSE_TEST_TOOL_SLEEP="2")
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 3], outs
    loser = next(out for p, (out, _) in zip(procs, outs, strict=True) if p.returncode == 3)
    refusal = json.loads(loser.strip().splitlines()[-1])
    assert refusal["error_type"] in {"AlreadyDecided", "NothingPending"}
    assert "already" in refusal["refused"]
    assert runs(counter) == {"hello": 1}


def test_double_click_in_one_process(files: tuple[Path, Path, Path]) -> None:
    db, counter, _ = files
    session = open_session(str(db), str(counter))
    try:
        assert session.send("t-f", "hello").collect()[-1].status == "awaiting_approval"
        barrier = threading.Barrier(2)
        outcomes: list[Any] = []

        def click() -> None:
            barrier.wait()
            try:
                outcomes.append(session.resume("t-f", APPROVE))
            except (AlreadyDecided, NothingPending) as exc:
                outcomes.append(exc)

        clicks = [threading.Thread(target=click) for _ in range(2)]
        for c in clicks:
            c.start()
        for c in clicks:
            c.join()
        runs_started = [o for o in outcomes if not isinstance(o, Exception)]
        refused = [o for o in outcomes if isinstance(o, Exception)]
        assert len(runs_started) == 1 and len(refused) == 1
        assert "already decided" in str(refused[0])
        assert runs_started[0].collect()[-1].status == "completed"
        # Afterwards: the approval is gone, a late click is told so.
        with pytest.raises(NothingPending, match="already decided"):
            session.resume("t-f", APPROVE)
        assert runs(counter) == {"hello": 1}
    finally:
        session.close()


def exercise_lease_expiry(
    leases: Leases, other: Leases, put_row: Callable[[str, str, float], None]
) -> None:
    """Two lease tables on one database (two processes); `put_row(thread, owner,
    expires_at)` writes a lease row directly, as another host or a dead process left it."""
    held = leases.acquire("t")
    with pytest.raises(RunInProgress, match="already running"):
        other.acquire("t")
    time.sleep(0.7)  # the holder stopped renewing (as if hung on another host)
    taken = other.acquire("t")
    assert leases.renew(held) is False  # the old holder learns it lost the lease
    taken.release()
    # A live holder that renews keeps its lease past the TTL.
    kept = leases.acquire("t")
    kept.start_renewing()
    time.sleep(0.7)
    with pytest.raises(RunInProgress):
        other.acquire("t")
    kept.release()
    other.acquire("t").release()
    # A holder on another host: only expiry frees it.
    put_row("t2", "elsewhere|1|x", time.time() + 60)
    with pytest.raises(RunInProgress, match="process 1 on elsewhere"):
        other.acquire("t2")
    # A dead process on this host (a kill -9 left its lease behind) frees it at once.
    put_row("t2", f"{leases._host}|999999999|x", time.time() + 60)
    other.acquire("t2").release()


def test_lease_expiry_and_dead_holders(tmp_path: Path) -> None:
    db = tmp_path / "leases.sqlite"
    leases = Leases(sqlite_database(db, Leases), ttl=0.3)
    other = Leases(sqlite_database(db, Leases), ttl=0.3)

    def put_row(thread_id: str, owner: str, expires_at: float) -> None:
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT OR REPLACE INTO gatehouse_leases VALUES (?, ?, ?)",
                (thread_id, owner, expires_at),
            )

    try:
        exercise_lease_expiry(leases, other, put_row)
    finally:
        leases.close()
        other.close()


def test_outcome_unknown_answers_and_idempotent_tools(files: tuple[Path, Path, Path]) -> None:
    """Without a kill: a journal row left 'started' is what a crash mid-tool leaves."""
    db, counter, _ = files
    session = open_session(str(db), str(counter))
    try:
        journal = session.storage.journal
        assert isinstance(journal, Journal)
        for tid in ("t-again", "t-failed"):
            assert session.send(tid, "hello").collect()[-1].status == "awaiting_approval"
            journal.start(
                tid,
                {"name": "bump", "args": {"label": "hello"}, "id": "call0", "type": "tool_call"},
            )
            assert session.resume(tid, APPROVE).collect()[-1].status == "awaiting_approval"
            assert session.view(tid).pending.kind == "outcome_unknown"  # type: ignore[union-attr]
        with pytest.raises(DecisionError, match="respond"):
            session.resume("t-failed", {"type": "respond", "message": " "})
        with pytest.raises(DecisionError):
            session.resume("t-failed", {"decisions": [{"type": "approve"}]})
        assert (
            session.resume("t-failed", {"type": "mark_failed", "message": "disk was unplugged"})
            .collect()[-1]
            .status
            == "completed"
        )
        [failed] = assert_paired(session, "t-failed")
        assert failed.status == "error" and "disk was unplugged" in str(failed.content)
        assert runs(counter) == {}
        assert session.resume("t-again", {"type": "run_again"}).collect()[-1].status == "completed"
        assert runs(counter) == {"hello": 1}
        assert journal.get("t-again", "call0").finished  # type: ignore[union-attr]

        # A tool declared idempotent is journaled all the same (at-most-once is about the
        # person's intent): a run cut short is asked about, never repeated silently.
        assert session.send("t-idem", "idem: x").collect()[-1].status == "awaiting_approval"
        journal.start(
            "t-idem",
            {
                "name": "touch_idem",
                "args": {"label": "idem: x"},
                "id": "call0",
                "type": "tool_call",
            },
        )
        assert session.resume("t-idem", APPROVE).collect()[-1].status == "awaiting_approval"
        assert session.view("t-idem").pending.kind == "outcome_unknown"  # type: ignore[union-attr]
        assert "idem: x" not in runs(counter)
        assert session.resume("t-idem", {"type": "run_again"}).collect()[-1].status == "completed"
        assert runs(counter)["idem: x"] == 1
    finally:
        session.close()

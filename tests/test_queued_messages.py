"""Messages sent during a run (issue 55, item 5): the Runner queues them in the thread's
database and sends them, oldest first, when a run on the thread completes; Stop, a
pause or a failure leaves them queued, in view, to send now or discard; a restart
(a new Session and Runner on the same database) finds them; a locked database says
so within seconds and queues nothing. The web app's use of it is tested in
tests/test_ui_browser_typed.py.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gatehouse.graph import Runner, Session, StorageError, open_session
from gatehouse.graph.protocol.operations import Cancel, Decide, SendMessage
from gatehouse.graph.service.config import Settings

WAIT_S = 60


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(db=str(tmp_path / "g.db"), workspace=str(tmp_path / "ws"))


@pytest.fixture
def session(settings: Settings) -> Iterator[Session]:
    opened = open_session(settings)
    try:
        yield opened
    finally:
        opened.close()


def hold(runner: Runner, settings: Settings, thread_id: str) -> Path:
    """An approved command running on `thread_id` until the returned file exists."""
    release = Path(settings.workspace) / f"release-{thread_id}"
    command = f"until [ -e {release.name} ]; do sleep 0.05; done"
    runner.submit(SendMessage(thread_id, f"run: {command}")).join(WAIT_S)
    runner.submit(Decide(thread_id, {"decisions": [{"type": "approve"}]}))
    assert runner.active(thread_id) is not None
    return release


def humans(session: Session, thread_id: str) -> list[str]:
    return [str(m.content) for m in session.view(thread_id).messages if m.type == "human"]


def settle(runner: Runner, thread_id: str) -> None:
    """Until no run is active on the thread and the Runner has looked at its queue."""
    deadline = time.monotonic() + WAIT_S
    while (run := runner.active(thread_id)) is not None:
        assert time.monotonic() < deadline
        run.join(WAIT_S)
        runner.next_run(run)


def test_messages_sent_during_a_run_go_out_in_order_when_it_completes(
    session: Session, settings: Settings
) -> None:
    runner = Runner(session)
    release = hold(runner, settings, "t")
    assert runner.send("t", "list files") is None
    assert runner.send("t", "read notes.md") is None
    assert [m.text for m in runner.queued("t")] == ["list files", "read notes.md"]
    assert len(humans(session, "t")) == 1  # nothing sent yet
    release.touch()
    settle(runner, "t")
    assert humans(session, "t")[1:] == ["list files", "read notes.md"]
    assert runner.queued("t") == []


def test_after_stop_the_queue_waits_for_the_person(session: Session, settings: Settings) -> None:
    runner = Runner(session)
    hold(runner, settings, "t")
    runner.send("t", "list files")
    runner.send("t", "second")
    run = runner.active("t")
    assert run is not None and runner.submit(Cancel("t")).result().changed
    run.join(WAIT_S)
    assert runner.next_run(run) is None  # Stop: nothing sent by itself
    assert [m.text for m in runner.queued("t")] == ["list files", "second"]
    # A restart: a new Session and Runner on the same database find the queue.
    again = open_session(settings)
    try:
        restarted = Runner(again)
        first, second = restarted.queued("t")
        assert restarted.discard("t", second.id) and not restarted.discard("t", second.id)
        sent = restarted.send_queued("t", first.id)
        assert sent is not None and sent.join(WAIT_S)
        assert humans(again, "t")[1:] == ["list files"] and restarted.queued("t") == []
        assert restarted.send_queued("t", first.id) is None  # gone: sent once
    finally:
        again.close()


def test_a_new_message_after_kept_ones_goes_after_them(
    session: Session, settings: Settings
) -> None:
    runner = Runner(session)
    hold(runner, settings, "t")
    runner.send("t", "list files")
    run = runner.active("t")
    assert run is not None
    runner.submit(Cancel("t"))
    run.join(WAIT_S)
    runner.next_run(run)
    # No run now, one message kept: the new one is queued after it and the queue sent.
    started = runner.send("t", "read notes.md")
    assert started is not None and started.user_text == "list files"
    settle(runner, "t")
    assert humans(session, "t")[1:] == ["list files", "read notes.md"]


def test_a_pause_keeps_the_queue_until_the_resumed_run_completes(
    session: Session, settings: Settings
) -> None:
    runner = Runner(session)
    release = hold(runner, settings, "t")
    runner.send("t", "write todo.md: buy milk")  # asks for approval when it runs
    runner.send("t", "list files")
    release.touch()
    settle(runner, "t")
    # The first queued message ran and paused: the second waits for the decision.
    assert session.view("t").pending is not None
    assert [m.text for m in runner.queued("t")] == ["list files"]
    runner.submit(Decide("t", {"decisions": [{"type": "approve"}]}))
    settle(runner, "t")
    assert humans(session, "t")[1:] == ["write todo.md: buy milk", "list files"]


def test_a_locked_database_says_so_within_seconds_and_queues_nothing(
    session: Session, settings: Settings
) -> None:
    runner = Runner(session)
    runner.submit(SendMessage("t", "list files")).join(WAIT_S)
    locked = threading.Event()
    release = threading.Event()

    def lock() -> None:
        conn = sqlite3.connect(settings.db, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        locked.set()
        release.wait(WAIT_S)
        conn.execute("ROLLBACK")
        conn.close()

    locker = threading.Thread(target=lock)
    locker.start()
    try:
        assert locked.wait(WAIT_S)
        asked = time.monotonic()
        with pytest.raises((StorageError, sqlite3.OperationalError), match="locked"):
            runner.send("t", "read notes.md")
        assert time.monotonic() - asked < 5
    finally:
        release.set()
        locker.join()
    assert runner.queued("t") == [] and humans(session, "t") == ["list files"]
    # Once the lock is gone the same message goes through.
    sent = runner.send("t", "read notes.md")
    assert sent is not None and sent.join(WAIT_S)
    assert humans(session, "t") == ["list files", "read notes.md"]

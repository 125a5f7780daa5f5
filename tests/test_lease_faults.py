"""After a fault nothing waits on a ghost (issue 58): a lease whose release the
database refused, a resume that failed, a decision sent while the run that asked
still held the thread. On SQLite and on a real Postgres (restarted for real where
the fault is a restart). The crash in an approved call that reaches the inbox at
once is in tests/test_crash_recovery.py (run on both databases).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gatehouse.graph.service.leasing as leasing
from gatehouse.graph import AlreadyDecided, RunInProgress, Session
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.store import open_storage
from gatehouse.graph.store.leases import RELEASE, Leases
from gatehouse.graph.store.sqlite import sqlite_database
from gatehouse.ui.term import readonly
from tests.support.counting_tools import runs
from tests.support.crash_worker import open_session
from tests.support.postgres import running_server

APPROVE = {"decisions": [{"type": "approve"}]}


def free_within(leases: Leases, thread_id: str, seconds: float) -> float:
    """How long until `leases` can take the thread (fails after `seconds`)."""
    start = time.monotonic()
    while True:
        try:
            leases.acquire(thread_id).release()
            return time.monotonic() - start
        except (RunInProgress, *leases.transient_errors):
            # (a pooled connection that met the restart fails once: retriable)
            if time.monotonic() - start > seconds:
                raise
            time.sleep(0.05)


def test_a_lost_release_frees_the_thread_at_the_next_tick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run ended, its process lives on, the database refused the release once:
    the thread is free a tick later (ttl/3), not when the lease expires."""
    db = tmp_path / "leases.sqlite"
    holder = Leases(sqlite_database(db, Leases), ttl=6.0)
    other = Leases(sqlite_database(db, Leases), ttl=6.0)
    real = holder._db.run
    refused: list[str] = []

    def refuse_first_release(sql: str, params: Any = ()) -> int:
        if sql == RELEASE and not refused:
            refused.append(sql)
            raise sqlite3.OperationalError("disk I/O error")
        return real(sql, params)

    monkeypatch.setattr(holder._db, "run", refuse_first_release)
    try:
        holder.acquire("t").release()
        assert refused  # the release was lost
        with pytest.raises(RunInProgress, match="already running"):
            other.acquire("t")  # its holder is alive and the row says it still runs
        assert free_within(other, "t", 4.0) < 4.0  # tick at 2 s; expiry would be 6 s
    finally:
        holder.close()
        other.close()


@pytest.mark.postgres
def test_a_release_lost_to_a_postgres_restart_frees_the_thread_in_seconds() -> None:
    """The release meets a restarting server; once it is back, another process takes
    the thread within a few seconds, though the holder process is alive."""
    with running_server(durable=True) as server:  # a restart keeps what was committed
        url = server.create_database()
        first, second = open_storage(url), open_storage(url)
        try:
            assert first.leases is not None and second.leases is not None
            lease = first.leases.acquire("t")
            server.stop()
            lease.release()  # refused: the server is down
            server._pg_start()
            waited = free_within(second.leases, "t", 8.0)
            assert waited < first.leases.ttl  # a retried release, not an expiry
        finally:
            first.close()
            second.close()


@pytest.fixture
def db_url(either_db_url: str) -> str:
    return either_db_url


@pytest.fixture
def paused(db_url: str, tmp_path: Path) -> Iterator[tuple[Session, str, Path]]:
    counter = tmp_path / "counter.txt"
    session = open_session(db_url, str(counter))
    assert session.send("t", "hello").collect()[-1].status == "awaiting_approval"
    try:
        yield session, db_url, counter
    finally:
        session.close()


def cli_pending(db_url: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    readonly.pending(db_url, as_json=True)
    return list(json.loads(capsys.readouterr().out))


def test_a_failed_resume_leaves_the_card_in_every_inbox(
    paused: tuple[Session, str, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The database fails as the approval is being applied (nothing of it saved): the
    run fails, the card is still pending, and every inbox still lists it (the
    Session's list, its cards, the terminal's `pending`); answering it again runs the
    call once."""
    session, db_url, counter = paused
    saver = session.agent.checkpointer

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(saver, "put_writes", failing)
        patch.setattr(saver, "put", failing)
        events = session.resume("t", APPROVE).collect()
    assert isinstance(events[-1], ev.RunFinished) and events[-1].status == "failed"

    info = session.view("t").info
    assert info is not None and info.status == "awaiting_approval"
    assert info.reason and "disk I/O error" in info.reason
    assert [i.thread_id for i in session.thread_list().awaiting_approval] == ["t"]
    [(card_info, card)] = session.thread_list().pending_cards()
    assert card_info.thread_id == "t" and card.kind == "approval"
    [listed] = cli_pending(db_url, capsys)
    assert listed["thread_id"] == "t" and listed["interrupt_id"] == card.interrupt_id

    done = session.resume("t", APPROVE, interrupt_id=card.interrupt_id).collect()
    assert done[-1].status == "completed"
    assert runs(counter) == {"hello": 1}
    assert session.thread_list().awaiting_approval == [] and cli_pending(db_url, capsys) == []


def test_a_resume_that_failed_after_its_call_is_no_card(
    paused: tuple[Session, str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The approved call ran and its result was saved, the step's checkpoint was not:
    nothing waits for a decision (the thread failed; a retry finishes it, the call
    answered from what was saved)."""
    session, _, counter = paused
    saver = session.agent.checkpointer

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    with monkeypatch.context() as patch:
        patch.setattr(saver, "put", failing)
        assert session.resume("t", APPROVE).collect()[-1].status == "failed"
    info = session.view("t").info
    assert info is not None and info.status == "failed"
    assert session.thread_list().awaiting_approval == [] and session.view("t").pending is None
    assert session.retry("t").collect()[-1].status == "completed"
    assert runs(counter) == {"hello": 1}


def hold(db_url: str, kind: str) -> tuple[Any, Any]:
    """The thread's lease taken by another storage (another process), as `kind`."""
    other = open_storage(db_url)
    assert other.leases is not None
    return other, other.leases.acquire("t", kind=kind)


def test_a_decision_waits_for_the_run_that_asked(paused: tuple[Session, str, Path]) -> None:
    """The card is out before the asking run released the thread: a decision sent in
    that moment waits for it and runs, never "already decided"."""
    session, db_url, counter = paused
    other, lease = hold(db_url, "run")
    try:
        threading.Timer(0.5, lease.release).start()
        started = time.monotonic()
        assert session.resume("t", APPROVE).collect()[-1].status == "completed"
        assert time.monotonic() - started >= 0.4
        assert runs(counter) == {"hello": 1}
    finally:
        other.close()


def test_already_decided_only_when_a_decision_holds_the_thread(
    paused: tuple[Session, str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    session, db_url, counter = paused
    other, lease = hold(db_url, "decide")
    try:
        with pytest.raises(AlreadyDecided, match="already decided"):
            session.resume("t", APPROVE)
        lease.release()
        # A run that is no decision and does not end: refused as busy, not decided.
        monkeypatch.setattr(leasing, "DECIDE_WAIT_S", 0.3)
        lease = other.leases.acquire("t", kind="run")  # type: ignore[union-attr]
        with pytest.raises(RunInProgress, match="nothing was decided") as refused:
            session.resume("t", APPROVE)
        assert not isinstance(refused.value, AlreadyDecided)
        lease.release()
        assert session.view("t").pending is not None and runs(counter) == {}
        assert session.resume("t", APPROVE).collect()[-1].status == "completed"
    finally:
        other.close()


def test_retry_answers_a_message_a_restart_left_with_nothing_due(tmp_path: Path) -> None:
    """A restart can leave the user's message saved and no step due (seen under load in
    bench/load.py): `retry` asks the model instead of doing nothing."""
    from langchain_core.messages import AIMessage, HumanMessage

    counter = tmp_path / "counter.txt"
    session = open_session(str(tmp_path / "gatehouse.sqlite"), str(counter))
    try:
        assert session.send("t", "free: first").collect()[-1].status == "completed"
        config = {"configurable": {"thread_id": "t"}}
        # The state such a restart leaves: the message saved, nothing to continue.
        session.agent.update_state(
            config, {"messages": [HumanMessage("free: second")]}, as_node="finish"
        )
        state = session.agent.get_state(config)
        assert state.next == () and isinstance(state.values["messages"][-1], HumanMessage)
        assert session.retry("t").collect()[-1].status == "completed"
        last = session.view("t").messages[-1]
        assert isinstance(last, AIMessage) and last.content == "Done with free: second."
        assert runs(counter) == {"free: first": 1, "free: second": 1}
    finally:
        session.close()

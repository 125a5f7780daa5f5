"""A run's bracket (issue 58): its start is written with its lease's take (the thread
running, a sent message's title) and its end status with the release, so a refused
start must leave the thread's row as it was, and a started run must show running at
once. On SQLite and on a real Postgres (one statement there, a transaction here).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from gatehouse.graph import (
    AwaitingDecision,
    DecisionError,
    NothingPending,
    Session,
    StaleDecision,
    ai,
    tool_call,
)
from gatehouse.graph.store import open_storage
from gatehouse.graph.store.leases import Lease, Leases
from gatehouse.graph.store.sqlite import sqlite_database
from gatehouse.graph.store.threads import Start, ThreadIndex, touching
from tests.support.core_fixtures import make_session

APPROVE = {"decisions": [{"type": "approve"}]}


@pytest.fixture
def db_url(either_db_url: str) -> str:
    return either_db_url


@pytest.fixture
def paused(db_url: str, tmp_path: Path) -> Iterator[Session]:
    turn = ai("", tool_call("send_email", {"to": "a@x", "body": "1"}, "c1"))
    session, _, _ = make_session(tmp_path, [turn, "sent"], db=db_url)
    try:
        assert session.send("t1", "mail Ana").collect()[-1].status == "awaiting_approval"
        yield session
    finally:
        session.close()


def row(session: Session, thread_id: str = "t1") -> tuple[object, ...] | None:
    info = session.storage.index.get(thread_id)
    if info is None:
        return None
    return info.title, info.status, info.updated_at, info.pending_since, info.reason


def test_refused_starts_leave_the_paused_thread_as_it_was(paused: Session) -> None:
    before = row(paused)
    assert before is not None and before[:2] == ("mail Ana", "awaiting_approval")
    with pytest.raises(AwaitingDecision):
        paused.send("t1", "something else entirely")
    with pytest.raises(StaleDecision):
        paused.resume("t1", APPROVE, interrupt_id="not-this-one")
    with pytest.raises(DecisionError):
        paused.resume("t1", {"decisions": [{"type": "no-such-decision"}]})
    assert row(paused) == before
    assert [i.thread_id for i in paused.thread_list().awaiting_approval] == ["t1"]
    # And the thread is free: the approval goes through.
    assert paused.resume("t1", APPROVE).collect()[-1].status == "completed"
    assert row(paused)[1] == "completed"


def test_a_refused_decision_on_a_new_thread_leaves_no_row(db_url: str, tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path, ["hello"], db=db_url)
    try:
        with pytest.raises(NothingPending):
            session.resume("new", APPROVE)
        assert row(session, "new") is None
        assert session.storage.leases is not None
        assert session.storage.leases.holder("new") is None
    finally:
        session.close()


def test_a_sent_run_shows_running_with_its_title_before_it_is_iterated(
    db_url: str, tmp_path: Path
) -> None:
    session, _, _ = make_session(tmp_path, ["hello back"], db=db_url)
    try:
        run = session.send("t2", "hello there")
        assert row(session, "t2")[:2] == ("hello there", "running")
        assert run.collect()[-1].status == "completed"
        assert row(session, "t2")[:2] == ("hello there", "completed")
        assert session.storage.leases is not None
        assert session.storage.leases.holder("t2") is None
    finally:
        session.close()


@pytest.mark.postgres
def test_a_take_that_waited_for_a_release_leaves_the_start_to_its_caller(
    postgres_url: str,
) -> None:
    """The take waits on a run's release (its end status in the same transaction): the
    statement's snapshot is from before that status, so it does not write the start
    (an undo would put back the status from before the release)."""
    storage = open_storage(postgres_url)
    try:
        leases, index = storage.leases, storage.index
        assert leases is not None
        ending = leases.acquire("t")
        index.touch("t", title="hello", status="running")
        taken: list[Lease] = []
        with psycopg.connect(postgres_url, autocommit=True) as conn, conn.transaction():
            conn.execute(
                "UPDATE gatehouse_leases SET owner='', expires_at=0 WHERE owner = %s",
                (ending.owner,),
            )
            conn.execute("UPDATE gatehouse_threads SET status='completed' WHERE thread_id='t'")
            waiter = threading.Thread(
                target=lambda: taken.append(leases.acquire("t", start=Start("t")))
            )
            waiter.start()
            time.sleep(0.5)  # the take waits for the row lock this transaction holds
            assert not taken
        waiter.join(10)
        assert taken and taken[0].undo is None
        info = index.get("t")
        assert info is not None and info.status == "completed"
        taken[0].release()
    finally:
        storage.close()


def test_a_cancelled_run_ends_cancelled_and_frees_its_thread(db_url: str, tmp_path: Path) -> None:
    """Its status (not the saver's to know) is written with the lease's release."""
    session, _, _ = make_session(tmp_path, ["never said"], db=db_url)
    try:
        run = session.send("t3", "hello")
        run.cancel()
        assert run.collect()[-1].status == "cancelled"
        info = session.storage.index.get("t3")
        assert info is not None and (info.status, info.reason) == (
            "cancelled",
            "Stopped by the person.",
        )
        assert session.thread_list().threads[0].status == "cancelled"
        assert session.storage.leases is not None
        assert session.storage.leases.holder("t3") is None
    finally:
        session.close()


def test_an_end_status_refused_with_its_release_is_written_when_the_release_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "gatehouse.sqlite"
    holder = Leases(sqlite_database(db, Leases, ThreadIndex), ttl=1.5)
    index = ThreadIndex(sqlite_database(db))
    real = holder._db.transaction
    refused: list[bool] = []

    def refuse_once() -> Any:
        if not refused:
            refused.append(True)
            raise sqlite3.OperationalError("disk I/O error")
        return real()

    monkeypatch.setattr(holder._db, "transaction", refuse_once)
    try:
        lease = holder.acquire("t")
        lease.start_renewing()
        index.touch("t", title="hello", status="running")
        lease.release(touching("t", "failed", "the model server went away"))
        assert refused
        info = index.get("t")
        assert info is not None and info.status == "running"
        deadline = time.monotonic() + 5
        while (info := index.get("t")) is not None and info.status == "running":
            assert time.monotonic() < deadline, "the release was not retried"
            time.sleep(0.05)
        assert info is not None
        assert (info.status, info.reason) == ("failed", "the model server went away")
        assert holder.holder("t") is None
    finally:
        holder.close()
        index.close()

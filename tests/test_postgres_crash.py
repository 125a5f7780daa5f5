"""The crash-safety and concurrency suites (kill -9 at the moments that matter,
racing processes, run leases, 400 runs at once) against a real Postgres server (issue 9).

The tests of tests/test_crash_recovery.py are imported and collected here with the
`files` fixture handing out a fresh Postgres database URL instead of a SQLite path;
the victim processes (tests/support/crash_worker.py) open the same URL. The one
SQLite-specific test (leases poked with raw SQL) has its Postgres twin below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

import tests.support.crash_worker as crash_worker
import tests.test_crash_recovery as crash
from graph.lease import RunInProgress
from graph.storage import open_storage
from graph.storage_postgres import PgLeases
from tests.support.counting_tools import runs

# The crash-safety suite, collected again in this module (on Postgres).
from tests.test_crash_recovery import *  # noqa: F403

TURNS = 10


def _intact(db: object) -> None:
    """After a kill -9: the server is up, and the victim left no transaction open."""
    with psycopg.connect(str(db), autocommit=True) as conn:
        stuck = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%%'"
        ).fetchone()
        assert stuck == (0,)


@pytest.fixture(autouse=True)
def _on_postgres(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crash, "assert_intact", _intact)


@pytest.fixture
def files(postgres_url: str, tmp_path: Path) -> tuple[str, Path, Path]:
    return postgres_url, tmp_path / "counter.txt", tmp_path / "marker.txt"


def test_lease_expiry_and_dead_holders(postgres_url: str) -> None:
    first, second = open_storage(postgres_url), open_storage(postgres_url)
    leases, other = first.leases, second.leases
    assert isinstance(leases, PgLeases) and isinstance(other, PgLeases)
    leases.ttl = other.ttl = 0.3
    try:
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
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO gatehouse_leases VALUES ('t2', 'elsewhere|1|x', %s) ON CONFLICT (thread_id) "
                "DO UPDATE SET owner=excluded.owner, expires_at=excluded.expires_at",
                (time.time() + 60,),
            )
        with pytest.raises(RunInProgress, match="process 1 on elsewhere"):
            other.acquire("t2")
        # A dead process on this host (a kill -9 left its lease behind) frees it at once.
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(
                "UPDATE gatehouse_leases SET owner=%s, expires_at=%s WHERE thread_id='t2'",
                (f"{leases._host}|999999999|x", time.time() + 60),
            )
        other.acquire("t2").release()
    finally:
        first.close()
        second.close()


def test_racing_acquire_on_a_new_thread_gives_one_lease(postgres_url: str) -> None:
    """Many connections race for a thread that never had a lease row: exactly one wins."""
    import threading

    storages = [open_storage(postgres_url) for _ in range(6)]
    barrier = threading.Barrier(len(storages))
    won: list[object] = []
    lost: list[Exception] = []

    def race(storage: object) -> None:
        barrier.wait()
        try:
            won.append(storage.leases.acquire("fresh"))  # type: ignore[attr-defined]
        except RunInProgress as exc:
            lost.append(exc)

    workers = [threading.Thread(target=race, args=(s,)) for s in storages]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert len(won) == 1 and len(lost) == len(storages) - 1
    finally:
        for s in storages:
            s.close()


def test_twenty_threads_ten_turns_two_processes_and_four_threads(postgres_url: str, tmp_path: Path) -> None:
    """tests/test_concurrency.py on Postgres (that test names its SQLite file itself):
    400 runs from 4 threads of this process and 2 other processes, nothing lost."""
    db, counter = postgres_url, tmp_path / "counter.txt"
    crash_worker.open_session(db, str(counter)).close()  # create the schema once, up front
    env = {**os.environ, "PYTHONPATH": str(crash.ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.crash_worker", db, str(counter), "drive", f"proc{p}", "5", str(TURNS), "2"],
            cwd=crash.ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for p in range(2)
    ]
    session = crash_worker.open_session(db, str(counter))
    try:
        local_failures = crash_worker.drive(session, "local", 10, TURNS, 4)
        outs = [p.communicate(timeout=300) for p in procs]
        for p, (out, err) in zip(procs, outs, strict=True):
            assert p.returncode == 0, f"{out[-3000:]}\n{err[-3000:]}"
            assert json.loads(out.strip().splitlines()[-1]) == {"failures": []}
        assert local_failures == 0
        threads = [f"local-{i:02d}" for i in range(10)] + [f"proc{p}-{i:02d}" for p in range(2) for i in range(5)]
        for tid in threads:
            messages = session.messages(tid)
            assert sum(isinstance(m, HumanMessage) for m in messages) == TURNS, tid
            assert sum(isinstance(m, ToolMessage) for m in messages) == TURNS, tid
            assert sum(isinstance(m, AIMessage) for m in messages) == 2 * TURNS, tid
            assert session.thread(tid).status == "completed"  # type: ignore[union-attr]
        executed = runs(counter)
        assert len(executed) == 20 * TURNS and set(executed.values()) == {1}
    finally:
        session.close()

"""Pins Gatehouse's Postgres work per turn (issue 58), counted, not timed: the load
bench's turn (bench/load_procs.py: a worker process sends, an approver process reads
the pause and approves; one gated and one free call) played by two app instances,
with the transactions the database committed for it (pg_stat_database).

A backend reports its counts when it goes idle for a while or exits, so each count is
read after the apps closed their pools; the set-up and the first (cold) turn cancel
out between two databases, one played one turn longer than the other.
"""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
import pytest

from bench import load_procs
from tests.support.postgres import PostgresServer

TURNS = 3
# By this count: 52 before issue 58's work, 41.7 at its first pin, 28.7 once a run's
# start rides its lease take, the gate reads once a step, a checkpoint's head comes
# with its read and a put is one statement (the peer, LangGraph's own PostgresSaver,
# 18 in the load bench); the slack is for autovacuum's transactions.
MAX_TRANSACTIONS_PER_TURN = 30


def committed(server: PostgresServer, url: str, turns: int) -> int:
    """Transactions the database committed for its set-up and `turns` turns."""
    worker, approver = load_procs.Gatehouse(url), load_procs.Gatehouse(url)
    try:
        for turn in range(turns):
            worker.send("t1", load_procs.user_text("t1", turn))
            pause = approver.pause("t1")
            assert pause is not None
            approver.answer("t1", pause[1], load_procs.APPROVE)
    finally:
        worker.close()
        approver.close()
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        deadline = time.monotonic() + 30
        while conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (name,)
        ).fetchone() != (0,):
            assert time.monotonic() < deadline, "the apps' connections did not close"
            time.sleep(0.05)
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit FROM pg_stat_database WHERE datname = %s", (name,)
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.slow
@pytest.mark.postgres
def test_a_turn_commits_no_more_postgres_transactions_than_pinned(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(load_procs, "MODEL_LATENCY_S", 0.0)
    monkeypatch.setenv("GATEHOUSE_LOAD_DIR", str(tmp_path))
    urls = [postgres_server.create_database("work") for _ in range(2)]
    try:
        short, long = (
            committed(postgres_server, urls[0], 1),
            committed(postgres_server, urls[1], 1 + TURNS),
        )
    finally:
        for url in urls:
            postgres_server.drop_database(url)
    per_turn = (long - short) / TURNS
    assert per_turn <= MAX_TRANSACTIONS_PER_TURN, (
        f"{per_turn:.1f} Postgres transactions per turn (pinned at {MAX_TRANSACTIONS_PER_TURN}): "
        "see issue 58 and tests/test_postgres_work_per_turn.py"
    )

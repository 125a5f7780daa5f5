"""Many runs at once on one SQLite file: 20 threads x 10 turns, driven from 4 threads
of this process and 2 other processes at the same time. No "database is locked"
reaches a user, nothing is lost: every turn completes, every approved call ran once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.support.counting_tools import runs
from tests.support.crash_worker import drive, open_session

ROOT = Path(__file__).resolve().parents[1]
TURNS = 10


def run_busy_workload(db: str, counter: Path, *, timeout_s: float = 120) -> float:
    """20 threads x TURNS turns from 4 threads here and 2 other processes on `db` (a
    SQLite path or a Postgres URL); asserts nothing was lost. Returns the seconds taken."""
    open_session(db, str(counter)).close()  # create the schema once, up front
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.crash_worker",
                db,
                str(counter),
                "drive",
                f"proc{p}",
                "5",
                str(TURNS),
                "2",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in range(2)
    ]
    session = open_session(db, str(counter))
    try:
        local_failures = drive(session, "local", 10, TURNS, 4)
        outs = [p.communicate(timeout=timeout_s) for p in procs]
        elapsed = time.monotonic() - started
        for p, (out, err) in zip(procs, outs, strict=True):
            assert p.returncode == 0, f"{out[-3000:]}\n{err[-3000:]}"
            assert "locked" not in out
            assert json.loads(out.strip().splitlines()[-1]) == {"failures": []}
        assert local_failures == 0

        threads = [f"local-{i:02d}" for i in range(10)] + [
            f"proc{p}-{i:02d}" for p in range(2) for i in range(5)
        ]
        for tid in threads:
            messages = session.view(tid).messages
            assert sum(isinstance(m, HumanMessage) for m in messages) == TURNS, tid
            assert sum(isinstance(m, ToolMessage) for m in messages) == TURNS, tid
            assert sum(isinstance(m, AIMessage) for m in messages) == 2 * TURNS, tid
            assert session.view(tid).info.status == "completed"  # type: ignore[union-attr]
        executed = runs(counter)
        assert len(executed) == 20 * TURNS and set(executed.values()) == {1}
        return elapsed
    finally:
        session.close()


def test_twenty_threads_ten_turns_two_processes_and_four_threads(tmp_path: Path) -> None:
    elapsed = run_busy_workload(str(tmp_path / "busy.sqlite"), tmp_path / "counter.txt")
    print(f"\n20 threads x {TURNS} turns (400 runs) in {elapsed:.1f}s")

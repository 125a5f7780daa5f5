"""Issue 32, item 9: `approve` and `reject` refuse bad input before importing LangGraph
(seconds on a busy machine). Each command runs as a user runs it, in a new process
that reports the modules it loaded: a refusal exits 2 (nothing changed) having loaded
no LangGraph or LangChain, and a good decision still goes through.

Wall times are measured by bench/cold.py (its terminal approve / reject samples), not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from gatehouse.graph import Settings, open_session
from tests.test_cli_fast import HEAVY, WRAPPER, db  # noqa: F401 - the fixture: a paused and a finished thread


def gatehouse(db: dict[str, Any], *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:  # noqa: F811
    report = db["tmp"] / "modules.json"
    report.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(report), *args],
        env=db["env"],
        cwd=db["tmp"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, {m.split(".")[0] for m in json.loads(report.read_text())}


def interrupt_of(db: dict[str, Any]) -> str:  # noqa: F811
    """The paused thread's request id, as `gatehouse pending` prints it."""
    session = open_session(Settings(db=str(db["path"]), workspace=str(db["ws"])))
    try:
        pending = session.view(db["paused"]).pending
        assert pending is not None
        return pending.interrupt_id
    finally:
        session.close()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["approve", "{done}"], "is not waiting for a decision"),
        (["approve", "no-such-thread"], "no thread no-such-thread"),  # exit 1: not found
        (["approve", "bad\x01id"], "not a thread id"),
        (["approve", "{paused}", "--all", "--call", "1"], "either --all or --call"),
        # A script must name the request it decides (issue 29): refused before loading too.
        (["approve", "{paused}"], "name the request this decision is for"),
        (
            ["approve", "{paused}", "--interrupt-id", "{interrupt}", "--edit", "1", "{{not json"],
            "not valid JSON",
        ),
        (
            ["approve", "{paused}", "--interrupt-id", "{interrupt}", "--edit", "1", "[1, 2]"],
            "must be a JSON object",
        ),
        (
            ["approve", "{paused}", "--interrupt-id", "{interrupt}", "--edit", "3", "{{}}"],
            "has 1 pending call",
        ),
        (["approve", "{paused}", "--interrupt-id", "{interrupt}", "--call", "4"], "no call 4"),
        (["reject", "{paused}", "--interrupt-id", "{interrupt}", "--call", "2"], "no call 2"),
        (["reject", "{done}", "--json"], "is not waiting for a decision"),
    ],
)
def test_bad_decisions_are_refused_before_langgraph_loads(
    db: dict[str, Any],  # noqa: F811
    args: list[str],
    said: str,
) -> None:
    done, modules = gatehouse(db, *[a.format(**db, interrupt=interrupt_of(db)) for a in args])
    assert done.returncode == (1 if "no-such-thread" in args else 2), (
        args,
        done.stdout,
        done.stderr,
    )
    assert said in done.stderr
    if "--json" in args:
        assert json.loads(done.stdout)["exit_code"] == 2
    assert not modules & set(HEAVY), f"{args} imported {sorted(modules & set(HEAVY))}"
    # Nothing changed: the paused thread still waits for the same request.
    session = open_session(Settings(db=str(db["path"]), workspace=str(db["ws"])))
    try:
        assert session.view(db["paused"]).pending is not None
    finally:
        session.close()


def test_a_good_decision_still_runs_and_a_reject_needs_no_reason(db: dict[str, Any]) -> None:  # noqa: F811
    done, modules = gatehouse(
        db, "reject", db["paused"], "--interrupt-id", interrupt_of(db), "--json"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tools"][0]["status"] == "rejected" and "langgraph" in modules

"""kill -9 around an offloaded result: the whole output is written before the
execution journal records the (shortened) result, so neither gap loses it.

- killed after the journal's "finished" row, before the checkpoint: the retry answers
  from the journal (the tool does not run again) and the stored output is there;
- killed after the output was stored, before the journal row: the call's outcome is
  unknown, the person is asked (and the answer is in the audit log), and the stale
  output is not passed off as the call's result.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from tests.support.counting_tools import runs
from tests.support.crash_worker import open_session
from tests.test_crash_recovery import APPROVE, assert_intact, assert_paired, spawn

pytestmark = pytest.mark.timeout(120)
LINES = 2_000  # about 30,000 characters of output: well over the 8,000 threshold


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "gatehouse.sqlite", tmp_path / "counter.txt"


def crash_resume(db: Path, counter: Path, thread: str, at: str) -> None:
    session = open_session(str(db), str(counter))
    assert session.send(thread, "big").collect()[-1].status == "awaiting_approval"
    session.close()
    victim = spawn(
        db,
        counter,
        "resume",
        thread,
        json.dumps(APPROVE),
        GATEHOUSE_CRASH_AT=at,
        GATEHOUSE_TEST_TOOL_OUTPUT_LINES=str(LINES),
    )
    victim.wait(60)
    assert victim.returncode == -signal.SIGKILL, victim.communicate()
    assert_intact(db)
    assert runs(counter) == {"big": 1}


def test_killed_after_the_journal_row_the_retry_finds_the_whole_output(
    files: tuple[Path, Path],
) -> None:
    db, counter = files
    crash_resume(db, counter, "t-j", "after_tool")
    session = open_session(str(db), str(counter))
    try:
        assert not any(isinstance(m, ToolMessage) for m in session.view("t-j").messages)
        assert session.retry("t-j").collect()[-1].status == "completed"
        [result] = assert_paired(session, "t-j")
        assert runs(counter) == {"big": 1}  # answered from the journal, not run again
        assert "output stored aside" in result.content and len(result.content) < 3_000
        whole = session.view("t-j").tool_output(result.tool_call_id)
        assert (
            whole is not None
            and whole.startswith("bump ran for big\n")
            and whole.endswith(f"result line {LINES - 1}")
        )
        [view] = [v for v in session.view("t-j").transcript if v.role == "tool"]
        assert view.offloaded and view.total_chars == len(whole)
    finally:
        session.close()


def test_killed_between_storing_and_journaling_asks_and_keeps_the_answer(
    files: tuple[Path, Path],
) -> None:
    db, counter = files
    crash_resume(db, counter, "t-s", "after_offload")
    session = open_session(str(db), str(counter))
    try:
        assert session.retry("t-s").collect()[-1].status == "awaiting_approval"
        pending = session.view("t-s").pending
        assert pending is not None and pending.kind == "outcome_unknown"
        done = session.resume(
            "t-s", {"type": "mark_failed", "message": "checked: half done"}, actor="dana"
        ).collect()
        assert done[-1].status == "completed"
        [result] = assert_paired(session, "t-s")
        assert runs(counter) == {"big": 1}
        # The person's answer is the result; the output stored by the dead attempt is
        # not shown as if it were.
        assert session.view("t-s").tool_output(result.tool_call_id) == result.content
        assert "marked it as failed" in result.content
        outcome = [r for r in session.view("t-s").audit() if r.question.startswith("outcome:")]
        assert [(r.decision, r.message, r.actor, r.source) for r in outcome] == [
            ("mark_failed", "checked: half done", "dana", "api")
        ]
    finally:
        session.close()

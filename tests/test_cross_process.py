"""A turn paused in one OS process is resumed by thread id in another."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.core_fixtures import Ledger, make_session

ROOT = Path(__file__).resolve().parents[1]


def worker(*args: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.support.cross_process_worker", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_pause_in_one_process_resume_in_another(tmp_path: Path) -> None:
    first = worker("start", str(tmp_path), "shared-thread")
    assert first[-1]["status"] == "awaiting_approval"
    request = next(e for e in first if e["type"] == "approval_required")["request"]
    assert request["action_requests"][0]["args"] == {"to": "ops@example.com", "body": "deploy done"}
    ledger = Ledger(tmp_path / "ledger.jsonl")
    assert ledger.count("send_email") == 0, "nothing runs before the yes"

    # The first process has exited; a fresh one resumes by thread id.
    second = worker(
        "resume", str(tmp_path), "shared-thread", json.dumps({"decisions": [{"type": "approve"}]})
    )
    assert second[-1]["status"] == "completed"
    assert [e["call_id"] for e in second if e["type"] == "tool_finished"] == ["e1"]
    assert ledger.count("send_email") == 1, "the approved tool ran exactly once"

    session, _, _ = make_session(tmp_path, [])
    contents = [m.content for m in session.view("shared-thread").messages]
    assert contents[0] == "email ops" and contents[-1] == "Email sent."
    assert session.view("shared-thread").info.status == "completed"
    # A second resume of the same (already decided) approval is refused.
    third = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.cross_process_worker",
            "resume",
            str(tmp_path),
            "shared-thread",
            '{"decisions": [{"type": "approve"}]}',
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert third.returncode != 0 and "not waiting for a decision" in third.stderr
    assert ledger.count("send_email") == 1

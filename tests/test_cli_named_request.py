"""A scripted decision never covers a request its author has not seen.

`approve`, `reject`, `respond` and `resolve` name the request they decide (the id
`pending` and `show` print). Without it: in a script or under --json the command is
refused (exit 2) with how to name it; on a terminal the card is shown and the person
confirms. A named request that is no longer pending is refused, whatever is pending
now (the attack: approving "whatever is pending" after another approver acted).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from tests.support import terminal

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(sys.platform == "win32", reason="needs a pty"),
]

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "gatehouse"


def base_cmd() -> list[str]:
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "gatehouse.ui.term.cli"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GATEHOUSE_"))}
    e.update(
        GATEHOUSE_DB=str(tmp_path / "gh.db"),
        GATEHOUSE_WORKSPACE=str(tmp_path / "ws"),
        PYTHONPATH=str(ROOT),
        NO_COLOR="1",
        TERM="xterm",
        COLUMNS="120",
        LINES="40",
    )
    (tmp_path / "ws").mkdir()
    return e


def gh(
    env: dict[str, str], *args: str, code: int | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*base_cmd(), *args],
        env=env,
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    if code is not None:
        assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    return result


def paused(env: dict[str, str], message: str) -> tuple[str, str]:
    sent = json.loads(gh(env, "send", "--json", message, code=3).stdout)
    return sent["thread_id"], sent["pending"]["interrupt_id"]


def test_unnamed_decisions_are_refused_in_scripts_and_say_how_to_name_the_request(
    env: dict[str, str], tmp_path: Path
) -> None:
    thread_id, request = paused(env, "write a.md: one")
    for args in (
        ("approve", thread_id),
        ("reject", thread_id, "-m", "no"),
        ("respond", thread_id, "-m", "done"),
    ):
        refused = gh(env, *args, code=2)
        assert "--interrupt-id" in refused.stderr and "nothing was sent" in refused.stderr
        error = json.loads(gh(env, *args, "--json", code=2).stdout)
        assert (
            error["exit_code"] == 2
            and "--interrupt-id" in error["error"]
            and f"show {thread_id}" in error["error"]
        )
    assert not (tmp_path / "ws" / "a.md").exists()
    # The id the error points at is what `pending` and `show` print, for people too.
    assert request in gh(env, "pending", code=0).stdout
    assert f"--interrupt-id {request}" in gh(env, "show", thread_id, code=0).stdout
    assert json.loads(gh(env, "pending", "--json", code=0).stdout)[0]["interrupt_id"] == request

    done = json.loads(
        gh(env, "approve", thread_id, "--interrupt-id", request, "--json", code=0).stdout
    )
    assert done["status"] == "completed" and (tmp_path / "ws" / "a.md").read_text() == "one\n"


def test_a_named_request_that_was_decided_is_refused_though_another_is_pending(
    env: dict[str, str], tmp_path: Path
) -> None:
    thread_id, seen = paused(env, "write keep.md: mine")
    # Another approver decides it, and the thread pauses on a request this author never saw.
    gh(env, "approve", thread_id, "--interrupt-id", seen, code=0)
    (tmp_path / "ws" / "thesis.md").write_text("years of work\n")
    gh(env, "send", "--thread", thread_id, "delete thesis.md", code=3)
    for args in (
        ("approve", thread_id, "--interrupt-id", seen),
        ("reject", thread_id, "-m", "x", "--request", seen),
    ):
        stale = json.loads(gh(env, *args, "--json", code=2).stdout)
        assert "already decided" in stale["error"], stale
    assert (tmp_path / "ws" / "thesis.md").exists()
    # Nothing pending at all: the named request is no longer pending.
    now = json.loads(gh(env, "pending", "--json").stdout)[0]["interrupt_id"]
    gh(env, "reject", thread_id, "-m", "keep it", "--interrupt-id", now, code=0)
    gone = gh(env, "approve", thread_id, "--interrupt-id", now, code=2)
    assert "no longer pending" in gone.stderr and "already decided" in gone.stderr
    assert (tmp_path / "ws" / "thesis.md").read_text() == "years of work\n"


def spawn(env: dict[str, str], *args: str) -> pexpect.spawn:
    cmd = base_cmd()
    return terminal.spawn(
        cmd[0],
        [*cmd[1:], *args],
        env={**env, "PROMPT_TOOLKIT_NO_CPR": "1"},
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
    )


def test_on_a_terminal_an_unnamed_decision_shows_the_card_and_asks_to_confirm(
    env: dict[str, str], tmp_path: Path
) -> None:
    thread_id, request = paused(env, "write b.md: two")
    child = spawn(env, "approve", thread_id)
    child.expect("send this decision")
    shown = re.sub(r"\x1b\[[0-9;]*m", "", child.before)  # bold stays on under NO_COLOR
    assert "call 1/1: write_file" in shown and '"path": "b.md"' in shown and request in shown
    assert "call 1 (write_file): approve" in shown
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2 and "not confirmed" in child.before
    assert not (tmp_path / "ws" / "b.md").exists()

    child = spawn(env, "approve", thread_id)
    child.expect("send this decision")
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert (tmp_path / "ws" / "b.md").read_text() == "two\n"


def test_an_unnamed_decision_on_a_long_card_pages_the_hidden_part_before_asking(
    env: dict[str, str], tmp_path: Path
) -> None:
    lines = "\\n".join(f"line {i}" for i in range(1, 121))
    thread_id, _ = paused(env, f"write big.md: {lines}")
    child = spawn(env, "approve", thread_id)
    child.expect(r"… 101 more lines hidden \(")
    child.expect("call 1 \\(write_file\\) in full:")
    child.expect("more lines: Enter for more, q to stop")
    child.sendline("q")  # stopped before the end: not seen, so not asked
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2 and "not confirmed" in child.before
    assert not (tmp_path / "ws" / "big.md").exists()

"""`approve` and `reject` in their scripted forms are read without typer
(ui/term/fast.py): the same calls typer would make, anything else left to typer (its
help and its errors), and the decision goes through the same command either way."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from gatehouse.ui.term.fast import parse_decision
from tests.test_cli_decide_fast import interrupt_of
from tests.test_cli_fast import WRAPPER, db  # noqa: F401 - the fixture: a paused and a finished thread


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["approve", "t1", "--interrupt-id", "r1"],
            ("approve", {"thread_id": "t1", "interrupt_id": "r1"}),
        ),
        (
            ["approve", "--request=r1", "t1", "--json", "--all", "--always", "--db", "x.sqlite"],
            (
                "approve",
                {
                    "thread_id": "t1",
                    "interrupt_id": "r1",
                    "as_json": True,
                    "all_": True,
                    "always": True,
                    "db": "x.sqlite",
                },
            ),
        ),
        (
            ["approve", "t1", "-c", "2", "--call=1", "--reject-others", "-not that-"],
            ("approve", {"thread_id": "t1", "call": [2, 1], "reject_others": "-not that-"}),
        ),
        (
            ["reject", "t1", "-m", "not now", "--interrupt-id", "r1"],
            ("reject", {"thread_id": "t1", "reason": "not now", "interrupt_id": "r1"}),
        ),
        (
            ["reject", "--reason=no", "--call", "1", "--approve-others", "--", "-odd-id"],
            (
                "reject",
                {"thread_id": "-odd-id", "reason": "no", "call": [1], "approve_others": True},
            ),
        ),
    ],
)
def test_plain_decision_command_lines_are_read_directly(argv: list[str], expected: object) -> None:
    assert parse_decision(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["approve"],
        ["approve", "--help"],
        ["approve", "t1", "--edit", "1", "{}"],
        ["approve", "t1", "t2"],
        ["approve", "t1", "--call", "one"],
        ["approve", "t1", "--call"],
        ["approve", "t1", "--reason", "x"],
        ["approve", "t1", "--all=yes"],
        ["approve", "t1", "--db", "a", "--db", "b"],
        ["reject", "t1", "-mno"],
        ["reject", "t1", "--always"],
        ["respond", "t1", "-m", "x"],
        ["threads"],
    ],
)
def test_anything_else_is_left_to_typer(argv: list[str]) -> None:
    assert parse_decision(argv) is None


def run(db: dict[str, Any], *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:  # noqa: F811
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
    return done, set(json.loads(report.read_text()))


def test_a_scripted_decision_runs_without_typers_parser_and_says_the_same(
    db: dict[str, Any],  # noqa: F811
) -> None:
    request = interrupt_of(db)
    malformed, _ = run(db, "approve", "bad id", "--interrupt-id", request, "--json")
    assert malformed.returncode == 2 and "not a thread id" in json.loads(malformed.stdout)["error"]
    unnamed, _ = run(db, "approve", db["paused"], "--json")  # a script must name the request
    assert unnamed.returncode == 2 and "--interrupt-id" in json.loads(unnamed.stdout)["error"]
    done, modules = run(db, "approve", db["paused"], "--interrupt-id", request, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    assert (db["ws"] / "todo.md").read_text() == "buy milk\n"
    assert "typer._adapters" not in modules  # typer's per-parameter validators were never built
    again, _ = run(db, "reject", db["paused"], "--interrupt-id", request, "-m", "late")
    assert again.returncode != 0  # nothing is pending any more: refused, nothing changed
    assert (db["ws"] / "todo.md").read_text() == "buy milk\n"

"""The read-only commands' command lines, read without typer (ui/term/fast.py): the same
calls typer would make, and anything else left to typer (its help and its errors)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gatehouse.ui.term.fast import parse_read_only
from tests.support.clean_env import without_settings

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["threads"], ("threads", {})),
        (
            ["threads", "--json", "--limit", "3", "--db", "x.sqlite"],
            ("threads", {"as_json": True, "limit": 3, "db": "x.sqlite"}),
        ),
        (
            ["threads", "--limit=7", "--db=postgresql://h/db"],
            ("threads", {"limit": 7, "db": "postgresql://h/db"}),
        ),
        (["pending", "--json"], ("pending", {"as_json": True})),
        (["show", "abc", "--json"], ("show", {"thread_id": "abc", "as_json": True})),
        (["show", "--", "-odd-id"], ("show", {"thread_id": "-odd-id"})),
    ],
)
def test_plain_read_only_command_lines_are_read_directly(argv: list[str], expected: object) -> None:
    assert parse_read_only(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--help"],
        ["threads", "--help"],
        ["threads", "--limit", "many"],
        ["threads", "--limit"],
        ["pending", "x"],
        ["pending", "--limit", "3"],
        ["show"],
        ["show", "a", "b"],
        ["show", "-x", "a"],
        ["send", "hi"],
        ["approve", "id"],
    ],
)
def test_anything_else_is_left_to_typer(argv: list[str]) -> None:
    assert parse_read_only(argv) is None


def gatehouse(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = without_settings()
    env.update(
        GATEHOUSE_DB=str(tmp_path / "g.sqlite"),
        GATEHOUSE_WORKSPACE=str(tmp_path / "ws"),
        PYTHONPATH=str(ROOT),
        NO_COLOR="1",
        COLUMNS="200",
    )
    return subprocess.run(
        [sys.executable, "-m", "gatehouse.ui.term.cli", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_errors_and_exit_codes_are_what_typer_gave(tmp_path: Path) -> None:
    bad = gatehouse(tmp_path, "threads", "--limit", "many")  # typer's own error
    assert bad.returncode == 2 and "--limit" in bad.stderr
    missing = gatehouse(
        tmp_path, "show", "no-such-thread", "--json"
    )  # the command's own, through the fast path
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["exit_code"] == 1 and "no-such-thread" in missing.stderr
    listed = gatehouse(tmp_path, "threads", "--json", "--limit", "5")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    helped = gatehouse(tmp_path, "pending", "--help")
    assert helped.returncode == 0 and "--json" in helped.stdout

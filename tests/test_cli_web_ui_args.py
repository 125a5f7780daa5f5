"""`gatehouse` and `gatehouse ui` start the web UI without typer (ui/term/fast.py,
ui/term/entry.py): typer, pydantic and rich took ~0.2 s before the server started,
which a fresh first page waited for (issue 36). The same server command line as the
typer command's; anything else (help, errors, a wrong setting) left to typer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gatehouse.ui.term.fast import parse_web_ui
from tests.support.clean_env import without_settings

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], {"port": None, "browser": True}),
        (["--port", "8601"], {"port": 8601, "browser": True}),
        (["--port=8601"], {"port": 8601, "browser": True}),
        (["ui"], {"port": None, "browser": True}),
        (["ui", "--no-browser"], {"port": None, "browser": False}),
        (["ui", "--browser", "--port", "9"], {"port": 9, "browser": True}),
        (["ui", "--port=9", "--no-browser"], {"port": 9, "browser": False}),
    ],
)
def test_plain_web_ui_command_lines_are_read_directly(
    argv: list[str], expected: dict[str, Any]
) -> None:
    assert parse_web_ui(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["ui", "--help"],
        ["--port"],
        ["--port", "many"],
        ["--port", "-1"],
        ["--port", "1", "--port", "2"],
        ["--no-browser"],  # only `ui` takes it
        ["ui", "--no-browser", "--browser"],
        ["ui", "extra"],
        ["--port", "8601", "ui"],  # typer says --port goes after `ui`
        ["chat"],
        ["threads"],
    ],
)
def test_anything_else_is_left_to_typer(argv: list[str]) -> None:
    assert parse_web_ui(argv) is None


# The console script with the exec faked: what it would run, and what it had loaded.
WRAPPER = """
import json, os, sys
report = sys.argv.pop(1)
def become(path, args):
    open(report, "w").write(json.dumps({
        "cmd": args, "modules": sorted(sys.modules),
        "open_browser": os.environ.get("GATEHOUSE_OPEN_BROWSER"),
        "db": os.environ.get("GATEHOUSE_DB"),
    }))
    os._exit(0)
os.execv = become
sys.argv[0] = "gatehouse"
from gatehouse.ui.term.entry import main
main()
"""


def console_script(tmp_path: Path, *args: str, config: str = "") -> dict[str, Any]:
    (tmp_path / "gatehouse.toml").write_text(config)
    env = without_settings()
    env.update(PYTHONPATH=str(ROOT), NO_COLOR="1")
    report = tmp_path / "report.json"
    out = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(report), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    result: dict[str, Any] = (
        json.loads(report.read_text()) if report.exists() else {"cmd": None, "modules": []}
    )
    result.update(returncode=out.returncode, stderr=out.stderr)
    return result


def typer_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str
) -> tuple[list[str], str | None]:
    from gatehouse.ui.term import cli, cli_interactive

    monkeypatch.chdir(tmp_path)
    # The command sets the variables the server needs in this process: a copy to set
    # them in, so other tests in this process do not inherit them.
    env = without_settings()
    monkeypatch.setattr(os, "environ", env)
    launched: list[list[str]] = []
    monkeypatch.setattr(
        cli_interactive, "run_child", lambda cmd, cwd=None: launched.append(cmd) or 0
    )
    assert CliRunner().invoke(cli.app, list(args)).exit_code == 0
    return launched[0], env.get("GATEHOUSE_OPEN_BROWSER")


@pytest.mark.parametrize("args", [(), ("--port", "8601"), ("ui", "--no-browser")])
def test_the_console_script_starts_the_server_typer_would_without_typer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    fast = console_script(tmp_path, *args)
    assert fast["returncode"] == 0, fast["stderr"]
    loaded = {m.split(".")[0] for m in fast["modules"]}
    assert not loaded & {"typer", "click", "pydantic", "rich", "langgraph", "langchain_core"}
    cmd, open_browser = typer_command(monkeypatch, tmp_path, *args)
    assert fast["cmd"] == cmd
    assert fast["open_browser"] == open_browser == ("0" if "--no-browser" in args else "1")
    assert fast["db"].startswith(str(tmp_path))  # pinned for the server, absolute
    # Nothing comes before the sign-in link the server prints (not even the command line).
    assert fast["stderr"] == ""


def test_a_wrong_setting_is_reported_by_typer_as_before(tmp_path: Path) -> None:
    bad = console_script(tmp_path, config="[model]\ntemperature = 'hot'\n")
    assert bad["cmd"] is None and bad["returncode"] == 2
    assert "[model] temperature must be a number, not 'hot'" in bad["stderr"]


def test_the_command_line_shown_never_sends_a_control_character(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A path with an escape sequence in it (a project folder anyone could name) is shown
    escaped, as every other line the terminal client prints."""
    from gatehouse.ui.term.child import show_command

    show_command(["/opt/x\x1b[2K\rfake/python", "-m", "streamlit"])
    shown = capsys.readouterr().err
    assert "\x1b" not in shown and "\r" not in shown
    assert "\\x1b[2K" in shown and shown.startswith("$ ")

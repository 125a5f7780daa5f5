"""Becoming the server process (Streamlit, `langgraph dev`), without rich: the console
script starts the web UI without typer, pydantic or rich (issue 36)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from gatehouse.graph.protocol.display import visible

DIM, RESET = "\x1b[2m", "\x1b[0m"


def show_command(cmd: list[str]) -> None:
    """The command line on stderr as a shell takes it, dimmed on a terminal, escaped."""
    shown = visible("$ " + shlex.join(cmd))
    if sys.stderr.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb":
        shown = DIM + shown + RESET
    print(shown, file=sys.stderr)


def run_child(cmd: list[str], cwd: Path | None = None) -> int:
    """Become the server process (its own signals and exit code, no orphan left behind);
    a child on Windows."""
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        if cwd is not None:
            os.chdir(cwd)
        os.execv(cmd[0], cmd)
    return subprocess.call(cmd, cwd=cwd)

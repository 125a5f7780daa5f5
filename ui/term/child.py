"""Becoming a server process: `gatehouse ui` and `gatehouse studio` end by running
Streamlit or `langgraph dev` in their place. Without rich: the console script starts
the web UI without loading typer, pydantic or rich (issue 36).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from graph.protocol.display import visible

DIM, RESET = "\x1b[2m", "\x1b[0m"


def show_command(cmd: list[str]) -> None:
    """The command line on stderr, as a shell would take it, dimmed on a terminal; a
    path's control characters shown escaped, never sent to the terminal."""
    shown = visible("$ " + shlex.join(cmd))
    if sys.stderr.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb":
        shown = DIM + shown + RESET
    print(shown, file=sys.stderr)


def run_child(cmd: list[str], cwd: Path | None = None) -> int:
    """Become the server process (signals, Ctrl-C and exit code are its own, and no
    orphan is left behind when this process is stopped); a child on Windows."""
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        if cwd is not None:
            os.chdir(cwd)
        os.execv(cmd[0], cmd)
    return subprocess.call(cmd, cwd=cwd)


__all__ = ["run_child", "show_command"]

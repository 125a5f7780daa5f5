"""`gatehouse`: the read-only commands and the web UI without typer (fast.py), the rest
through cli.py. It exits as Python would but skips tearing down every module: with
LangGraph loaded that takes half a second, longer than a decision (issue 36)."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn

from gatehouse.ui.term.bytecode import warm
from gatehouse.ui.term.fast import parse_read_only, parse_web_ui


def main() -> None:
    warm()  # where PYTHONDONTWRITEBYTECODE is set: bytecode compiled once (ui/term/bytecode.py)
    try:
        if (read_only := parse_read_only(sys.argv[1:])) is not None:
            from gatehouse.ui.term.readonly import main as run_read_only

            run_read_only(*read_only)
        elif (web_ui := parse_web_ui(sys.argv[1:])) is None or not start_web_ui(**web_ui):
            from gatehouse.ui.term.cli import main as run_cli

            run_cli()
    except SystemExit as done:
        exit_now(done.code)
    exit_now(0)


def start_web_ui(port: int | None, browser: bool) -> bool:
    """Become the web UI's server (no return); False, nothing done, when it cannot start:
    the typer command says why."""
    from gatehouse.ui.web.serve import APP_PATH, web_ui_command

    if not APP_PATH.is_file():
        return False
    try:
        cmd = web_ui_command(port, browser)
    except Exception:  # noqa: BLE001 - a wrong setting: the typer command reports it
        return False
    from gatehouse.ui.term.child import run_child

    raise SystemExit(run_child(cmd))


def exit_now(code: object) -> NoReturn:
    """End the process as `sys.exit(code)` would, skipping only the module teardown."""
    if not isinstance(code, int | None):  # sys.exit("message"): printed, status 1
        print(code, file=sys.stderr)
    status = code if isinstance(code, int) else int(code is not None)
    # What the interpreter does first at exit: wake the thread pools still open (their
    # workers wait for work, not for the end) and wait for every non-daemon thread.
    threading._shutdown()  # type: ignore[attr-defined]  # private, but what Python runs
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`| head`)
            stream.flush()
    os._exit(status)


if __name__ == "__main__":
    main()

"""`gatehouse`: the terminal client (typer commands over `graph.Session`).

Interactive: `gatehouse chat`. Scriptable: `threads`, `show`, `pending`, `send`,
`approve`, `reject`, `respond`, `resolve`, `resume`, `export`, `import`, `delete`,
`undo`, `fork`, `branches`, `switch`, `compact`, `output`, `audit`, `grants`, `revoke`
(all with `--json`).
`gatehouse` alone starts the Streamlit app; `gatehouse studio` starts `langgraph dev`.

The commands are grouped in ui/term/cli_interactive.py, cli_threads.py and cli_runs.py
over the shared parts in ui/term/cli_base.py; importing them registers them on one
typer app, in the order `--help` lists them.

The read-only commands (`--help`, `threads`, `pending`, `show`) answer at once: they
read the database through `graph.open_reader` and never import LangGraph or
LangChain (a second and more); only the commands that run the agent load it
(tests/test_cli_fast.py keeps it so). `approve` and `reject` check their options
against the pending request through the reader first, so bad input is refused
before LangGraph loads (tests/test_cli_decide_fast.py); their plain scripted forms are
read without typer's parser (ui/term/fast.py). The read-only commands' bodies are in
ui/term/readonly.py, which the console script (ui/term/entry.py) runs without
importing this module (typer) at all.

Exit codes: 0 ok; 1 run failed or stopped, thread not found, storage error;
2 usage error or refused decision (nothing was changed); 3 the thread is waiting
for a decision; 130 the run was cancelled with Ctrl-C.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import typer

from ui.term import cli_interactive, cli_runs, cli_threads, readonly
from ui.term.cli_base import EXIT_FAILED, Text, _check_id, _remember_json, app, err
from ui.term.cli_runs import drive
from ui.term.fast import parse_decision, parse_read_only

__all__ = ["app", "drive", "main", "cli_runs", "cli_interactive", "cli_threads"]


def main() -> None:
    try:
        if (read_only := parse_read_only(sys.argv[1:])) is not None:
            readonly.main(*read_only)
        elif (decision := parse_decision(sys.argv[1:])) is not None:
            _run_decision(*decision)
        else:
            app()
    except Exception as exc:  # a bug or a broken install: one line, the traceback on request
        if os.environ.get("GATEHOUSE_DEBUG"):
            raise
        err.print(
            Text(
                f"gatehouse: unexpected error: {type(exc).__name__}: {exc} "
                "(set GATEHOUSE_DEBUG=1 for the traceback)",
                "red",
            )
        )
        sys.exit(EXIT_FAILED)


def _run_decision(command: str, kwargs: dict[str, Any]) -> None:
    """A plain `approve` / `reject` called as typer would call it (ui/term/fast.py)."""
    _remember_json(kwargs.get("as_json", False))
    _check_id(kwargs["thread_id"])
    try:
        commands: dict[str, Callable[..., None]] = {
            "approve": cli_runs.approve,
            "reject": cli_runs.reject,
        }
        commands[command](**kwargs)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:  # what typer's standalone mode says and does
        print("\nAborted!", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

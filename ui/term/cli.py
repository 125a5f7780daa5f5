"""`gatehouse`: typer commands over `graph.Session` (importing cli_interactive, cli_threads,
cli_runs registers them in `--help`'s order); plain read-only and decision lines: fast.py."""

from __future__ import annotations

import sys
from typing import Any

import typer

from gatehouse.ui.term import cli_interactive, cli_runs, cli_threads, readonly
from gatehouse.ui.term.cli_base import _check_id, _remember_json, app
from gatehouse.ui.term.cli_runs import drive
from gatehouse.ui.term.fast import parse_decision, parse_read_only

__all__ = ["app", "drive", "main", "cli_runs", "cli_interactive", "cli_threads"]


def main() -> None:
    if (read_only := parse_read_only(sys.argv[1:])) is not None:
        readonly.main(*read_only)
    elif (decision := parse_decision(sys.argv[1:])) is not None:
        readonly.guarded(lambda: _run_decision(*decision))
    else:
        readonly.guarded(app)


def _run_decision(command: str, kwargs: dict[str, Any]) -> None:
    """A plain `approve` / `reject` called as typer would call it."""
    _remember_json(kwargs.get("as_json", False))
    _check_id(kwargs["thread_id"])
    try:
        (cli_runs.approve if command == "approve" else cli_runs.reject)(**kwargs)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:  # what typer's standalone mode says and does
        print("\nAborted!", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

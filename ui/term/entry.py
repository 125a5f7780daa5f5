"""`gatehouse`, the console script: the read-only commands without typer.

`threads`, `pending` and `show` with their plain options are parsed here
(ui/term/fast.py) and run by ui/term/readonly.py, which loads neither typer nor
LangGraph; every other command line (`--help`, a decision, the agent, a malformed
option) goes to the typer app in ui/term/cli.py, which imports typer and pydantic
first: a tenth of a second or more that a read-only command does not need.
"""

from __future__ import annotations

import sys

from ui.term.fast import parse_read_only


def main() -> None:
    if (read_only := parse_read_only(sys.argv[1:])) is not None:
        from ui.term.readonly import main as run_read_only

        run_read_only(*read_only)
    else:
        from ui.term.cli import main as run_cli

        run_cli()


if __name__ == "__main__":
    main()

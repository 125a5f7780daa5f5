"""The terminal client's shared parts: the typer app, its common options, opening the
database, and saying what happened (`fail`, `emit`)."""

from __future__ import annotations

import getpass
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from functools import partial
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from gatehouse import graph
from gatehouse.graph.protocol.display import visible, visible_json
from gatehouse.graph.protocol.threads import printable, thread_id_problem, turn_starts
from gatehouse.ui.term import readonly
from gatehouse.ui.term.readonly import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    Deferred,
    Opened,
    cli_settings,
    err,
    exit_code,
    out,
)

if TYPE_CHECKING:
    from rich.text import Text

    import gatehouse.ui.term.ask as ask
    import gatehouse.ui.term.decisions as td
    import gatehouse.ui.term.render as term
    from gatehouse.graph import Session, ThreadReader, ThreadView
    from gatehouse.graph.protocol import events as ev
    from gatehouse.graph.protocol import operations as ops

__all__ = ["EXIT_OK", "cli_settings", "err", "exit_code", "out", "printable", "visible"]

if not TYPE_CHECKING:
    term = Deferred(lambda: import_module("gatehouse.ui.term.render"))
    ask = Deferred(lambda: import_module("gatehouse.ui.term.ask"))
    td = Deferred(lambda: import_module("gatehouse.ui.term.decisions"))
    ops = Deferred(lambda: import_module("gatehouse.graph.protocol.operations"))
    ev = Deferred(lambda: import_module("gatehouse.graph.protocol.events"))
    Text = Deferred(lambda: import_module("rich.text").Text)

EXIT_AWAITING, EXIT_CANCELLED = 3, 130
STATUS_EXIT = {
    "completed": EXIT_OK,
    "awaiting_approval": EXIT_AWAITING,
    "failed": EXIT_FAILED,
    "stopped": EXIT_FAILED,
    "cancelled": EXIT_CANCELLED,
}
PROJECT_ROOT = Path(__file__).resolve().parents[2]
APP_PATH = PROJECT_ROOT / "ui" / "web" / "launch.py"  # the app behind its sign-in guard

HELP = """A LangGraph agent that pauses before any tool call a person must approve.

`gatehouse` alone starts the web UI (`gatehouse --port 8601` on another port; the
same as `gatehouse ui --port 8601`); `gatehouse chat` is the interactive terminal
client; the other commands are for scripts and cron jobs (all take --json).

Exit codes: 0 ok; 1 run failed or stopped, thread not found, storage error;
2 usage error or refused decision (nothing was changed); 3 the thread is waiting
for a decision; 130 the run was cancelled with Ctrl-C."""


class _WholeHelp(TyperGroup):
    """`--help` lists each command with its whole first sentence (click cuts it to a line)."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:  # typer's vendored click types
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and command.help and not command.short_help:
                first = " ".join(command.help.split("\n\n", 1)[0].split())
                command.short_help = first.split(". ", 1)[0].rstrip(".") + "."
        super().format_commands(ctx, formatter)


app = typer.Typer(
    name="gatehouse",
    cls=_WholeHelp,
    help=HELP,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        metavar="PATH",
        help="Database: a SQLite file or a postgresql:// URL (default: settings, GATEHOUSE_DB).",
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print machine-readable JSON on stdout (errors too).",
        callback=lambda value: _remember_json(value),
    ),
]
ThreadArg = Annotated[
    str, typer.Argument(metavar="ID", help="Thread id.", callback=lambda v: _check_id(v))
]
AutoApproveOpt = Annotated[
    bool,
    typer.Option(
        "--auto-approve",
        help="Run calls that would ask for approval without asking, for this command "
        "(deny rules still apply; each call is recorded as auto-approved).",
    ),
]


def thread_option(help: str) -> Any:
    return typer.Option(
        "--thread", "-t", metavar="ID", callback=lambda v: _check_id(v) if v else v, help=help
    )


def force_option(verb: str) -> Any:
    return typer.Option(
        "--force", help=f"{verb} even while the thread waits for a decision (drops the request)."
    )


InterruptOpt = Annotated[
    str | None,
    typer.Option(
        "--interrupt-id",
        "--request",
        metavar="ID",
        help="The request you decide: its id, as `pending` and `show` print it. Required in scripts "
        "(refused, exit 2, when missing or no longer pending); on a terminal, without it, the "
        "card is shown and you confirm.",
    ),
]


# What typer saw while parsing this command: --json, and why its thread id is malformed
# (said when the command opens the database, as JSON too with --json: nothing is read).
parsed: dict[str, Any] = {"json": False, "bad_id": None}


def _remember_json(value: bool) -> bool:
    parsed["json"] = bool(value)
    return value


def fail(message: str, code: int) -> SystemExit:
    return readonly.fail(message, code, parsed["json"])


def _check_id(value: str) -> str:
    if parsed["bad_id"] is None:  # the first malformed id is the one said
        parsed["bad_id"] = thread_id_problem(value)
    return value


def open_cli_session(db: str | None) -> AbstractContextManager[Session]:
    def make() -> Session:
        settings = cli_settings(db)
        # The decision log names the terminal and who: [audit] actor / GATEHOUSE_ACTOR
        # when set (a shared service account), else the OS user.
        actor = settings.audit_actor
        with suppress(Exception):  # no user name in a bare container
            actor = actor or getpass.getuser()
        return graph.open_session(settings, source="terminal", actor=actor or None)

    return opened(make)


def opened(make: Callable[[], Opened]) -> AbstractContextManager[Opened]:
    if parsed["bad_id"] is not None:
        raise fail(f"not a thread id: {parsed['bad_id']}", EXIT_USAGE)
    return readonly.opened(make, parsed["json"])


def open_cli_reader(db: str | None) -> AbstractContextManager[ThreadReader]:
    """The database, read-only and without LangGraph."""
    return opened(lambda: graph.open_reader(readonly.absolute_db(db) or graph.load_settings().db))


def turn_index(messages: list[Any], thread_id: str, turn: int) -> int:
    """The message index of turn #`turn` (1-based, as `show` numbers turns)."""
    starts = turn_starts(messages)
    if not 1 <= turn <= len(starts):
        have = f"turns 1 to {len(starts)}" if starts else "no turns"
        raise fail(
            f"thread {thread_id} has {have}, not #{turn} (`gatehouse show {thread_id}` numbers them)",
            EXIT_USAGE,
        )
    return starts[turn - 1]


@contextmanager
def refusals(waiting: type[Exception] | None = None) -> Iterator[None]:
    """A Session's refusal in the terminal's words: the thread waits for a decision
    (`waiting`, by default AwaitingDecision: exit 3), other bad input (exit 2)."""
    try:
        yield
    except Exception as exc:
        if isinstance(exc, waiting or graph.AwaitingDecision):
            said = str(exc).replace("(force=True; terminal: --force)", "(--force)")
            raise fail(said, EXIT_AWAITING) from None
        if isinstance(exc, ValueError):
            raise fail(str(exc), EXIT_USAGE) from None
        raise


class ReaderView:
    """A thread through the reader (before LangGraph loads), read as a Session's view."""

    def __init__(self, reader: ThreadReader, thread_id: str) -> None:
        self.exists = reader.exists(thread_id)
        self.pending = reader.pending(thread_id) if self.exists else None
        self.info = reader.thread(thread_id) if self.exists else None
        self.audit = partial(reader.recent_decisions, thread_id)


def require_thread(session: Session | ThreadReader, thread_id: str) -> ThreadView | ReaderView:
    """The thread's view; refused (exit 1) when there is no such thread."""
    if isinstance(session, graph.ThreadReader):
        view: ThreadView | ReaderView = ReaderView(session, thread_id)
    else:
        view = session.view(thread_id)
    if not view.exists:
        raise fail(f"no thread {thread_id} (see `gatehouse threads`)", EXIT_FAILED)
    return view


@contextmanager
def open_thread(db: str | None, thread_id: str) -> Iterator[Session]:
    """The session, once the thread is known to exist."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        yield session


def prepare(session: Session, thread: str | None, auto_approve: bool) -> None:
    """A run's --thread must exist; --auto-approve switches it on for this session."""
    if thread:
        require_thread(session, thread)
    if auto_approve:
        session.submit(ops.SetAutoApprove(None, True))


def emit(
    as_json: bool, data: Any, text: str | Text | Callable[[], object], indent: int | None = None
) -> None:
    """`data` as JSON on stdout under --json, else `text` for people (or what `text()` prints)."""
    if as_json:
        print(visible_json(data, indent=indent))
    elif callable(text):
        text()
    else:
        out.print(text)

"""The terminal client's shared parts: the typer app, its common options, how a
command opens the database, and how it says what happened (`fail`, `emit`).

The commands live beside it by group: ui/term/cli_threads.py (reading and changing
stored threads), ui/term/cli_runs.py (running the agent and deciding), and
ui/term/cli_interactive.py (the web UI, Studio and the terminal chat); ui/term/cli.py puts them together.
Modules a command needs are loaded on first use (`_Deferred`): `gatehouse --help`
needs neither rich nor pydantic, and a read-only command never needs LangGraph.
"""

from __future__ import annotations

import getpass
import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast, overload

import typer
from typer.core import TyperGroup

import graph

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    import ui.term.ask as ask
    import ui.term.decisions as td
    import ui.term.render as term
    from graph import Session, Settings, ThreadReader
    from graph.protocol import events as ev
    from graph.protocol import operations as ops
    from graph.protocol.display import visible, visible_json


class _Deferred:
    """A module, or a name in one, loaded on first use: `gatehouse --help` needs
    neither rich nor pydantic, and a read-only command never needs LangGraph."""

    def __init__(
        self, module: str, name: str | None = None, make: Callable[[Any], Any] | None = None
    ) -> None:
        self._where = (module, name, make)
        self._target: Any = None

    def _get(self) -> Any:
        if self._target is None:
            module, name, make = self._where
            target: Any = importlib.import_module(module)
            if name is not None:
                target = getattr(target, name)
            self._target = make(target) if make is not None else target
        return self._target

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._get(), attr)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._get()(*args, **kwargs)


# Type checkers see the real modules and names (imported above under TYPE_CHECKING).
if not TYPE_CHECKING:
    term = _Deferred("ui.term.render")
    ask = _Deferred("ui.term.ask")
    visible = _Deferred("graph.protocol.display", "visible")
    # JSON output with hidden characters as JSON escapes: the same values, nothing that
    # acts on the terminal a person runs `--json` in.
    visible_json = _Deferred("graph.protocol.display", "visible_json")
    td = _Deferred("ui.term.decisions")
    ops = _Deferred("graph.protocol.operations")
    ev = _Deferred("graph.protocol.events")
    Text = _Deferred("rich.text", "Text")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_AWAITING, EXIT_CANCELLED = 0, 1, 2, 3, 130
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
    """`--help` lists each command with its whole first sentence: click cuts it to
    fit one line ("Start `langgraph dev` on the project's langgraph.json, on...")."""

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
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
out: Console = cast(
    "Console", _Deferred("ui.term.console", make=lambda console: console.make_console())
)
err: Console = cast(
    "Console", _Deferred("ui.term.console", make=lambda console: console.make_console(stderr=True))
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
    """`--thread/-t ID`, checked as a thread id, for the commands it is optional in."""
    return typer.Option(
        "--thread", "-t", metavar="ID", callback=lambda v: _check_id(v) if v else v, help=help
    )


def force_option(verb: str) -> Any:
    """`--force`: do it even while the thread waits for a decision."""
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


# -- plumbing ------------------------------------------------------------------
def fail(message: str, code: int) -> typer.Exit:
    """The error on stderr, for people; and with --json also on stdout, as
    `{"error": ..., "exit_code": ...}`, so a script reads every outcome the same way."""
    err.print(Text(f"gatehouse: {visible(message)}", "red"))
    if _json_requested():
        print(visible_json({"error": message, "exit_code": code}))
    return typer.Exit(code)


# Whether this command was given --json (set while its options are parsed).
_json_output = False


def _remember_json(value: bool) -> bool:
    global _json_output
    _json_output = bool(value)
    return value


def _json_requested() -> bool:
    return _json_output


# Why the command's thread id is malformed (set while its arguments are parsed; said,
# as JSON too with --json, when the command opens the database: nothing is read).
_bad_thread_id: str | None = None


def _check_id(value: str) -> str:
    global _bad_thread_id
    if _bad_thread_id is not None:
        return value  # the first malformed id is the one said
    from graph.protocol.threads import thread_id_problem  # no pydantic or LangGraph: plain checks

    _bad_thread_id = thread_id_problem(value)
    return value


def refuse_bad_thread_id() -> None:
    if _bad_thread_id is not None:
        raise fail(f"not a thread id: {_bad_thread_id}", EXIT_USAGE)


def os_user() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment (a bare container)
        return None


def opening_failed(exc: Exception) -> typer.Exit:
    """A wrong setting is a usage error (2); a database that cannot be used, a failure (1)."""
    return fail(str(exc), EXIT_USAGE if isinstance(exc, graph.ConfigError) else EXIT_FAILED)


@overload
def absolute_db(db: str) -> str: ...


@overload
def absolute_db(db: None) -> None: ...


def absolute_db(db: str | None) -> str | None:
    """`--db` as an absolute path (a URL as given): fixed before anything changes directory."""
    if not db or "://" in db:
        return db
    return str(Path(db).expanduser().resolve())


def shown_db(db: str) -> str:
    """A database for people to read: a URL without its password."""
    if "://" not in db:
        return db
    from urllib.parse import urlsplit

    parts = urlsplit(db)
    if parts.password is None:
        return db
    return parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)).geturl()


def cli_settings(db: str | None) -> Settings:
    """The settings, on `--db` when given (absolute)."""
    settings = graph.load_settings()
    return replace(settings, db=absolute_db(db)) if db else settings


@contextmanager
def open_cli_session(db: str | None) -> Iterator[Session]:
    refuse_bad_thread_id()
    from graph import open_session  # LangGraph and the agent: only the commands that run it

    try:
        settings = cli_settings(db)
        # The decision log names the terminal and who: [audit] actor / GATEHOUSE_ACTOR
        # when set (a shared service account), else the OS user.
        session = open_session(settings, source="terminal", actor=settings.audit_actor or os_user())
    except (graph.ConfigError, graph.StorageError) as exc:
        raise opening_failed(exc) from None
    try:
        yield session
    except graph.StorageError as exc:
        raise fail(str(exc), EXIT_FAILED) from None
    except graph.RunInProgress as exc:
        # AlreadyDecided is both a DecisionError and a RunInProgress: a refused decision.
        code = EXIT_USAGE if isinstance(exc, graph.DecisionError) else EXIT_FAILED
        raise fail(str(exc), code) from None
    finally:
        session.close()


@contextmanager
def open_cli_reader(db: str | None) -> Iterator[ThreadReader]:
    """The database, read-only and without LangGraph: what `threads`, `pending` and
    `show` need, at the cost of a query or two."""
    refuse_bad_thread_id()
    from graph import open_reader

    try:
        reader = open_reader(absolute_db(db) or graph.load_settings().db)
    except (graph.ConfigError, graph.StorageError) as exc:
        raise opening_failed(exc) from None
    try:
        yield reader
    except graph.StorageError as exc:
        raise fail(str(exc), EXIT_FAILED) from None
    finally:
        reader.close()


def printable(text: str) -> str:
    from graph.protocol.threads import printable as escaped

    return escaped(text)


def turn_starts(messages: list[Any]) -> list[int]:
    from graph.protocol.threads import turn_starts as starts

    return starts(messages)


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


def terminal_words(exc: Exception) -> str:
    """A Session refusal in the terminal's words: its option, not the API's keyword."""
    return str(exc).replace("(force=True; terminal: --force)", "(--force)")


def require_thread(session: Session | ThreadReader, thread_id: str) -> None:
    if not (
        session.exists(thread_id)
        if isinstance(session, graph.ThreadReader)
        else session.view(thread_id).exists
    ):
        raise fail(f"no thread {thread_id} (see `gatehouse threads`)", EXIT_FAILED)


def emit(as_json: bool, data: Any, text: str | Text) -> None:
    """A command's result: `data` as JSON on stdout under --json (hidden characters
    escaped), else `text` for people."""
    if as_json:
        print(visible_json(data))
    else:
        out.print(text)


def reset_thread_id_check() -> None:
    """Forget the last command's malformed thread id (tests run several commands in one
    process)."""
    global _bad_thread_id
    _bad_thread_id = None

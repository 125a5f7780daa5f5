"""`gatehouse`: the terminal client (typer commands over `graph.Session`).

Interactive: `gatehouse chat`. Scriptable: `threads`, `show`, `pending`, `send`,
`approve`, `reject`, `respond`, `resolve`, `resume`, `export`, `import`, `delete`,
`undo`, `fork`, `branches`, `switch`, `compact`, `output`, `audit`, `grants`, `revoke`
(all with `--json`).
`gatehouse` alone starts the Streamlit app; `gatehouse studio` starts `langgraph dev`.

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

import getpass
import importlib
import json
import os
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast, overload

import typer

import graph
from ui.term import readonly
from ui.term.child import run_child, show_command
from ui.term.fast import parse_decision, parse_read_only

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    import ui.term.ask as ask
    import ui.term.decisions as td
    import ui.term.render as term
    from graph import Approval, Pause, Run, Session, Settings, ThreadReader
    from graph.protocol import events as ev
    from graph.protocol import operations as ops
    from graph.protocol.answers import Decision, OutcomeAnswer, ReviewAnswer
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

app = typer.Typer(
    name="gatehouse",
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
    if not session.exists(thread_id):
        raise fail(f"no thread {thread_id} (see `gatehouse threads`)", EXIT_FAILED)


def require_pending(
    session: Session | ThreadReader, thread_id: str, interrupt_id: str | None, as_json: bool
) -> Pause:
    """The pending request the command decides. A decision covers only a request its
    author has seen: a script names it (--interrupt-id, as `pending` and `show` print
    it) and is refused when it is missing or no longer pending; a person at a terminal
    who did not name it is shown the card and asked to confirm (`require_named`,
    `confirm_unnamed`). With the read-only reader (before LangGraph is loaded) a named
    request that is not the pending one is left to the session, which says why."""
    require_thread(session, thread_id)
    pending = session.pending(thread_id)
    if pending is None:
        info = session.thread(thread_id)
        status = info.status if info else "idle"
        from graph.protocol.decisions import who_decided

        log = (
            session.audit(thread_id, limit=50)
            if hasattr(session, "audit")
            else session.recent_decisions(thread_id)
        )
        done = who_decided(log)  # who beat us to it
        by = f"; already decided: {done}" if done else ""
        if interrupt_id is not None:
            raise fail(
                f"request {interrupt_id} of thread {thread_id} is no longer pending: it was already decided "
                f"(thread status: {status}{by}); nothing was sent",
                EXIT_USAGE,
            )
        raise fail(
            f"thread {thread_id} is not waiting for a decision (status: {status}){by}", EXIT_USAGE
        )
    if (
        interrupt_id is not None
        and interrupt_id != pending.interrupt_id
        and not isinstance(session, graph.ThreadReader)
    ):
        # The session tells a request already decided from one never asked; an empty
        # answer to a request that is not pending is refused before anything else.
        try:
            session.submit(ops.Decide(thread_id, ops.review([]), interrupt_id))
        except graph.DecisionError as exc:
            raise fail(f"decision refused, nothing changed: {exc}", EXIT_USAGE) from None
        raise fail(
            f"request {interrupt_id} is not the pending request of thread {thread_id}", EXIT_USAGE
        )
    return pending


def require_named(thread_id: str, interrupt_id: str | None, as_json: bool) -> None:
    """Refuse an unnamed decision where nobody can confirm it (a script, --json)."""
    if interrupt_id is None and not can_confirm(as_json):
        raise fail(
            f"name the request this decision is for: add --interrupt-id ID, with the request id that "
            f"`gatehouse pending` or `gatehouse show {thread_id}` prints (`interrupt_id` under --json). "
            "Without it a script could decide a request nobody has seen; nothing was sent.",
            EXIT_USAGE,
        )


def can_confirm(as_json: bool) -> bool:
    """A person is at a terminal to confirm an unnamed decision (never under --json)."""
    return not as_json and sys.stdin.isatty() and sys.stdout.isatty()


def confirm_unnamed(pending: Pause, answer: ReviewAnswer | OutcomeAnswer) -> str:
    """Show the card and what will be sent; the request's id once the person says yes."""
    term.render_pending(out, pending)
    asker = ask.Asker(out, interactive=False)
    try:
        # A decision covers only what was seen: a card's hidden part is paged first.
        seen = isinstance(pending, graph.OutcomeUnknown) or ask.see_hidden(out, asker, pending)
        for line in td.describe_answer(pending, answer) if seen else []:
            out.print(Text(visible(line), "bold"))
        said = asker.line("send this decision? [y/N] ").strip().lower() if seen else ""
    except (EOFError, KeyboardInterrupt):
        said = ""
    if said not in ("y", "yes"):
        raise fail("not confirmed; nothing was sent", EXIT_USAGE)
    return pending.interrupt_id


RESOLVE_HINT = "gatehouse resolve {id} --run-again | --failed NOTE | --outcome TEXT"


def require_approval(
    session: Session | ThreadReader, thread_id: str, interrupt_id: str | None, as_json: bool
) -> Approval:
    """The pending approval request; an outcome-unknown pause is refused (exit 2) with
    a pointer to `resolve`, which is how that kind of pause is answered."""
    pending = require_pending(session, thread_id, interrupt_id, as_json)
    if isinstance(pending, graph.OutcomeUnknown):
        name = pending.call.name
        raise fail(
            f"thread {thread_id} is not waiting for an approval: {name} was interrupted by a crash and "
            f"its outcome is unknown. Answer it with: {RESOLVE_HINT.format(id=thread_id)}",
            EXIT_USAGE,
        )
    require_named(thread_id, interrupt_id, as_json)
    return pending


def check_before_loading(
    db: str | None,
    thread_id: str,
    interrupt_id: str | None,
    as_json: bool,
    build: Callable[[Approval], Any],
) -> None:
    """Refuse a bad decision before LangGraph is imported (seconds on a busy machine):
    the thread, its pending request and the options are checked against the database
    through the read-only reader. The command checks again under its lease once the
    agent is loaded (the request may have been answered meanwhile)."""
    with open_cli_reader(db) as reader:
        request = require_approval(reader, thread_id, interrupt_id, as_json)
    build(request)


def no_schema_check(name: str, args: dict[str, Any]) -> str | None:
    return None  # before the tools are loaded: JSON and its shape only; the schema is checked after


def drive(run: Run, renderer: term.EventRenderer | None) -> tuple[str, list[ev.Event]]:
    """Iterate a run to its end. Ctrl-C asks it to stop at the next safe point (every
    tool call still gets its answer) and keeps iterating; a second Ctrl-C quits hard."""
    events: list[ev.Event] = []
    stopping = False

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal stopping
        if stopping:
            quit_now(run)
        stopping = True
        run.cancel()
        err.print(
            Text("\n■ stopping at the next safe point… (Ctrl-C again to quit now)", "magenta")
        )

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        for event in run:
            events.append(event)
            if renderer is not None:
                renderer.handle(event)
    finally:
        signal.signal(signal.SIGINT, previous)
    return run.status or "failed", events


def quit_now(run: Run) -> None:
    """The second Ctrl-C: leave at once. The run's worker thread would keep the process
    alive until its step ends, so the process exits without waiting for it; the
    database is consistent at every commit, and whatever was cut short is found by the
    next run (a started call becomes an "outcome unknown" question)."""
    err.print(
        Text(f"\n■ quit. The thread stays resumable: gatehouse resume {run.thread_id}", "magenta")
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_CANCELLED)


def run_summary(
    session: Session, thread_id: str, status: str, events: list[ev.Event]
) -> dict[str, Any]:
    pending = session.pending(thread_id) if status == "awaiting_approval" else None
    finished = next((e for e in reversed(events) if isinstance(e, ev.RunFinished)), None)
    auto = {e.call_id for e in events if isinstance(e, ev.ToolStarted) and e.auto_approved}
    granted = {e.call_id: e.grant for e in events if isinstance(e, ev.ToolStarted) and e.grant}
    return {
        "thread_id": thread_id,
        "status": status,
        "reason": finished.reason if finished else None,
        "text": "".join(e.text for e in events if isinstance(e, ev.TextDelta)),
        # The run's last reply (its answer when completed) and its message id.
        "final_text": finished.text if finished else None,
        "message_id": finished.message_id if finished else None,
        "tools": [
            {
                "call_id": e.call_id,
                "name": e.name,
                "status": e.status,
                "output": e.output,
                "auto_approved": e.call_id in auto,
                "grant": granted.get(e.call_id),
                **({"offloaded": True, "total_chars": e.total_chars} if e.offloaded else {}),
            }
            for e in events
            if isinstance(e, ev.ToolFinished)
        ],
        "auto_approve": session.auto_approving(thread_id),
        "compacted": [
            {
                "tokens_before": e.tokens_before,
                "tokens_after": e.tokens_after,
                "messages_removed": e.messages_removed,
            }
            for e in events
            if isinstance(e, ev.Compacted)
        ],
        "errors": [e.message for e in events if isinstance(e, ev.ErrorEvent)],
        "failure": next(
            (
                {"message": e.message, "kind": e.kind, "retryable": e.retryable}
                for e in events
                if isinstance(e, ev.ErrorEvent)
            ),
            None,
        ),
        "reasoning": "".join(e.text for e in events if isinstance(e, ev.ReasoningDelta)),
        "notices": [
            {"text": e.text, "source": e.source} for e in events if isinstance(e, ev.Notice)
        ],
        "retries": [
            {
                "attempt": e.attempt,
                "max_retries": e.max_retries,
                "delay_s": e.delay_s,
                "reason": e.reason,
            }
            for e in events
            if isinstance(e, ev.ModelRetried)
        ],
        "pending": term.pending_json(pending) if pending else None,
    }


def finish_run(session: Session, run: Run, as_json: bool) -> None:
    """Drive a run for a non-interactive command and exit with its status."""
    status, events = drive(run, None if as_json else term.EventRenderer(out))
    if as_json:
        print(visible_json(run_summary(session, run.thread_id, status, events), indent=2))
    elif status == "awaiting_approval" and (pending := session.pending(run.thread_id)):
        term.render_pending(out, pending)
        if isinstance(pending, graph.OutcomeUnknown):
            out.print(Text(f"decide with: {RESOLVE_HINT.format(id=run.thread_id)}", "dim"))
        else:
            out.print(
                Text(
                    f"decide with: gatehouse approve|reject|respond {run.thread_id} "
                    f"--interrupt-id {visible(pending.interrupt_id)} …",
                    "dim",
                )
            )
    raise typer.Exit(STATUS_EXIT.get(status, EXIT_FAILED))


def send_answer(
    session: Session,
    pending: Pause,
    answer: ReviewAnswer | OutcomeAnswer,
    interrupt_id: str | None,
    as_json: bool,
) -> None:
    if interrupt_id is None:  # require_pending let it through: a person at a terminal
        interrupt_id = confirm_unnamed(pending, answer)
    try:
        run = session.submit(ops.Decide(pending.thread_id, answer, interrupt_id))
    except graph.DecisionError as exc:
        raise fail(f"decision refused, nothing changed: {exc}", EXIT_USAGE) from None
    finish_run(session, run, as_json)


def decide(
    pending: Approval, chosen: dict[int, Decision], others: Decision | None, hint: str
) -> ReviewAnswer:
    try:
        return td.answer(pending, chosen, others, hint=hint)
    except td.DecisionUsage as exc:
        raise fail(str(exc), EXIT_USAGE) from None


def others_decision(reject_others: str | None, approve_others: bool) -> Decision | None:
    if reject_others is not None and approve_others:
        raise fail("use either --reject-others or --approve-others, not both", EXIT_USAGE)
    if reject_others is not None:
        return ops.reject(reject_others or None)
    return ops.approve() if approve_others else None


# -- the web UI and Studio -------------------------------------------------------
@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            metavar="N",
            help="Without a command: start the web UI on this port (same as `gatehouse ui --port N`).",
        ),
    ] = None,
) -> None:
    """Without a command, start the web UI (same as `gatehouse ui`)."""
    global _bad_thread_id
    _bad_thread_id = None  # before the command's arguments are parsed (several commands run in one process in tests)
    if ctx.invoked_subcommand is None:
        ui(port=port, browser=True)
    elif port is not None:
        raise fail(
            f"--port is for the web UI: `gatehouse --port {port}` or `gatehouse ui --port {port}`, "
            f"not with `{ctx.invoked_subcommand}`",
            EXIT_USAGE,
        )


@app.command()
def ui(
    port: Annotated[int | None, typer.Option(metavar="N", help="Port for the web UI.")] = None,
    browser: Annotated[bool, typer.Option(help="Open the sign-in link in a browser.")] = True,
) -> None:
    """Start the Streamlit web UI on 127.0.0.1. It prints a sign-in link that works once
    (and opens it); the sign-in page also takes the install secret (gatehouse.secret)."""
    if not APP_PATH.is_file():
        raise fail(f"the web UI is not available: {APP_PATH} does not exist", EXIT_FAILED)
    from ui.web.serve import web_ui_command

    try:
        cmd = web_ui_command(port, browser, APP_PATH)
    except graph.ConfigError as exc:
        raise opening_failed(exc) from None
    raise typer.Exit(run_child(cmd))


@app.command()
def studio(
    port: Annotated[
        int | None,
        typer.Option(metavar="N", help="Port for the LangGraph dev server (default 2024)."),
    ] = None,
    browser: Annotated[bool, typer.Option(help="Open Studio in a browser.")] = True,
    thread: Annotated[
        list[str] | None,
        typer.Option(
            "--thread", "-t", metavar="ID", help="Open this thread in Studio (repeatable)."
        ),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Start `langgraph dev` on the project's langgraph.json, on Gatehouse's own database:
    Studio sees the threads of the web app and the terminal, and they see Studio's.
    With --thread, the thread is registered with the server and its Studio link printed."""
    exe = find_langgraph()
    if exe is None:
        raise fail(
            "LangGraph Studio needs langgraph-cli with the in-memory server. Install it with\n"
            "  uv add --dev 'langgraph-cli[inmem]'   (or: pip install 'langgraph-cli[inmem]')\n"
            "then run `gatehouse studio` again.",
            EXIT_FAILED,
        )
    from ui.term.studio import DEFAULT_PORT, run_studio, valid_server_thread_id

    threads = list(thread or [])
    db = absolute_db(db)
    if threads:
        with open_cli_session(db) as session:
            for thread_id in threads:
                require_thread(session, thread_id)
                if problem := valid_server_thread_id(thread_id):
                    raise fail(f"cannot open thread {thread_id} in Studio: {problem}", EXIT_USAGE)
    # The server runs in the project root: it gets this directory's database, workspace
    # and gatehouse.toml as absolute paths, so it is on the files this shell would use.
    try:
        settings = cli_settings(db)
    except graph.ConfigError as exc:
        raise opening_failed(exc) from None
    os.environ.update(graph.location_env(settings))
    err.print(Text(f"Database: {shown_db(settings.db)}", "dim"))
    port = port or DEFAULT_PORT
    cmd = [
        exe,
        "dev",
        "--config",
        str(PROJECT_ROOT / "langgraph.json"),
        "--port",
        str(port),
        "--no-browser",
    ]
    if not threads and browser:
        cmd.remove("--no-browser")  # langgraph dev opens Studio itself
    if not threads:
        from ui.term.studio import CONNECT_HINT

        err.print(Text(CONNECT_HINT, "yellow"))
        raise typer.Exit(run_child(cmd, cwd=PROJECT_ROOT))
    show_command(cmd)
    raise typer.Exit(
        run_studio(
            cmd, PROJECT_ROOT, port=port, threads=threads, open_browser=browser, say=out.print
        )
    )


def find_langgraph() -> str | None:
    """The `langgraph` executable: this environment's first, then PATH."""
    local = Path(sys.executable).parent / "langgraph"
    return str(local) if local.exists() else shutil.which("langgraph")


# -- reading threads ------------------------------------------------------------
@app.command()
def threads(
    db: DbOpt = None,
    as_json: JsonOpt = False,
    limit: Annotated[
        int, typer.Option(metavar="N", help="At most this many, most recent first.")
    ] = 50,
) -> None:
    """List threads: status, pending approvals, last update."""
    _read_only(readonly.threads, db=db, as_json=as_json, limit=limit)


@app.command()
def show(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Print a thread's transcript (and its pending calls)."""
    _read_only(readonly.show, thread_id=thread_id, db=db, as_json=as_json)


@app.command()
def pending(db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Every thread waiting for a decision, oldest first, with its numbered calls."""
    _read_only(readonly.pending, db=db, as_json=as_json)


def _read_only(command: Callable[..., None], **kwargs: Any) -> None:
    """A command of ui/term/readonly.py (no typer there), its exit as typer's."""
    try:
        command(**kwargs)
    except SystemExit as exc:
        raise typer.Exit(exc.code if isinstance(exc.code, int) else EXIT_FAILED) from None


@app.command()
def export(
    thread_id: ThreadArg,
    fmt: Annotated[
        str, typer.Option("--format", "-f", metavar="md|json", help="md or json.")
    ] = "md",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="PATH", help="Write to this file instead of stdout."
        ),
    ] = None,
    db: DbOpt = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="JSON (same as --format json): `gatehouse import` reads it back; errors are JSON too.",
            callback=lambda value: _remember_json(value),
        ),
    ] = False,
) -> None:
    """Export a thread's transcript as Markdown or JSON (JSON imports back)."""
    fmt = "json" if as_json else fmt
    if fmt not in ("md", "json"):
        raise fail(f"unknown format {fmt!r}; use md or json", EXIT_USAGE)
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        text = session.export(thread_id, fmt)
    if output:
        output.write_text(text + "\n")
        err.print(f"wrote {output}")
    else:
        # On a terminal, escape sequences in the thread are shown, not obeyed.
        print(visible(text) if sys.stdout.isatty() else text)


@app.command("import")
def import_(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE", help="A JSON export (`gatehouse export ID --json`); - reads stdin."
        ),
    ],
    thread_id: Annotated[
        str | None,
        typer.Option(
            "--thread-id",
            metavar="ID",
            callback=lambda v: _check_id(v) if v else v,
            help="Import under this id (default: the exported one, or a new one when it is taken).",
        ),
    ] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recreate a thread from a JSON export: the same messages, tool calls and results,
    its journal and decision log; a paused thread waits again for the same request.

    The thread keeps its exported id unless this database already has a thread by
    that id; then it gets a new one (printed). Nothing is written when the file is
    refused (malformed, a tool call without its result, or a call that could run twice)."""
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text()
    except OSError as exc:
        raise fail(f"cannot read {file}: {exc}", EXIT_USAGE) from None
    with open_cli_session(db) as session:
        try:
            new_id = session.import_thread(text, thread_id=thread_id)
        except graph.ImportRefused as exc:
            raise fail(f"import refused, nothing written: {exc}", EXIT_USAGE) from None
        count = len(session.messages(new_id))
    if as_json:
        print(json.dumps({"thread_id": new_id, "messages": count}))
    else:
        out.print(f"imported thread {new_id} ({count} messages)")


@app.command()
def delete(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Delete a thread and its history."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        session.delete(thread_id)
    if as_json:
        print(json.dumps({"thread_id": thread_id, "deleted": True}))
    else:
        out.print(f"deleted thread {thread_id}")


@app.command()
def undo(
    thread_id: ThreadArg,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Undo even while the thread waits for a decision (drops the request)."
        ),
    ] = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Drop the thread's last turn (your last message and everything after it; the
    checkpoints keep the history). Refused (exit 3) while the thread waits for a
    decision, unless --force; nothing to undo: exit 2."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        turns = len(turn_starts(session.transcript(thread_id)))
        if turns == 0:
            raise fail(f"nothing to undo: thread {thread_id} has no turn of yours", EXIT_USAGE)
        try:
            removed = session.undo(thread_id, force=force)
        except graph.AwaitingDecision as exc:
            raise fail(terminal_words(exc), EXIT_AWAITING) from None
    if as_json:
        print(json.dumps({"thread_id": thread_id, "removed": removed, "turn": turns}))
    else:
        out.print(f"undone: turn #{turns} ({removed} message(s)) removed from thread {thread_id}")


@app.command()
def compact(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Summarise the older part of a thread now (the last turns stay verbatim; the
    checkpoints keep the full history)."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        try:
            event = session.compact_now(thread_id)
        except graph.AwaitingDecision as exc:
            raise fail(str(exc), EXIT_AWAITING) from None
        except ValueError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
    data = {
        "thread_id": thread_id,
        "compacted": event is not None,
        **(
            {
                "tokens_before": event.tokens_before,
                "tokens_after": event.tokens_after,
                "messages_removed": event.messages_removed,
            }
            if event
            else {}
        ),
    }
    if as_json:
        print(json.dumps(data))
    elif event is None:
        out.print("nothing to compact: the thread has no turns older than the ones kept verbatim")
    else:
        out.print(
            f"compacted: {event.messages_removed} messages summarised, "
            f"{event.tokens_before:,} → {event.tokens_after:,} tokens"
        )


@app.command()
def output(
    thread_id: ThreadArg,
    call_id: Annotated[
        str, typer.Argument(metavar="CALL_ID", help="The tool call id (from `show --json`).")
    ],
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a tool call's whole output (also one stored aside because it was too large
    for the model's context)."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        text = session.tool_output(thread_id, call_id)
    if text is not None and not as_json and sys.stdout.isatty():
        # On a terminal, escape sequences in the output are shown, not obeyed (an OSC 52
        # would write the clipboard); piped into a file it stays byte for byte.
        text = visible(text)
    if text is None:
        raise fail(f"thread {thread_id} has no result for tool call {call_id}", EXIT_FAILED)
    if as_json:
        print(visible_json({"thread_id": thread_id, "call_id": call_id, "output": text}))
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


@app.command()
def audit(
    thread: Annotated[
        str | None,
        typer.Option(
            "--thread",
            "-t",
            metavar="ID",
            callback=lambda v: _check_id(v) if v else v,
            help="Only this thread's decisions.",
        ),
    ] = None,
    limit: Annotated[int, typer.Option(metavar="N", help="At most this many, newest first.")] = 200,
    db: DbOpt = None,
    as_json: JsonOpt = False,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Check the log's hash chain: name the first edited, "
            "inserted or deleted entry (exit 1 if any).",
        ),
    ] = False,
) -> None:
    """The decision log, newest first: who approved, edited, rejected or answered which
    tool call, when, from which front end, with the edits. It outlives undo, fork and
    thread deletion. With --verify: whether anyone rewrote it."""
    if verify:
        with open_cli_session(db) as session:
            result = session.verify_audit()
        if as_json:
            print(
                json.dumps(
                    {
                        "intact": result.intact,
                        "entries": result.entries,
                        "head": result.head,
                        "problems": result.problems,
                    },
                    indent=2,
                )
            )
        elif result.intact:
            out.print(f"Decision log intact: {result.entries} entries, head {result.head}")
        else:
            err.print(Text(f"Decision log TAMPERED: {result.first_problem}", "bold red"))
            for more in result.problems[1:]:
                err.print(Text(f"  also: {more}", "red"))
        raise typer.Exit(EXIT_OK if result.intact else EXIT_FAILED)
    with open_cli_session(db) as session:
        records = session.audit(thread, limit=limit)
    if as_json:
        print(visible_json([r.to_dict() for r in records], indent=2))
    elif not records:
        out.print("No decisions recorded" + (f" for thread {thread}." if thread else " yet."))
    else:
        term.render_audit(out, records, show_thread=thread is None)


@app.command()
def grants(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """The thread's standing "always allow" grants in force: which tool (and where),
    who gave it, when, from which front end. "*" is the thread's auto-approve switch."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        found = session.grants(thread_id)
    if as_json:
        print(json.dumps([g.to_dict() for g in found], ensure_ascii=False, indent=2))
        return
    if not found:
        out.print(f"No standing grants in thread {thread_id}: every gated call asks.")
        return
    for g in found:
        who = f"by {g.actor or 'unknown'} via {g.source or 'unknown'}, {term.when(g.granted_at)}"
        out.print(
            Text.assemble(
                (printable(g.label), "bold"), "  ", printable(g.described), (f"  ({who})", "dim")
            )
        )
    out.print(Text(f"Withdraw one with: gatehouse revoke {thread_id} GRANT", "dim"))


@app.command()
def revoke(
    thread_id: ThreadArg,
    grant: Annotated[
        str,
        typer.Argument(
            metavar="GRANT",
            help="The grant as `grants` lists it (e.g. write_file, write_file:*.md, *).",
        ),
    ],
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Withdraw a standing grant: the thread's next gated call asks again (recorded in the decision log)."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        try:
            done = session.revoke_grant(thread_id, grant)
        except ValueError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
    if as_json:
        print(json.dumps({"thread_id": thread_id, "revoked": done.label}, ensure_ascii=False))
    else:
        out.print(f"Revoked {printable(done.label)} in thread {thread_id}: {done.tool} asks again.")


@app.command()
def fork(
    thread_id: ThreadArg,
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The new text of that user message.")],
    at: Annotated[
        int,
        typer.Option(
            "--at",
            metavar="N",
            help="The turn whose message to replace: 1 is the first (`show` prints #N).",
        ),
    ],
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Fork even while the thread waits for a decision (drops the request)."
        ),
    ] = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace your message of turn #N with TEXT and run the agent from there (the
    checkpoints keep the old branch). Refused (exit 3) while the thread waits for a
    decision, unless --force."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        index = turn_index(session.transcript(thread_id), thread_id, at)
        try:
            run = session.submit(ops.Fork(thread_id, index, text, force))
        except graph.AwaitingDecision as exc:
            raise fail(terminal_words(exc), EXIT_AWAITING) from None
        except ValueError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
        finish_run(session, run, as_json)


@app.command()
def branches(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """The versions of the thread's user messages: a fork, a regenerate, or an undo
    and a new message each make one (the web app shows them as < k/n >)."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        messages = session.transcript(thread_id)
        found = session.branches(thread_id, messages)
    turn = {i: k + 1 for k, i in enumerate(turn_starts(messages))}
    if as_json:
        print(visible_json([b.to_dict() for b in found], indent=2))
        return
    if not found:
        out.print(f"Thread {thread_id} has one version of each message (it was never forked).")
        return
    for versions in found:
        out.print(
            Text.assemble(
                (f"#{turn.get(versions.index, '?')}", "bold"), f"  version {versions.label}"
            )
        )
        for k, preview in enumerate(versions.previews):
            current = k == versions.current
            out.print(
                Text.assemble(
                    ("  ▸ " if current else "    ", "bold"),
                    f"{k + 1}. ",
                    (preview, "" if current else "dim"),
                )
            )
    out.print(Text(f"Switch with: gatehouse switch {thread_id} --at N --to K", style="dim"))


@app.command()
def switch(
    thread_id: ThreadArg,
    at: Annotated[
        int,
        typer.Option(
            "--at",
            metavar="N",
            help="The turn (`branches` and `show` print it as #N; 1 is the first).",
        ),
    ],
    to: Annotated[
        int, typer.Option("--to", metavar="K", help="Which version of it (1 = the oldest).")
    ],
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Switch even while the thread waits for a decision (drops the request)."
        ),
    ] = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move the thread onto version K of your message of turn #N, where that branch last
    ended a run (nothing runs; the other branches stay). Refused (exit 3) while the
    thread waits for a decision, unless --force."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        before = session.transcript(thread_id)
        index = turn_index(before, thread_id, at)
        versions = next((b for b in session.branches(thread_id, before) if b.index == index), None)
        if versions is None:
            raise fail(
                f"turn #{at} of thread {thread_id} has no other versions; "
                f"see `gatehouse branches {thread_id}`",
                EXIT_USAGE,
            )
        if not 1 <= to <= len(versions.message_ids):
            raise fail(
                f"turn #{at} has versions 1 to {len(versions.message_ids)}, not {to}", EXIT_USAGE
            )
        try:
            session.switch_branch(thread_id, versions.message_ids[to - 1], force=force)
        except graph.AwaitingDecision as exc:
            raise fail(terminal_words(exc), EXIT_AWAITING) from None
        except ValueError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
        messages = session.transcript(thread_id)
    if as_json:
        print(
            json.dumps(
                {
                    "thread_id": thread_id,
                    "at": at,
                    "version": to,
                    "versions": len(versions.message_ids),
                    "messages": len(messages),
                }
            )
        )
    else:
        out.print(
            f"thread {thread_id} is on version {to}/{len(versions.message_ids)} of turn #{at} "
            f"({len(messages)} messages); `gatehouse show {thread_id}` prints it"
        )


# -- running the agent --------------------------------------------------------------
@app.command()
def send(
    message: Annotated[str, typer.Argument(metavar="MESSAGE", help="The message to send.")],
    thread: Annotated[
        str | None,
        typer.Option(
            "--thread",
            "-t",
            metavar="ID",
            callback=lambda v: _check_id(v) if v else v,
            help="Continue this thread (default: a new one).",
        ),
    ] = None,
    auto_approve: AutoApproveOpt = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Send one message and run the agent until it finishes or pauses (exit 3)."""
    with open_cli_session(db) as session:
        if thread:
            require_thread(session, thread)
        if auto_approve:
            session.set_auto_approve(True)
        thread_id = thread or session.new_thread_id()
        if not as_json and (why := session.auto_approving(thread_id)):
            err.print(term.auto_approve_banner(why))
        try:
            run = session.submit(ops.SendMessage(thread_id, message))
        except graph.DecisionError as exc:
            raise fail(str(exc), EXIT_AWAITING) from None
        except ValueError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
        if not as_json:
            err.print(Text(f"thread {run.thread_id}", "dim"))
        finish_run(session, run, as_json)


CallOpt = Annotated[
    list[int] | None,
    typer.Option("--call", "-c", metavar="N", help="Call number (from `pending`); repeatable."),
]
RejectOthersOpt = Annotated[
    str | None,
    typer.Option(
        "--reject-others",
        metavar="REASON",
        help="Reject every call not named by --call, with this reason.",
    ),
]
ApproveOthersOpt = Annotated[
    bool, typer.Option("--approve-others", help="Approve every call not named by --call.")
]


@app.command()
def approve(
    thread_id: ThreadArg,
    call: CallOpt = None,
    all_: Annotated[bool, typer.Option("--all", help="Approve every pending call.")] = False,
    always: Annotated[
        bool, typer.Option("--always", help="Also always allow these tools in this thread.")
    ] = False,
    reject_others: RejectOthersOpt = None,
    edit: Annotated[
        tuple[int, str] | None,
        typer.Option(
            "--edit",
            metavar="N JSON",
            help="Run call N with these arguments instead (a JSON object, checked against the tool's schema).",
        ),
    ] = None,
    interrupt_id: InterruptOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Approve pending calls and continue the run.

    Name the request with --interrupt-id (the id `pending` and `show` print): a script
    that does not is refused; on a terminal the card is shown and you confirm.

    The graph takes one answer covering every call of a request, so: with one pending
    call, `approve ID --interrupt-id REQ` approves it; with several, say `--all`, or name calls with
    `--call N` (repeatable) and decide the rest with `--reject-others REASON`.
    Otherwise nothing is sent and the exit code is 2, naming the undecided calls.

    `--edit N '{"path": "b.md"}'` approves call N with other arguments (validated as
    the web editor validates them); the other calls as above.
    """
    if all_ and call:
        raise fail("use either --all or --call, not both", EXIT_USAGE)

    always_allow = True if always else None

    def build(
        request: Approval, check_args: Callable[[str, dict[str, Any]], str | None]
    ) -> ReviewAnswer:
        count = len(request.actions)
        chosen: dict[int, Decision] = {
            n: ops.approve(always_allow=always_allow) for n in call or ()
        }
        if edit is not None:
            number, text = edit
            if not 1 <= number <= count:
                raise fail(
                    f"--edit {number}: thread {thread_id} has {count} pending call(s): "
                    f"{td.describe_calls(request)}",
                    EXIT_USAGE,
                )
            name = request.actions[number - 1].name
            args, problem = ask.parse_args_json(text, name, check_args)
            if problem is not None or args is None:
                raise fail(f"--edit {number} ({name}): {problem}; nothing was sent", EXIT_USAGE)
            chosen[number] = ops.edit(name, args, always_allow=always_allow)
        if all_ or (not chosen and count == 1):
            chosen = {
                n: chosen.get(n, ops.approve(always_allow=always_allow))
                for n in range(1, count + 1)
            }
        elif not chosen:
            raise fail(
                f"thread {thread_id} has {count} pending calls: {td.describe_calls(request)}; "
                "say --all, or --call N (repeatable) with --reject-others REASON",
                EXIT_USAGE,
            )
        others = ops.reject(reject_others or None) if reject_others is not None else None
        return decide(
            request,
            chosen,
            others,
            "decide them in the same command: repeat --call, "
            "or use --all or --reject-others REASON",
        )

    check_before_loading(
        db, thread_id, interrupt_id, as_json, lambda request: build(request, no_schema_check)
    )
    with open_cli_session(db) as session:
        request = require_approval(session, thread_id, interrupt_id, as_json)
        send_answer(session, request, build(request, session.check_args), interrupt_id, as_json)


@app.command()
def reject(
    thread_id: ThreadArg,
    reason: Annotated[
        str | None,
        typer.Option(
            "--reason", "-m", metavar="TEXT", help="Why (optional; the model reads this)."
        ),
    ] = None,
    call: CallOpt = None,
    approve_others: ApproveOthersOpt = False,
    interrupt_id: InterruptOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Reject pending calls (with an optional reason) and continue the run.

    Without --call every pending call is rejected. With --call N (repeatable), the
    other calls need a decision too: --approve-others; otherwise exit 2, nothing sent.
    """

    def build(request: Approval) -> ReviewAnswer:
        numbers = call or list(range(1, len(request.actions) + 1))
        rejected: Decision = ops.reject(reason or None)
        return decide(
            request,
            dict.fromkeys(numbers, rejected),
            ops.approve() if approve_others else None,
            "decide them in the same command: repeat --call, or use --approve-others",
        )

    check_before_loading(db, thread_id, interrupt_id, as_json, build)
    with open_cli_session(db) as session:
        request = require_approval(session, thread_id, interrupt_id, as_json)
        send_answer(session, request, build(request), interrupt_id, as_json)


@app.command()
def respond(
    thread_id: ThreadArg,
    message: Annotated[
        str,
        typer.Option(
            "--message", "-m", metavar="TEXT", help="Text the model receives as the tool result."
        ),
    ],
    call: Annotated[
        int | None,
        typer.Option(
            "--call", "-c", metavar="N", help="Call number (optional when only one is pending)."
        ),
    ] = None,
    reject_others: RejectOthersOpt = None,
    approve_others: ApproveOthersOpt = False,
    interrupt_id: InterruptOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer a pending call with a message instead of running it.

    The other pending calls must be decided in the same command with
    --reject-others REASON or --approve-others; otherwise exit 2, nothing sent.
    """
    if not message.strip():
        raise fail("--message cannot be empty", EXIT_USAGE)
    with open_cli_session(db) as session:
        request = require_approval(session, thread_id, interrupt_id, as_json)
        if call is None:
            if len(request.actions) != 1:
                raise fail(
                    f"thread {thread_id} has {len(request.actions)} pending calls: "
                    f"{td.describe_calls(request)}; say which with --call N",
                    EXIT_USAGE,
                )
            call = 1
        answer = decide(
            request,
            {call: ops.respond(message)},
            others_decision(reject_others, approve_others),
            "decide them in the same command: --reject-others REASON or --approve-others",
        )
        send_answer(session, request, answer, interrupt_id, as_json)


@app.command()
def resolve(
    thread_id: ThreadArg,
    run_again: Annotated[
        bool,
        typer.Option(
            "--run-again", help="Run the interrupted call again (it may repeat its side effect)."
        ),
    ] = False,
    failed: Annotated[
        str | None,
        typer.Option(
            "--failed", metavar="NOTE", help="Mark the call as failed; the note is for the model."
        ),
    ] = None,
    outcome: Annotated[
        str | None,
        typer.Option(
            "--outcome",
            metavar="TEXT",
            help="What really happened; the model gets it as the tool result.",
        ),
    ] = None,
    interrupt_id: InterruptOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Answer an "outcome unknown" pause: a call that started before a crash and
    whose result was never saved. Say exactly one of --run-again, --failed NOTE
    or --outcome TEXT; the run then continues."""
    chosen = [
        flag
        for flag, given in (
            ("--run-again", run_again),
            ("--failed", failed is not None),
            ("--outcome", outcome is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise fail(
            "say exactly one of --run-again, --failed NOTE or --outcome TEXT"
            + (f" (got {', '.join(chosen)})" if chosen else ""),
            EXIT_USAGE,
        )
    if outcome is not None and not outcome.strip():
        raise fail("--outcome cannot be empty", EXIT_USAGE)
    with open_cli_session(db) as session:
        request = require_pending(session, thread_id, interrupt_id, as_json)
        if not isinstance(request, graph.OutcomeUnknown):
            raise fail(
                f"thread {thread_id} is waiting for an approval, not for an unknown outcome; "
                "use approve, reject or respond (see `gatehouse pending`)",
                EXIT_USAGE,
            )
        require_named(thread_id, interrupt_id, as_json)
        if run_again:
            answer = ops.outcome("run_again")
        elif failed is not None:
            answer = ops.outcome("mark_failed", failed.strip() or None)
        else:
            answer = ops.outcome("respond", (outcome or "").strip())
        send_answer(session, request, answer, interrupt_id, as_json)


@app.command()
def resume(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Continue a thread whose run failed or whose process died, from its last checkpoint
    (after a reply that was cut off: ask the model again)."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        if session.pending(thread_id) is not None:
            raise fail(
                f"thread {thread_id} is waiting for a decision; use approve, reject, respond or resolve "
                "(see `gatehouse pending`)",
                EXIT_AWAITING,
            )
        finish_run(session, session.submit(ops.Retry(thread_id)), as_json)


# -- interactive chat ---------------------------------------------------------------
@app.command()
def chat(
    thread: Annotated[
        str | None,
        typer.Option(
            "--thread",
            "-t",
            metavar="ID",
            callback=lambda v: _check_id(v) if v else v,
            help="Resume this thread.",
        ),
    ] = None,
    auto_approve: AutoApproveOpt = False,
    all_: Annotated[
        bool,
        typer.Option(
            "--all", help="With --thread: print the whole history, not only the last turns."
        ),
    ] = False,
    db: DbOpt = None,
) -> None:
    """Interactive chat: streams the run, asks before every gated tool call.

    At a decision: a approve · e edit ($EDITOR if set, else inline JSON, validated) ·
    r reject with a reason · s respond · A approve all remaining · w approve and
    always allow the tool in this thread. After a crash left a call's outcome unknown:
    a run again · f mark failed (with a note) · s respond with what really happened.
    Ctrl-C during a run stops it cleanly; at a
    prompt it exits (the thread stays resumable with --thread). Commands: /help,
    /retry, /history, /undo, /compact, /auto, /new, /exit. --auto-approve (or /auto
    on) runs calls that would ask without asking, shown by a banner and the prompt
    while on.
    """
    from ui.term.chat import Chat

    with open_cli_session(db) as session:
        if thread:
            require_thread(session, thread)
        if auto_approve:
            session.set_auto_approve(True)
        chat = Chat(session, out, err, session.check_args, drive)
        chat.whole_history = all_
        code = chat.loop(thread)
    raise typer.Exit(code)


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
        commands: dict[str, Callable[..., None]] = {"approve": approve, "reject": reject}
        commands[command](**kwargs)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:  # what typer's standalone mode says and does
        print("\nAborted!", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

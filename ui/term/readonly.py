"""`threads`, `pending` and `show` without typer, pydantic or LangGraph (`graph.open_reader`;
tests/test_cli_fast.py checks), and what every command shares: consoles, `fail`, `opened`."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from functools import cached_property
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from gatehouse import graph
from gatehouse.graph.protocol.display import visible, visible_json
from gatehouse.graph.protocol.pauses import MalformedPause
from gatehouse.graph.protocol.threads import printable, thread_id_problem

if TYPE_CHECKING:
    from rich.console import Console

    from gatehouse.graph import Session, Settings, ThreadReader, WebSessions

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
Opened = TypeVar("Opened", "Session", "ThreadReader", "WebSessions")


class Deferred:
    """What `load()` returns, loaded on first use (`--help` needs no rich, no pydantic)."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self._load = load

    @cached_property
    def _target(self) -> Any:
        return self._load()

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._target, attr)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._target(*args, **kwargs)


out: Console = cast(
    "Console", Deferred(lambda: import_module("gatehouse.ui.term.console").make_console())
)
err: Console = cast(
    "Console",
    Deferred(lambda: import_module("gatehouse.ui.term.console").make_console(stderr=True)),
)


def fail(message: str, code: int, as_json: bool) -> SystemExit:
    """The error on stderr; with --json also on stdout as `{"error", "exit_code"}`, so a
    script reads every outcome the same way."""
    from rich.text import Text

    err.print(Text(f"gatehouse: {visible(message)}", "red"))
    if as_json:
        print(visible_json({"error": message, "exit_code": code}))
    return SystemExit(code)


def exit_code(exc: Exception) -> int:
    """A wrong setting or a refused decision is a usage error (2); the rest, a failure (1)."""
    return EXIT_USAGE if isinstance(exc, graph.ConfigError | graph.DecisionError) else EXIT_FAILED


def absolute_db(db: str | None) -> str | None:
    """`--db` as an absolute path (a URL as given): fixed before anything changes directory."""
    if not db or "://" in db:
        return db
    return str(Path(db).expanduser().resolve())


def cli_settings(db: str | None) -> Settings:
    settings = graph.load_settings()
    return replace(settings, db=absolute_db(db) or settings.db)


@contextmanager
def opened(make: Callable[[], Opened], as_json: bool) -> Iterator[Opened]:
    """The reader or session `make` opens, closed after; its errors said as `fail` says them."""
    try:
        opened = make()
    except (graph.ConfigError, graph.StorageError) as exc:
        raise fail(str(exc), exit_code(exc), as_json) from None
    try:
        yield opened
    except (graph.StorageError, graph.RunInProgress) as exc:
        # AlreadyDecided is both a DecisionError and a RunInProgress: a refused decision.
        raise fail(str(exc), exit_code(exc), as_json) from None
    finally:
        opened.close()


def print_json(value: Any) -> None:
    """`--json` output: indented for a person at a terminal, one line for a program (the
    same document; the C encoder writes 10,000 cards in a third of the indented time)."""
    print(visible_json(value, indent=2 if sys.stdout.isatty() else None))


def open_reader(db: str | None, as_json: bool) -> AbstractContextManager[ThreadReader]:
    return opened(lambda: graph.open_reader(absolute_db(db) or graph.load_settings().db), as_json)


def threads(db: str | None = None, as_json: bool = False, limit: int = 50) -> None:
    with open_reader(db, as_json) as reader:
        where = reader.location
        infos = reader.threads(limit=limit)
        try:
            pauses = reader.pending_many([i.thread_id for i in infos if i.awaiting_approval])
            # An outcome-unknown pause holds one call.
            count = {
                t: len(p.actions) if p.kind == "approval" else 1 for t, p in pauses.items() if p
            }
        except MalformedPause:  # one query per thread, to count the malformed one as 1
            count = {i.thread_id: reader.pending_count(i.thread_id) for i in infos}
        rows = [{**info.to_dict(), "pending": count.get(info.thread_id, 0)} for info in infos]
    if as_json:
        print_json(rows)
        return
    from rich.text import Text

    from gatehouse.ui.term.console import threads_table

    # Which database this is: from another directory it is another file (issue 33).
    out.print(Text(f"Database: {visible(where)}", "dim"))
    if not rows:
        out.print("No threads yet. Start one with `gatehouse chat`.")
    else:
        # Ids and titles as text that cannot drive the terminal (a NUL, an escape sequence).
        shown = [
            {**r, "thread_id": printable(r["thread_id"]), "title": printable(r["title"])}
            for r in rows
        ]
        out.print(threads_table(shown))


def show(thread_id: str, db: str | None = None, as_json: bool = False) -> None:
    if (problem := thread_id_problem(thread_id)) is not None:
        raise fail(f"not a thread id: {problem}", EXIT_USAGE, as_json)
    with open_reader(db, as_json) as reader:
        if not reader.exists(thread_id):
            raise fail(f"no thread {thread_id} (see `gatehouse threads`)", EXIT_FAILED, as_json)
        info = reader.thread(thread_id)
        messages = reader.transcript(thread_id)
        pending = reader.pending(thread_id)
        usage = reader.usage(thread_id) if as_json else {}
        # Who let each call run, for people (JSON readers have `gatehouse audit`).
        limit = max(50, len(messages or ()))
        decisions = [] if as_json else reader.recent_decisions(thread_id, limit=limit)
    if messages is None:  # a thread this reader cannot rebuild alone (written by a stock saver)
        with _session(db, as_json) as session:
            messages, usage = (view := session.view(thread_id)).transcript, view.usage
    from rich.text import Text

    import gatehouse.ui.term.render as term

    if as_json:
        data = {
            "thread": info.to_dict() if info else {"thread_id": thread_id},
            "messages": [m.to_dict() for m in messages],
            "pending": term.pending_json(pending) if pending else None,
            "usage": usage,
        }
        print_json(data)
        return
    if info:
        style = term.STATUS_STYLE.get(info.status, "")
        updated = ("  updated " + term.when(info.updated_at), "dim")
        out.print(Text.assemble((info.title, "bold"), "  ", (info.status, style), updated))
        if info.reason:
            out.print(Text.assemble((f"■ last run {info.status}: ", style), info.reason))
    term.render_transcript(out, messages, numbered=True, decisions=decisions)
    if pending:
        term.render_pending(out, pending)


def _session(db: str | None, as_json: bool) -> AbstractContextManager[Session]:
    """The Session (LangGraph), for what the reader cannot do alone; no actor."""
    return opened(lambda: graph.open_session(cli_settings(db), source="terminal"), as_json)


def pending(db: str | None = None, as_json: bool = False) -> None:
    with open_reader(db, as_json) as reader:
        if reader.cut_off():
            # A crash cut off an approved call: reading the inbox through the Session
            # continues the thread to its "outcome unknown" question (nothing runs;
            # leasing.py), which is then listed.
            with _session(db, as_json) as session:
                _ = session.thread_list().awaiting_approval
        waiting = reader.awaiting()
        pauses = reader.pending_many([i.thread_id for i in waiting])
        items = [(i, p) for i in waiting if (p := pauses.get(i.thread_id)) is not None]
    if as_json:
        from gatehouse.ui.term.card_json import pending_json

        rows = [
            {"thread_id": i.thread_id, "title": i.title, "pending_since": i.pending_since}
            | pending_json(p)
            for i, p in items
        ]
        print_json(rows)
        return
    import gatehouse.ui.term.render as term

    if not items:
        out.print("Nothing is waiting for a decision.")
    for info, request in items:
        since = f"{info.title} · waiting since {term.when(info.pending_since)}"
        term.render_pending(out, request, since)


COMMANDS: dict[str, Callable[..., None]] = {"threads": threads, "pending": pending, "show": show}


def guarded(run: Callable[[], None]) -> None:
    """Run a command; a bug or a broken install is one line, the traceback on request."""
    try:
        run()
    except Exception as exc:
        if os.environ.get("GATEHOUSE_DEBUG"):
            raise
        from rich.text import Text

        why = f"{type(exc).__name__}: {exc} (set GATEHOUSE_DEBUG=1 for the traceback)"
        err.print(Text(f"gatehouse: unexpected error: {why}", "red"))
        sys.exit(EXIT_FAILED)


def main(command: str, kwargs: dict[str, Any]) -> None:
    # A short process that keeps what it reads: the collector's passes over 10,000
    # cards found nothing to free and took 0.1-0.3 s of `pending --json` (issue 58).
    gc.disable()
    guarded(lambda: COMMANDS[command](**kwargs))

"""The terminal's read-only commands, `threads`, `pending` and `show`, without typer.

A user runs them to look, often in a loop or a prompt, so they must answer at once:
they read the database through `graph.open_reader` (no LangGraph), and none of them
imports typer or pydantic: the pauses and message views they draw are plain
dataclasses, drawn by ui/term/render.py (ui/term/entry.py parses their plain command
lines; tests/test_cli_fast.py checks what each loads). ui/term/cli.py registers the
same functions with typer for `--help` and for the command lines ui/term/fast.py
leaves to it.

A refusal or failure raises SystemExit with the exit code (cli.py's codes), after
saying why on stderr, and with `--json` also on stdout as `{"error", "exit_code"}`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import graph
from graph.protocol.display import visible, visible_json
from graph.protocol.pauses import MalformedPause
from graph.protocol.threads import printable, thread_id_problem

if TYPE_CHECKING:
    from rich.console import Console

    from graph import MessageView, ThreadReader

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


@cache
def out() -> Console:
    from ui.term.console import make_console

    return make_console()


@cache
def err() -> Console:
    from ui.term.console import make_console

    return make_console(stderr=True)


def fail(message: str, code: int, as_json: bool) -> SystemExit:
    """As `ui.term.cli.fail`: the error on stderr; with --json also on stdout."""
    from rich.text import Text

    err().print(Text(f"gatehouse: {visible(message)}", "red"))
    if as_json:
        print(visible_json({"error": message, "exit_code": code}))
    return SystemExit(code)


def absolute_db(db: str | None) -> str | None:
    """`--db` as an absolute path (a URL as given)."""
    if not db or "://" in db:
        return db
    return str(Path(db).expanduser().resolve())


def opening_failed(exc: Exception, as_json: bool) -> SystemExit:
    """A wrong setting is a usage error (2); a database that cannot be used, a failure (1)."""
    return fail(
        str(exc), EXIT_USAGE if isinstance(exc, graph.ConfigError) else EXIT_FAILED, as_json
    )


@contextmanager
def open_reader(db: str | None, as_json: bool) -> Iterator[ThreadReader]:
    """The database, read-only and without LangGraph, at the cost of a query or two."""
    try:
        reader = graph.open_reader(absolute_db(db) or graph.load_settings().db)
    except (graph.ConfigError, graph.StorageError) as exc:
        raise opening_failed(exc, as_json) from None
    try:
        yield reader
    except graph.StorageError as exc:
        raise fail(str(exc), EXIT_FAILED, as_json) from None
    finally:
        reader.close()


def threads(db: str | None = None, as_json: bool = False, limit: int = 50) -> None:
    """List threads: status, pending approvals, last update."""
    with open_reader(db, as_json) as reader:
        where = reader.location
        infos = reader.threads(limit=limit)
        try:
            pauses = reader.pending_many([i.thread_id for i in infos if i.awaiting_approval])
            count = {tid: calls(p) for tid, p in pauses.items()}
        except MalformedPause:  # one query per thread, to count the malformed one as 1
            count = {i.thread_id: reader.pending_count(i.thread_id) for i in infos}
        rows = [{**info.to_dict(), "pending": count.get(info.thread_id, 0)} for info in infos]
    if as_json:
        print(visible_json(rows, indent=2))
        return
    from rich.text import Text

    from ui.term.console import threads_table

    # Which database this is: from another directory it is another file (issue 33).
    out().print(Text(f"Database: {visible(where)}", "dim"))
    if not rows:
        out().print("No threads yet. Start one with `gatehouse chat`.")
    else:
        # Ids and titles as text that cannot drive the terminal (a NUL, an escape sequence).
        out().print(
            threads_table(
                [
                    {**r, "thread_id": printable(r["thread_id"]), "title": printable(r["title"])}
                    for r in rows
                ]
            )
        )


def show(thread_id: str, db: str | None = None, as_json: bool = False) -> None:
    """Print a thread's transcript (and its pending calls)."""
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
        decisions = (
            []
            if as_json
            else reader.recent_decisions(thread_id, limit=max(50, len(messages or ())))
        )
    if messages is None:  # a thread this reader cannot rebuild alone (written by a stock saver)
        messages, usage = _from_session(thread_id, db, as_json)
    from rich.text import Text

    import ui.term.render as term

    if as_json:
        data = {
            "thread": info.to_dict() if info else {"thread_id": thread_id},
            "messages": [m.to_dict() for m in messages],
            "pending": term.pending_json(pending) if pending else None,
            "usage": usage,
        }
        print(visible_json(data, indent=2))
        return
    if info:
        style = term.STATUS_STYLE.get(info.status, "")
        out().print(
            Text.assemble(
                (info.title, "bold"),
                "  ",
                (info.status, style),
                ("  updated " + term.when(info.updated_at), "dim"),
            )
        )
        if info.reason:
            out().print(Text.assemble((f"■ last run {info.status}: ", style), info.reason))
    term.render_transcript(out(), messages, numbered=True, decisions=decisions)
    if pending:
        term.render_pending(out(), pending)


def calls(pause: Any) -> int:
    """How many calls a pause holds (an outcome-unknown one: 1; none: 0)."""
    if pause is None:
        return 0
    return len(pause.actions) if pause.kind == "approval" else 1


@contextmanager
def _session(db: str | None, as_json: bool) -> Iterator[Any]:
    """The Session (LangGraph), for what the reader cannot do alone; no actor."""
    from dataclasses import replace

    try:
        settings = graph.load_settings()
        settings = replace(settings, db=absolute_db(db) or settings.db)
        session = graph.open_session(settings, source="terminal")
    except (graph.ConfigError, graph.StorageError) as exc:
        raise opening_failed(exc, as_json) from None
    try:
        yield session
    except graph.StorageError as exc:
        raise fail(str(exc), EXIT_FAILED, as_json) from None
    finally:
        session.close()


def _from_session(
    thread_id: str, db: str | None, as_json: bool
) -> tuple[list[MessageView], dict[str, float]]:
    """Transcript and usage through the Session: only reading."""
    with _session(db, as_json) as session:
        return (view := session.view(thread_id)).transcript, view.usage


def _recover(db: str | None, as_json: bool) -> None:
    with _session(db, as_json) as session:
        _ = (
            session.thread_list().awaiting_approval
        )  # continues the threads a crash cut off (leasing.py)


def pending(db: str | None = None, as_json: bool = False) -> None:
    """Every thread waiting for a decision, oldest first, with its numbered calls."""
    with open_reader(db, as_json) as reader:
        if reader.cut_off():
            # A crash cut off an approved call: the Session continues the thread to its
            # "outcome unknown" question (nothing runs), which is then listed.
            _recover(db, as_json)
        waiting = reader.awaiting()
        pauses = reader.pending_many([i.thread_id for i in waiting])
        items = [(i, p) for i in waiting if (p := pauses.get(i.thread_id)) is not None]
    import ui.term.render as term

    if as_json:
        print(
            visible_json(
                [
                    {
                        "thread_id": i.thread_id,
                        "title": i.title,
                        "pending_since": i.pending_since,
                        **term.pending_json(p),
                    }
                    for i, p in items
                ],
                indent=2,
            )
        )
        return
    if not items:
        out().print("Nothing is waiting for a decision.")
    for info, request in items:
        term.render_pending(
            out(), request, f"{info.title} · waiting since {term.when(info.pending_since)}"
        )


COMMANDS: dict[str, Callable[..., None]] = {"threads": threads, "pending": pending, "show": show}


def main(command: str, kwargs: dict[str, Any]) -> None:
    """Run a read-only command as parsed by ui/term/fast.py; exits with its code."""
    try:
        COMMANDS[command](**kwargs)
    except Exception as exc:  # a bug or a broken install: one line, the traceback on request
        if os.environ.get("GATEHOUSE_DEBUG"):
            raise
        from rich.text import Text

        err().print(
            Text(
                f"gatehouse: unexpected error: {type(exc).__name__}: {exc} "
                "(set GATEHOUSE_DEBUG=1 for the traceback)",
                "red",
            )
        )
        sys.exit(EXIT_FAILED)

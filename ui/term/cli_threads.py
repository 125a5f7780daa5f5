"""`gatehouse` commands over stored threads: reading, exporting, importing, and changing
their history or permissions (with a run: `fork`)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer

from gatehouse import graph
from gatehouse.ui.term import readonly
from gatehouse.ui.term.cli_base import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    DbOpt,
    JsonOpt,
    Text,
    ThreadArg,
    _check_id,
    _remember_json,
    app,
    emit,
    err,
    fail,
    force_option,
    open_cli_session,
    open_thread,
    ops,
    out,
    printable,
    refusals,
    term,
    thread_option,
    turn_index,
    turn_starts,
    visible,
)
from gatehouse.ui.term.cli_runs import finish_run


@app.command()
def threads(
    db: DbOpt = None,
    as_json: JsonOpt = False,
    limit: Annotated[
        int, typer.Option(metavar="N", help="At most this many, most recent first.")
    ] = 50,
) -> None:
    """List threads: status, pending approvals, last update."""
    readonly.threads(db=db, as_json=as_json, limit=limit)


@app.command()
def show(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Print a thread's transcript (and its pending calls)."""
    readonly.show(thread_id, db=db, as_json=as_json)


@app.command()
def pending(db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Every thread waiting for a decision, oldest first, with its numbered calls."""
    readonly.pending(db=db, as_json=as_json)


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
    with open_thread(db, thread_id) as session:
        text = session.view(thread_id).export(fmt)
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
    its journal and decision log (as history: grants and auto-approve switches are
    dropped, and said so); a paused thread waits again for the same request.

    The thread keeps its exported id unless this database already has a thread by
    that id; then it gets a new one (printed). Nothing is written when the file is
    refused (malformed, a tool call without its result, or a call that could run twice)."""
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text()
    except OSError as exc:
        raise fail(f"cannot read {file}: {exc}", EXIT_USAGE) from None
    with open_cli_session(db) as session:
        try:
            imported = session.submit(ops.ImportThread(text, thread_id)).result()
        except graph.ImportRefused as exc:
            raise fail(f"import refused, nothing written: {exc}", EXIT_USAGE) from None
        new_id, dropped = imported.thread_id, imported.dropped
        count = len(session.view(new_id).messages)
    said = f"imported thread {new_id} ({count} messages)" + (f"\n{dropped}" if dropped else "")
    emit(as_json, {"thread_id": str(new_id), "messages": count, "dropped": dropped}, said)


@app.command()
def delete(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Delete a thread and its history."""
    with open_thread(db, thread_id) as session:
        session.submit(ops.Delete(thread_id))
    emit(as_json, {"thread_id": thread_id, "deleted": True}, f"deleted thread {thread_id}")


@app.command()
def undo(
    thread_id: ThreadArg,
    force: Annotated[bool, force_option("Undo")] = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Drop the thread's last turn (your last message and everything after it; the
    checkpoints keep the history). Refused (exit 3) while the thread waits for a
    decision, unless --force; nothing to undo: exit 2."""
    with open_thread(db, thread_id) as session:
        turns = len(turn_starts(session.view(thread_id).transcript))
        if turns == 0:
            raise fail(f"nothing to undo: thread {thread_id} has no turn of yours", EXIT_USAGE)
        with refusals():
            removed = session.submit(ops.Undo(thread_id, force)).result().removed
    said = f"undone: turn #{turns} ({removed} message(s)) removed from thread {thread_id}"
    emit(as_json, {"thread_id": thread_id, "removed": removed, "turn": turns}, said)


@app.command()
def compact(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Summarise the older part of a thread now (the last turns stay verbatim; the
    checkpoints keep the full history)."""
    with open_thread(db, thread_id) as session, refusals():
        event = session.submit(ops.Compact(thread_id)).result().compacted
    data = {"thread_id": thread_id, "compacted": event is not None}
    nothing = "nothing to compact: the thread has no turns older than the ones kept verbatim"
    extra = term.pick(event, *term.COMPACTED) if event else {}
    emit(as_json, data | extra, term.compacted_line(event) if event else nothing)


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
    with open_thread(db, thread_id) as session:
        text = session.view(thread_id).tool_output(call_id)
    if text is None:
        raise fail(f"thread {thread_id} has no result for tool call {call_id}", EXIT_FAILED)
    # On a terminal, escape sequences in the output are shown, not obeyed (an OSC 52
    # would write the clipboard); piped into a file it stays byte for byte.
    shown = visible(text) if sys.stdout.isatty() else text
    data = {"thread_id": thread_id, "call_id": call_id, "output": text}
    emit(as_json, data, lambda: sys.stdout.write(shown if shown.endswith("\n") else shown + "\n"))


@app.command()
def audit(
    thread: Annotated[str | None, thread_option("Only this thread's decisions.")] = None,
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

        def tampered() -> None:
            err.print(Text(f"Decision log TAMPERED: {result.first_problem}", "bold red"))
            for more in result.problems[1:]:
                err.print(Text(f"  also: {more}", "red"))

        intact = f"Decision log intact: {result.entries} entries, head {result.head}"
        data = term.pick(result, "intact", "entries", "head", "problems")
        emit(as_json, data, intact if result.intact else tampered, indent=2)
        raise typer.Exit(EXIT_OK if result.intact else EXIT_FAILED)
    with open_cli_session(db) as session:
        source = session.view(thread) if thread is not None else session.thread_list()
        records = source.audit(limit)
    draw = partial(term.render_audit, out, records, show_thread=thread is None)
    empty = "No decisions recorded" + (f" for thread {thread}." if thread else " yet.")
    listed(as_json, records, draw, empty)


def listed(
    as_json: bool, found: Sequence[Any], draw: Callable[[], None], empty: str, hint: str = ""
) -> None:
    """A list: each item's dict under --json; else drawn, then `hint` (or `empty`)."""

    def drawn() -> None:
        draw()
        if hint:
            out.print(Text(hint, "dim"))

    emit(as_json, [item.to_dict() for item in found], drawn if found else empty, indent=2)


@app.command()
def grants(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """The thread's standing "always allow" grants in force: which tool (and where),
    who gave it, when, from which front end. "*" is the thread's auto-approve switch."""
    with open_thread(db, thread_id) as session:
        found = session.view(thread_id).grants

    def draw() -> None:
        for g in found:
            when = term.when(g.granted_at)
            who = (f"  (by {g.actor or 'unknown'} via {g.source or 'unknown'}, {when})", "dim")
            label = (printable(g.label), "bold")
            out.print(Text.assemble(label, "  ", printable(g.described), who))

    empty = f"No standing grants in thread {thread_id}: every gated call asks."
    listed(as_json, found, draw, empty, f"Withdraw one with: gatehouse revoke {thread_id} GRANT")


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
    with open_thread(db, thread_id) as session, refusals():
        done = session.submit(ops.Revoke(thread_id, grant)).result().grant
    assert done is not None  # a revoke's answer names the grant it ended
    said = f"Revoked {printable(done.label)} in thread {thread_id}: {done.tool} asks again."
    emit(as_json, {"thread_id": thread_id, "revoked": done.label}, said)


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
    force: Annotated[bool, force_option("Fork")] = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace your message of turn #N with TEXT and run the agent from there (the
    checkpoints keep the old branch). Refused (exit 3) while the thread waits for a
    decision, unless --force."""
    with open_thread(db, thread_id) as session:
        index = turn_index(session.view(thread_id).transcript, thread_id, at)
        with refusals():
            run = session.submit(ops.Fork(thread_id, index, text, force))
        finish_run(session, run, as_json)


@app.command()
def branches(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """The versions of the thread's user messages: a fork, a regenerate, or an undo
    and a new message each make one (the web app shows them as < k/n >)."""
    with open_thread(db, thread_id) as session:
        messages = (view := session.view(thread_id)).transcript
        found = view.branches
    turn = {i: k + 1 for k, i in enumerate(turn_starts(messages))}

    def draw() -> None:
        for versions in found:
            number = (f"#{turn.get(versions.index, '?')}", "bold")
            out.print(Text.assemble(number, f"  version {versions.label}"))
            for k, preview in enumerate(versions.previews):
                now = k == versions.current
                mark = ("  ▸ " if now else "    ", "bold")
                out.print(Text.assemble(mark, f"{k + 1}. ", (preview, "" if now else "dim")))

    empty = f"Thread {thread_id} has one version of each message (it was never forked)."
    listed(as_json, found, draw, empty, f"Switch with: gatehouse switch {thread_id} --at N --to K")


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
    force: Annotated[bool, force_option("Switch")] = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move the thread onto version K of your message of turn #N, where that branch last
    ended a run (nothing runs; the other branches stay). Refused (exit 3) while the
    thread waits for a decision, unless --force."""
    with open_thread(db, thread_id) as session:
        before = (view := session.view(thread_id)).transcript
        index = turn_index(before, thread_id, at)
        versions = next((b for b in view.branches if b.index == index), None)
        if versions is None:
            raise fail(
                f"turn #{at} of thread {thread_id} has no other versions; "
                f"see `gatehouse branches {thread_id}`",
                EXIT_USAGE,
            )
        if not 1 <= to <= (count := len(versions.message_ids)):
            raise fail(f"turn #{at} has versions 1 to {count}, not {to}", EXIT_USAGE)
        with refusals():
            session.submit(ops.SwitchBranch(thread_id, versions.message_ids[to - 1], force))
        messages = len(session.view(thread_id).transcript)
    said = f"thread {thread_id} is on version {to}/{count} of turn #{at} ({messages} messages)"
    data = {"thread_id": thread_id, "at": at, "version": to, "versions": count}
    emit(as_json, data | {"messages": messages}, f"{said}; `gatehouse show {thread_id}` prints it")

"""`gatehouse` commands over stored threads: reading them (`threads`, `show`,
`pending`, `output`, `audit`, `grants`, `branches`), moving them (`export`, `import`),
and changing their history or permissions without a run (`delete`, `undo`, `compact`,
`revoke`, `switch`) or with one (`fork`). `threads`, `show` and `pending` are the
read-only bodies in ui/term/readonly.py, which the console script runs without typer.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

import graph
from graph.protocol import operations as op
from ui.term import readonly
from ui.term.cli_base import (
    EXIT_AWAITING,
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
    ops,
    out,
    printable,
    require_thread,
    term,
    terminal_words,
    thread_option,
    turn_index,
    turn_starts,
    visible,
    visible_json,
)
from ui.term.cli_runs import finish_run


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
            imported = session.submit(op.ImportThread(text, thread_id)).result()
        except graph.ImportRefused as exc:
            raise fail(f"import refused, nothing written: {exc}", EXIT_USAGE) from None
        new_id, dropped = imported.thread_id, imported.dropped
        count = len(session.view(new_id).messages)
    said = f"imported thread {new_id} ({count} messages)" + (f"\n{dropped}" if dropped else "")
    emit(as_json, {"thread_id": str(new_id), "messages": count, "dropped": dropped}, said)


@app.command()
def delete(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Delete a thread and its history."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        session.submit(op.Delete(thread_id))
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
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        turns = len(turn_starts(session.view(thread_id).transcript))
        if turns == 0:
            raise fail(f"nothing to undo: thread {thread_id} has no turn of yours", EXIT_USAGE)
        try:
            removed = session.submit(op.Undo(thread_id, force)).result().removed
        except graph.AwaitingDecision as exc:
            raise fail(terminal_words(exc), EXIT_AWAITING) from None
    emit(
        as_json,
        {"thread_id": thread_id, "removed": removed, "turn": turns},
        f"undone: turn #{turns} ({removed} message(s)) removed from thread {thread_id}",
    )


@app.command()
def compact(thread_id: ThreadArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Summarise the older part of a thread now (the last turns stay verbatim; the
    checkpoints keep the full history)."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        try:
            event = session.submit(op.Compact(thread_id)).result().compacted
        except graph.AwaitingDecision as exc:
            raise fail(str(exc), EXIT_AWAITING) from None
        except ValueError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
    if event is None:
        emit(
            as_json,
            {"thread_id": thread_id, "compacted": False},
            "nothing to compact: the thread has no turns older than the ones kept verbatim",
        )
        return
    emit(
        as_json,
        {
            "thread_id": thread_id,
            "compacted": True,
            "tokens_before": event.tokens_before,
            "tokens_after": event.tokens_after,
            "messages_removed": event.messages_removed,
        },
        f"compacted: {event.messages_removed} messages summarised, "
        f"{event.tokens_before:,} → {event.tokens_after:,} tokens",
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
        text = session.view(thread_id).tool_output(call_id)
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
        if as_json:
            print(
                visible_json(
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
        records = (session.view(thread) if thread is not None else session.thread_list()).audit(
            limit
        )
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
        found = session.view(thread_id).grants
    if as_json:
        print(visible_json([g.to_dict() for g in found], indent=2))
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
            done = session.submit(op.Revoke(thread_id, grant)).result().grant
        except ValueError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
    assert done is not None
    emit(
        as_json,
        {"thread_id": thread_id, "revoked": done.label},
        f"Revoked {printable(done.label)} in thread {thread_id}: {done.tool} asks again.",
    )


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
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        index = turn_index(session.view(thread_id).transcript, thread_id, at)
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
        messages = (view := session.view(thread_id)).transcript
        found = view.branches
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
    force: Annotated[bool, force_option("Switch")] = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move the thread onto version K of your message of turn #N, where that branch last
    ended a run (nothing runs; the other branches stay). Refused (exit 3) while the
    thread waits for a decision, unless --force."""
    with open_cli_session(db) as session:
        require_thread(session, thread_id)
        before = (view := session.view(thread_id)).transcript
        index = turn_index(before, thread_id, at)
        versions = next((b for b in view.branches if b.index == index), None)
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
            session.submit(op.SwitchBranch(thread_id, versions.message_ids[to - 1], force))
        except graph.AwaitingDecision as exc:
            raise fail(terminal_words(exc), EXIT_AWAITING) from None
        except ValueError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
        messages = session.view(thread_id).transcript
    emit(
        as_json,
        {
            "thread_id": thread_id,
            "at": at,
            "version": to,
            "versions": len(versions.message_ids),
            "messages": len(messages),
        },
        f"thread {thread_id} is on version {to}/{len(versions.message_ids)} of turn #{at} "
        f"({len(messages)} messages); `gatehouse show {thread_id}` prints it",
    )

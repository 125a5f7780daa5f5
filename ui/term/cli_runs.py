"""`gatehouse` commands that run the agent and decide its requests. A decision covers only
a request its author has seen: a script names it with --interrupt-id, a person at a
terminal confirms the card."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from gatehouse import graph
from gatehouse.graph.protocol.grant_scope import narrow_grant
from gatehouse.ui.term.cli_base import (
    EXIT_AWAITING,
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_USAGE,
    STATUS_EXIT,
    AutoApproveOpt,
    DbOpt,
    InterruptOpt,
    JsonOpt,
    Text,
    ThreadArg,
    app,
    ask,
    err,
    ev,
    fail,
    open_cli_reader,
    open_cli_session,
    open_thread,
    ops,
    out,
    prepare,
    refusals,
    require_thread,
    td,
    term,
    thread_option,
    visible,
    visible_json,
)

if TYPE_CHECKING:
    from gatehouse.graph import Approval, OutcomeUnknown, Pause, Run, Session, ThreadReader
    from gatehouse.graph.protocol.answers import Decision, OutcomeAnswer, ReviewAnswer
    from gatehouse.ui.term.ask import Check


P = TypeVar("P", "Approval", "OutcomeUnknown")
RESOLVE_HINT = "gatehouse resolve {id} --run-again | --failed NOTE | --outcome TEXT"


def require_pending(
    session: Session | ThreadReader,
    thread_id: str,
    interrupt_id: str | None,
    as_json: bool,
    kind: type[P],
) -> P:
    """The pending request of this `kind` the command decides; refused when it is not the
    one named, or unnamed where nobody can confirm it (a script, --json). The reader leaves
    a wrong name to the session, which says why."""
    view = require_thread(session, thread_id)
    if (pending := view.pending) is None:
        status = view.info.status if view.info else "idle"
        from gatehouse.graph.protocol.decisions import who_decided

        done = who_decided(view.audit(50))  # who beat us to it
        by = f"; already decided: {done}" if done else ""
        gone = (
            f"request {interrupt_id} of thread {thread_id} is no longer pending: it was already decided "
            f"(thread status: {status}{by}); nothing was sent"
        )
        idle = f"thread {thread_id} is not waiting for a decision (status: {status}){by}"
        raise fail(idle if interrupt_id is None else gone, EXIT_USAGE)
    if interrupt_id not in (None, pending.interrupt_id) and not isinstance(
        session, graph.ThreadReader
    ):
        # The session tells a request already decided from one never asked; an empty
        # answer to a request that is not pending is refused before anything else.
        submit(session, ops.Decide(thread_id, ops.review([]), interrupt_id))
        raise fail(
            f"request {interrupt_id} is not the pending request of thread {thread_id}", EXIT_USAGE
        )
    if isinstance(pending, graph.OutcomeUnknown) and kind is not graph.OutcomeUnknown:
        raise fail(
            f"thread {thread_id} is not waiting for an approval: {pending.call.name} was interrupted "
            f"by a crash and its outcome is unknown. Answer it with: {RESOLVE_HINT.format(id=thread_id)}",
            EXIT_USAGE,
        )
    if not isinstance(pending, kind):
        raise fail(
            f"thread {thread_id} is waiting for an approval, not for an unknown outcome; "
            "use approve, reject or respond (see `gatehouse pending`)",
            EXIT_USAGE,
        )
    if interrupt_id is None and (as_json or not (sys.stdin.isatty() and sys.stdout.isatty())):
        raise fail(
            f"name the request this decision is for: add --interrupt-id ID, with the request id that "
            f"`gatehouse pending` or `gatehouse show {thread_id}` prints (`interrupt_id` under --json). "
            "Without it a script could decide a request nobody has seen; nothing was sent.",
            EXIT_USAGE,
        )
    return pending


def submit(session: Session, decide: ops.Decide) -> Run:
    try:
        return session.submit(decide)
    except graph.DecisionError as exc:
        raise fail(f"decision refused, nothing changed: {exc}", EXIT_USAGE) from None


def decide(
    db: str | None,
    thread_id: str,
    interrupt_id: str | None,
    as_json: bool,
    build: Callable[[Approval, Check], ReviewAnswer],
    early: bool = True,
) -> None:
    """Send the answer `build` makes for the pending approval. `early`: first refuse a bad
    one through the reader, before LangGraph is imported (seconds on a busy machine),
    checking JSON and its shape only; it is checked again under the lease."""
    if early:
        with open_cli_reader(db) as reader:
            build(
                require_pending(reader, thread_id, interrupt_id, as_json, graph.Approval),
                lambda n, a: None,
            )
    with open_cli_session(db) as session:
        request = require_pending(session, thread_id, interrupt_id, as_json, graph.Approval)
        send_answer(session, request, build(request, session.check_args), interrupt_id, as_json)


def drive(run: Run, renderer: term.EventRenderer | None) -> tuple[str, list[ev.Event]]:
    """Iterate a run to its end. Ctrl-C asks it to stop at the next safe point (every
    tool call still gets its answer) and keeps iterating; a second Ctrl-C quits hard."""
    events: list[ev.Event] = []
    stopping = False

    def on_sigint(*_: Any) -> None:
        nonlocal stopping
        if stopping:
            # Leave at once: the run's worker thread would keep the process alive until
            # its step ends. The database is consistent at every commit; whatever was cut
            # short is found by the next run (a started call: "outcome unknown").
            resume = f"\n■ quit. The thread stays resumable: gatehouse resume {run.thread_id}"
            err.print(Text(resume, "magenta"))
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_CANCELLED)
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


def finish_run(session: Session, run: Run, as_json: bool) -> None:
    """Drive a run for a non-interactive command and exit with its status."""
    status, events = drive(run, None if as_json else term.EventRenderer(out))
    pending = session.view(run.thread_id).pending if status == "awaiting_approval" else None
    if as_json:
        auto = session.view(run.thread_id).auto_approving
        print(visible_json(term.run_json(run.thread_id, status, events, pending, auto), indent=2))
    elif pending:
        term.render_pending(out, pending)
        hint = (
            RESOLVE_HINT.format(id=run.thread_id)
            if isinstance(pending, graph.OutcomeUnknown)
            else f"gatehouse approve|reject|respond {run.thread_id} "
            f"--interrupt-id {visible(pending.interrupt_id)} …"
        )
        out.print(Text(f"decide with: {hint}", "dim"))
    raise typer.Exit(STATUS_EXIT.get(status, EXIT_FAILED))


def send_answer(
    session: Session,
    pending: Pause,
    answer: ReviewAnswer | OutcomeAnswer,
    interrupt_id: str | None,
    as_json: bool,
) -> None:
    if interrupt_id is None:  # require_pending let it through: a person at a terminal
        # Shown the card and what will be sent, the person says yes; a card's hidden part
        # is paged first (a decision covers only what was seen).
        term.render_pending(out, pending)
        asker = ask.Asker(out, interactive=False)
        try:
            seen = isinstance(pending, graph.OutcomeUnknown) or ask.see_hidden(out, asker, pending)
            for line in td.describe_answer(pending, answer) if seen else []:
                out.print(Text(visible(line), "bold"))
            said = asker.line("send this decision? [y/N] ").strip().lower() if seen else ""
        except (EOFError, KeyboardInterrupt):
            said = ""
        if said not in ("y", "yes"):
            raise fail("not confirmed; nothing was sent", EXIT_USAGE)
        interrupt_id = pending.interrupt_id
    finish_run(
        session, submit(session, ops.Decide(pending.thread_id, answer, interrupt_id)), as_json
    )


@app.command()
def send(
    message: Annotated[str, typer.Argument(metavar="MESSAGE", help="The message to send.")],
    thread: Annotated[
        str | None, thread_option("Continue this thread (default: a new one).")
    ] = None,
    auto_approve: AutoApproveOpt = False,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Send one message and run the agent until it finishes or pauses (exit 3)."""
    with open_cli_session(db) as session:
        prepare(session, thread, auto_approve)
        thread_id = thread or session.new_thread_id()
        if not as_json and (why := session.view(thread_id).auto_approving):
            err.print(term.auto_approve_banner(why))
        with refusals(graph.DecisionError):
            run = session.submit(ops.SendMessage(thread_id, message))
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
        bool,
        typer.Option(
            "--always",
            help="Also always allow exactly these calls in this thread (the same command, "
            "the same file); refused where a call has no such narrow form.",
        ),
    ] = False,
    always_tool: Annotated[
        bool,
        typer.Option(
            "--always-tool",
            help="Also always allow these tools in this thread, whatever their arguments.",
        ),
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
    if always and always_tool:
        raise fail("use either --always or --always-tool, not both", EXIT_USAGE)

    def build(request: Approval, check_args: Check) -> ReviewAnswer:
        count = len(request.actions)
        chosen: dict[int, Decision] = {n: ops.approve() for n in call or ()}
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
            chosen[number] = ops.edit(name, args)
        if all_ or (not chosen and count == 1):
            chosen = {n: chosen.get(n, ops.approve()) for n in range(1, count + 1)}
        elif not chosen:
            raise fail(
                f"thread {thread_id} has {count} pending calls: {td.describe_calls(request)}; "
                "say --all, or --call N (repeatable) with --reject-others REASON",
                EXIT_USAGE,
            )
        # The approvals' standing grant: the narrow one (exactly this command or file) for
        # --always, the whole tool for --always-tool.
        for n, d in list(chosen.items()) if always or always_tool else ():
            if not 1 <= n <= count or d.type not in ("approve", "edit"):
                continue  # td.answer says why a number is wrong
            action = d.edited_action if d.type == "edit" else request.actions[n - 1]
            scope = None if always_tool else narrow_grant(action.name, action.args)
            if always and scope is None:
                raise fail(
                    f"--always: call {n} ({action.name}) has no narrow grant (a command with shell "
                    f"syntax or the network, a path outside the workspace, a move); "
                    f"--always-tool allows every {action.name} call in this thread",
                    EXIT_USAGE,
                )
            chosen[n] = d.model_copy(update={"always_allow": scope.pattern if scope else True})
        others = ops.reject(reject_others or None) if reject_others is not None else None
        with refusals():  # a DecisionUsage: exit 2
            return td.answer(
                request,
                chosen,
                others,
                hint="decide them in the same command: repeat --call, "
                "or use --all or --reject-others REASON",
            )

    decide(db, thread_id, interrupt_id, as_json, build)


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

    def build(request: Approval, check_args: Check) -> ReviewAnswer:
        numbers = call or list(range(1, len(request.actions) + 1))
        with refusals():
            return td.answer(
                request,
                dict.fromkeys(numbers, ops.reject(reason or None)),
                ops.approve() if approve_others else None,
                hint="decide them in the same command: repeat --call, or use --approve-others",
            )

    decide(db, thread_id, interrupt_id, as_json, build)


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
    if reject_others is not None and approve_others:
        raise fail("use either --reject-others or --approve-others, not both", EXIT_USAGE)
    others = ops.approve() if approve_others else None

    def build(request: Approval, check_args: Check) -> ReviewAnswer:
        if call is None and len(request.actions) != 1:
            raise fail(
                f"thread {thread_id} has {len(request.actions)} pending calls: "
                f"{td.describe_calls(request)}; say which with --call N",
                EXIT_USAGE,
            )
        with refusals():
            return td.answer(
                request,
                {1 if call is None else call: ops.respond(message)},
                ops.reject(reject_others or None) if reject_others is not None else others,
                hint="decide them in the same command: --reject-others REASON or --approve-others",
            )

    decide(db, thread_id, interrupt_id, as_json, build, early=False)


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
    given = ("--run-again", run_again), ("--failed", failed), ("--outcome", outcome)
    chosen = [flag for flag, value in given if value not in (None, False)]
    if len(chosen) != 1:
        raise fail(
            "say exactly one of --run-again, --failed NOTE or --outcome TEXT"
            + (f" (got {', '.join(chosen)})" if chosen else ""),
            EXIT_USAGE,
        )
    if outcome is not None and not outcome.strip():
        raise fail("--outcome cannot be empty", EXIT_USAGE)
    with open_cli_session(db) as session:
        request = require_pending(session, thread_id, interrupt_id, as_json, graph.OutcomeUnknown)
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
    with open_thread(db, thread_id) as session:
        if session.view(thread_id).pending is not None:
            raise fail(
                f"thread {thread_id} is waiting for a decision; use approve, reject, respond or resolve "
                "(see `gatehouse pending`)",
                EXIT_AWAITING,
            )
        finish_run(session, session.submit(ops.Retry(thread_id)), as_json)

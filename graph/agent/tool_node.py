"""The `run_tool` node: one task per call (a `Send`), so a finished sibling is a
pending write, never re-run on resume.

A call with side effects is journaled before and after it runs, bound to its id, tool
and canonical arguments. The claim comes first, and finds the row already there when
the node re-runs (from its start, when an "outcome unknown" interrupt is answered):
finished, the stored result answers; started, never finished, the person is asked. A gated call runs only on a recorded
approval of exactly this call (or an auto-approval recorded here); a task that
reaches the node any other way (a forged `Send`, a state edit) gets a notice only.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command

from gatehouse.graph.agent import crash
from gatehouse.graph.agent import tool_messages as say
from gatehouse.graph.agent.authority import ask_outcome, enter
from gatehouse.graph.agent.call_ids import id_of
from gatehouse.graph.agent.context import RunContext, context_of
from gatehouse.graph.agent.deps import AgentDeps, GateReads, JournalEntry
from gatehouse.graph.agent.emit import decided_by, emit, thread_of
from gatehouse.graph.agent.gate import (
    Approved,
    AutoApproved,
    Invalid,
    Permit,
    Refused,
    RunFree,
    answer_permit,
    auto_approving,
    gate_reads,
    invalid_permit,
    judge,
    keep_read,
    permit,
)
from gatehouse.graph.agent.offload import fit_output
from gatehouse.graph.agent.policy import Grant
from gatehouse.graph.agent.state import ToolTask
from gatehouse.graph.agent.tool_call import finished, invoke_tool
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.decisions import (
    ALWAYS_ALLOWED,
    AUTO_APPROVE,
    STANDING_QUESTION,
    DecisionRecord,
    canonical_args,
    grant_label,
)
from gatehouse.graph.protocol.errors import CallAlreadyStarted
from gatehouse.graph.protocol.events import ToolStatus
from gatehouse.graph.protocol.pauses import InterruptedCall, OutcomeRequest
from gatehouse.graph.protocol.threads import DECISION_KEY, GRANT_KEY
from gatehouse.graph.protocol.tools import spec_of


def run_tool(
    task: ToolTask,
    config: RunnableConfig,
    runtime: Runtime[RunContext],
    *,
    deps: AgentDeps,
    stop: threading.Event | None = None,
) -> Command:
    """`stop`: the call's stop signal when not the run's cancel event (cancel_bridge.py)."""
    call, mode = task["call"], task["mode"]
    decision: str | None = None
    grant: str | None = None
    found: Permit | Invalid | Refused | None
    if mode == "run":
        if task.get("decision") == AUTO_APPROVE:
            record_auto_approval(call, config, runtime, deps)
        found = permit(call, config, runtime, deps, task)
    elif mode == "invalid":
        found = invalid_permit(call, deps)
    else:
        found = answer_permit(call, task, config, runtime, deps)
    if isinstance(found, Refused):
        emit(ev.Notice, text=found.reason, source="gate")
        return Command(goto=())
    if isinstance(found, Approved):
        decision = found.decision
    elif isinstance(found, Invalid):
        task = {**task, "note": found.problem}
    elif isinstance(found, RunFree) and found.grant:
        grant = record_grant_run(call, found.grant, config, runtime, deps)
        decision = ALWAYS_ALLOWED if grant else None
    task = {**task, "grant": grant}  # only what the decision log says, whatever the task claimed
    ctx = context_of(runtime)
    update = run_call(
        task, config, deps, decision, stop=stop or (ctx.cancel if ctx is not None else None)
    )
    return Command(goto="model" if task.get("moves_on", True) else (), update=update)


def run_call(
    task: ToolTask,
    config: RunnableConfig,
    deps: AgentDeps,
    decision: str | None = None,
    *,
    stop: threading.Event | None = None,
) -> dict[str, Any]:
    """Run (or answer) one call. `decision`: how a gated call was approved, kept with
    its result and on the stream. `stop`: the run's cancel signal."""
    call, mode = task["call"], task["mode"]
    tool = deps.tools.get(call["name"])
    journal = deps.journal
    # Every tool but a read-only one, whatever it says about idempotence: at-most-once
    # is about the person's intent (a rewritten file undoes their later edit).
    spec = spec_of(tool) if tool is not None else None
    journaled = (
        journal is not None
        and mode == "run"
        and spec is not None
        and not (spec.risk == "read" and spec.idempotent)
    )
    thread_id = thread_of(config)
    # A call waits for a slot (max_parallel_tools), announced once it really starts.
    with (
        deps.tool_slots.slot(thread_id) if mode == "run" else nullcontext(),
        executing(thread_id, call) if journaled else nullcontext(False) as elsewhere,
    ):
        # The claim is atomic in the database: of two runs resuming one approval at
        # once, the second finds the first's row here and never runs the call.
        recorded = journal.claim(thread_id, call) if journal is not None and journaled else None
        if recorded is not None and journal is not None:
            answered = _claimed_before(call, recorded, elsewhere, config, deps)
            if answered is not None:
                return answered
            journal.restart(thread_id, call, recorded.attempts)
        if journaled:
            crash.crash_point("before_tool")
        emit(
            ev.ToolStarted,
            call_id=call["id"],
            name=call["name"],
            args=call["args"],
            auto_approved=decision == AUTO_APPROVE,
            grant=task.get("grant"),
        )
        if mode == "run":
            msg, ms, status = _execute(task, config, deps, journaled, stop)
        elif (answer_as := _ANSWERS.get(mode)) is None:  # refused by run_tool (answer_permit)
            raise ValueError(f"unknown tool task mode {mode!r}")
        else:
            (msg, status), ms = answer_as(call, task.get("note")), 0.0
    if decision is not None:  # the history shows how the call was approved
        msg.additional_kwargs[DECISION_KEY] = decision
        if task.get("grant"):
            msg.additional_kwargs[GRANT_KEY] = task["grant"]
    return {"messages": [finished(call, msg, status, ms)]}


# How a task that does not run its call answers it: (result, status).
_ANSWERS: dict[str, Callable[[ToolCall, str | None], tuple[ToolMessage, ToolStatus]]] = {
    "deny": lambda call, note: (say.denied(call), "denied"),
    "invalid": lambda call, note: (say.invalid_for_review(call, note), "error"),
    "skip": lambda call, note: (say.error_result(call, say.not_run(note)), "error"),
    "reject": lambda call, note: (say.rejected(call, note), "rejected"),
    "respond": lambda call, note: (say.responded(call, note or ""), "responded"),
}


def _execute(
    task: ToolTask,
    config: RunnableConfig,
    deps: AgentDeps,
    journaled: bool,
    stop: threading.Event | None,
) -> tuple[ToolMessage, float, ToolStatus]:
    """Run a claimed call, record its result."""
    call, journal, thread_id = task["call"], deps.journal, thread_of(config)
    tool = deps.tools.get(call["name"])
    start = time.perf_counter()
    msg = invoke_tool(tool, call, config, deps.tools, stop)
    ms = (time.perf_counter() - start) * 1000
    status: ToolStatus = "error" if msg.status == "error" else "ok"
    if stop is not None and stop.is_set():
        # Cut short by the person (a side effect may be half done): say so.
        msg.content = say.stopped_while_running(msg.content, ms / 1000)
        msg.status = "error"
        status = "stopped"
    if note := task.get("note"):
        msg.content = say.with_note(note, msg.content)
    # A large output is stored aside before the journal records the result that
    # points at it (a replayed result always finds its output).
    msg = fit_output(msg, call, thread_id, deps.outputs, deps.offload)
    crash.crash_point("after_offload")
    if journal is not None and journaled:
        journal.finish(thread_id, call, msg)
        crash.crash_point("after_tool")
    return msg, ms, status


def _claimed_before(
    call: ToolCall,
    recorded: JournalEntry,
    elsewhere: bool,
    config: RunnableConfig,
    deps: AgentDeps,
) -> dict[str, Any] | None:
    """The answer for a call the journal held a row for already, or None: "run again"."""
    thread_id, journal = thread_of(config), deps.journal
    if recorded.finished and recorded.result is not None:
        # The tool ran but the checkpoint never saw its result: use the stored one.
        return _journaled_answer(call, recorded.result, "ok")
    if elsewhere:
        # Running now in this process (another client resumed the same approval).
        raise CallAlreadyStarted(
            f"{call['name']} (call {call['id']}) is running now for another run on thread {thread_id}; "
            "it was not run again here. Reload the thread to see its result."
        )
    # Started, never finished: ask. One interrupt per crashed attempt, so a "run
    # again" whose re-run crashed too is not replayed by the next resume.
    for _ in range(max(1, recorded.attempts)):
        answer = ask_outcome(outcome_request(call, recorded), call, recorded.attempts, deps, config)
        if answer.type != "run_again":
            msg = (
                say.responded(call, answer.message or "")
                if answer.type == "respond"
                else say.outcome_failed(call, answer.message)
            )
            if journal is not None:
                journal.finish(thread_id, call, msg)
            return _journaled_answer(call, msg, "responded")
    return None


def _journaled_answer(call: ToolCall, msg: ToolMessage, status: ToolStatus) -> dict[str, Any]:
    """A result read from the journal: `status` unless it is an error."""
    emit(ev.ToolStarted, call_id=call["id"], name=call["name"], args=call["args"])
    return {"messages": [finished(call, msg, "error" if msg.status == "error" else status)]}


def outcome_request(call: ToolCall, entry: JournalEntry) -> dict[str, Any]:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.started_at))
    return OutcomeRequest(
        outcome_unknown=InterruptedCall(
            tool_call_id=id_of(call),
            name=call["name"],
            args=call["args"],
            started_at=entry.started_at,
            attempts=entry.attempts,
        ),
        description=(
            f"{call['name']} started at {when} but the process stopped before its result was saved, "
            "so it may or may not have done its work. Run it again, mark it as failed (with a note "
            "for the model), or respond with what really happened."
        ),
    ).wire()


# -- what the node writes to the decision log besides a person's answer, through the
# one door: an auto-approval, and a run a standing grant (found in the log, never in a
# task) let through, so front ends show why nobody was asked.
def record_auto_approval(
    call: ToolCall, config: RunnableConfig, runtime: Runtime[RunContext], deps: AgentDeps
) -> None:
    """Record the auto-approval a task claims, when the gate, asked afresh, gives it.
    A node writes it, not the route that sent the task: routes also run for state edits."""
    if deps.decisions is None:
        return
    thread_id = thread_of(config)
    grants, records = gate_reads({}, deps, thread_id, [id_of(call)], config, runtime)
    auto = auto_approving(runtime, deps, grants)
    verdict = (
        judge(call, deps, thread_id, grants, runtime, auto=auto, records=records) if auto else None
    )
    if not isinstance(verdict, AutoApproved):
        return  # already recorded (a re-run), or not auto-approved: permit decides
    message = f"auto-approved: auto-approve is on for this {verdict.by}"
    reads = _enter(call, config, deps, "review", AUTO_APPROVE, message, read_back=True)
    keep_read(config, runtime, thread_id, [id_of(call)], reads, ahead=0)  # `permit` reads it


def record_grant_run(
    call: ToolCall,
    grant: Grant,
    config: RunnableConfig,
    runtime: Runtime[RunContext] | None,
    deps: AgentDeps,
) -> str | None:
    """Log that `grant` is why `call` runs, and return its label; None without a log, or
    when a person approved this very call (the grant came with that approval)."""
    if deps.decisions is None:
        return None
    records = gate_reads({}, deps, thread_of(config), [id_of(call)], config, runtime)[1]
    if any(r.question == "review" and r.runs for r in records):
        return None
    label = grant_label(grant.tool, grant.pattern)
    # The grant's own record says who gave it; this one, which run it let through.
    message = f"ran without asking: always allowed in this thread by the grant {label}"
    _enter(call, config, deps, STANDING_QUESTION, ALWAYS_ALLOWED, message)
    return label


def _enter(
    call: ToolCall,
    config: RunnableConfig,
    deps: AgentDeps,
    question: str,
    decision: str,
    message: str,
    read_back: bool = False,
) -> GateReads | None:
    who = decided_by(config)
    record = DecisionRecord(
        thread_id=thread_of(config),
        question=question,
        tool_call_id=id_of(call),
        tool=call["name"],
        decision=decision,
        args=call["args"],
        message=message,
        source=who["source"],
        actor=who["actor"],
        decided_at=time.time(),
    )
    return enter(deps.decisions, deps.policy, [record], read_back=read_back)


# -- the journaled calls this process executes now: a "started" row of one of them is
# no crash to ask about (the stray resume value would answer it): `CallAlreadyStarted`.
_lock = threading.Lock()
# How many runs of this process hold each call (a claim that lost still counts while it unwinds).
_running: Counter[tuple[str, str | None, str, str]] = Counter()


def _key(thread_id: str, call: ToolCall) -> tuple[str, str | None, str, str]:
    return (thread_id, call["id"], call["name"], canonical_args(call["args"]))


@contextmanager
def executing(thread_id: str, call: ToolCall) -> Iterator[bool]:
    """Hold the call as executing here; yields whether another run held it already."""
    key = _key(thread_id, call)
    with _lock:
        elsewhere = key in _running
        _running[key] += 1
    try:
        yield elsewhere
    finally:
        with _lock:
            _running[key] -= 1
            if _running[key] <= 0:
                del _running[key]

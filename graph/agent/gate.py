"""The gate: may this tool call run? One module answers it, for every node that asks.

`judge` gives a typed verdict (`CallVerdict`) from the call, the decision log, the
journal, the policy and the auto-approve mode (the thread's switch in the log or the
Session's private run context, never client input; never for a tool with approvers).
`run_tool` asks again (`permit`, `invalid_permit`, `answer_permit`) from the log and the
schema, never from its task: a forged `Send`, a state edit or a raw `Command` reaches it.
The log is read once per run step (`gate_reads`): a grant or revoke from elsewhere
reaches the next step.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from gatehouse.graph.agent.authority import grant_holds
from gatehouse.graph.agent.call_ids import id_of
from gatehouse.graph.agent.context import RunContext, context_of, session_auto_approves
from gatehouse.graph.agent.deps import AgentDeps, DecisionLog, GateReads
from gatehouse.graph.agent.emit import thread_of
from gatehouse.graph.agent.history import unanswered
from gatehouse.graph.agent.policy import Grant, Verdict
from gatehouse.graph.agent.state import AgentState, ToolTask
from gatehouse.graph.agent.tool_call import args_problem
from gatehouse.graph.protocol.decisions import ALL_TOOLS, AUTO_APPROVE, DecisionRecord

AutoMode = Literal["thread", "session"]


@dataclass(frozen=True)
class RunFree:
    grant: Grant | None = None  # the standing grant that lets it run, when that is why


@dataclass(frozen=True)
class Denied:
    pass


@dataclass(frozen=True)
class Invalid:
    problem: str  # gated, arguments fail the schema: answered with the error, nobody asked


@dataclass(frozen=True)
class Decided:
    task: ToolTask  # as the decision log says: run (maybe edited), reject or respond


@dataclass(frozen=True)
class Journaled:
    task: ToolTask  # decided and finished: run_tool answers with the journaled result


@dataclass(frozen=True)
class AutoApproved:
    by: AutoMode


@dataclass(frozen=True)
class Ask:
    verdict: Verdict  # what the card offers: allowed decisions, description, approvers


CallVerdict = RunFree | Denied | Invalid | Decided | Journaled | AutoApproved | Ask


# run_tool's question: may this task run here?
@dataclass(frozen=True)
class Approved:
    decision: str  # "approve", "edit", "auto_approve"


@dataclass(frozen=True)
class Refused:
    reason: str


Permit = RunFree | Approved | Refused


def gate_reads(
    state: Mapping[str, Any],
    deps: AgentDeps,
    thread_id: str,
    call_ids: Sequence[str],
    config: RunnableConfig | None = None,
    runtime: Runtime[RunContext] | None = None,
) -> tuple[list[Grant], list[DecisionRecord]]:
    """The thread's grants whose giver may still decide their tool, and the records
    under `call_ids`, in one read of the decision log (one per run step: `_read_log`);
    without one, state's grants."""
    if deps.decisions is None:
        return [Grant.from_dict(g) for g in state.get("grants") or []], []
    standing, records = _read_log(deps.decisions, thread_id, call_ids, config, runtime)
    return [Grant(g.tool, g.pattern) for g in standing if grant_holds(g, deps.policy)], records


@dataclass(frozen=True)
class _Read:
    """A read of the log a run keeps (`RunContext.gate_reads`): for the tasks of `step`,
    `reads` of `ids` (None: no read yet, `ids` is what the step will ask about)."""

    step: int
    ids: frozenset[str]
    reads: GateReads | None = None


def _read_log(
    log: DecisionLog,
    thread_id: str,
    call_ids: Sequence[str],
    config: RunnableConfig | None,
    runtime: Runtime[RunContext] | None,
) -> GateReads:
    """The log's grants and records under `call_ids`, read once per run step: the
    tasks of one step (a review and its free calls, run at once) share one read, so
    each sees one state of the log; a grant or revoke from elsewhere reaches the next
    step. The steps after a decision this run wrote use the read made in its
    transaction (`keep_read`): nothing is newer."""
    ctx, step = context_of(runtime), step_of(config)
    if ctx is None or step is None:
        return log.gate_reads(thread_id, call_ids)
    wanted = frozenset(call_ids)
    with ctx.gate_lock:  # the step's other tasks wait for this read, not read again
        kept = ctx.gate_reads.get(thread_id)
        kept = kept if isinstance(kept, _Read) and kept.step == step else None
        if kept is None or kept.reads is None or not wanted <= kept.ids:
            ids = wanted | (kept.ids if kept is not None else frozenset())
            kept = ctx.gate_reads[thread_id] = _Read(
                step, ids, log.gate_reads(thread_id, sorted(ids))
            )
        assert kept.reads is not None
        standing, records = kept.reads
    return standing, [r for r in records if r.tool_call_id in wanted]


def step_of(config: RunnableConfig | None) -> int | None:
    step = ((config or {}).get("metadata") or {}).get("langgraph_step")
    return step if isinstance(step, int) else None


def keep_read(
    config: RunnableConfig,
    runtime: Runtime[RunContext] | None,
    thread_id: str,
    call_ids: Sequence[str],
    reads: GateReads | None = None,
    *,
    ahead: int = 1,
) -> None:
    """Keep for the tasks of the step `ahead` of this one what they will ask about
    (`reads` None: the read is theirs to make), or `reads` made in the transaction of a
    decision this run just wrote. Under the lock: a read that began before the write
    was kept before this."""
    ctx, step = context_of(runtime), step_of(config)
    if ctx is not None and step is not None:
        with ctx.gate_lock:
            ctx.gate_reads[thread_id] = _Read(step + ahead, frozenset(call_ids), reads)


def policy_verdict(
    call: ToolCall,
    deps: AgentDeps,
    thread_id: str,
    grants: list[Grant],
    runtime: Runtime[RunContext] | None,
) -> Verdict:
    """The policy's verdict, once per run, keyed by all it depends on."""
    tool = deps.tools.get(call["name"])
    ctx = context_of(runtime)
    if ctx is None:
        return deps.policy.evaluate(call["name"], call["args"], tool, grants)
    args = json.dumps(call["args"], sort_keys=True, default=repr)
    key = (id(deps.policy), thread_id, call["id"], call["name"], args, tuple(grants))
    found: Verdict | None = ctx.verdicts.get(key)
    if found is None:
        found = ctx.verdicts[key] = deps.policy.evaluate(call["name"], call["args"], tool, grants)
    return found


def judge(
    call: ToolCall,
    deps: AgentDeps,
    thread_id: str,
    grants: list[Grant],
    runtime: Runtime[RunContext] | None,
    *,
    reviewing: bool = False,
    auto: AutoMode | None = None,
    records: Sequence[DecisionRecord] | None = None,
) -> CallVerdict:
    """The verdict on one open call. The review (`reviewing`, re-run on resume) asks
    what it asked before, except a call the journal shows finished; never auto-approves."""
    verdict = policy_verdict(call, deps, thread_id, grants, runtime)
    if verdict.mode == "allow":
        return RunFree(verdict.grant)
    if verdict.mode == "deny":
        return Denied()
    tool = deps.tools.get(call["name"])
    if tool is not None and (problem := args_problem(tool, call["args"])) is not None:
        return Invalid(problem)
    decided = decided_task(call, deps, thread_id, records)
    if decided is not None and not reviewing:
        return Decided(decided)
    if decided is not None and ran_already(decided, deps, thread_id):
        return Journaled(decided)
    if not reviewing and auto is not None and not verdict.approvers:
        # Auto-approve is someone's switch, and they may not be among the tool's approvers.
        return AutoApproved(auto)
    return Ask(verdict)


def task_for(call: ToolCall, verdict: CallVerdict) -> ToolTask | None:
    """The `run_tool` task a verdict sends (None: the call is asked in the review)."""
    if isinstance(verdict, RunFree):
        return {"call": call, "mode": "run"}
    if isinstance(verdict, Denied):
        return {"call": call, "mode": "deny"}
    if isinstance(verdict, Invalid):
        return {"call": call, "mode": "invalid", "note": verdict.problem}
    if isinstance(verdict, Decided):
        return verdict.task
    if isinstance(verdict, Journaled):
        return {**verdict.task, "replayed": True}
    if isinstance(verdict, AutoApproved):
        return {"call": call, "mode": "run", "decision": AUTO_APPROVE, "note": None}
    return None


def split_turn(
    state: AgentState,
    deps: AgentDeps,
    thread_id: str,
    runtime: Runtime[RunContext] | None,
    *,
    reviewing: bool = False,
    auto: AutoMode | None = None,
    reads: tuple[list[Grant], list[DecisionRecord]] | None = None,
    config: RunnableConfig | None = None,
) -> tuple[list[ToolTask], list[tuple[ToolCall, Verdict]]]:
    """The turn's open calls: tasks to send now, and calls to review with their verdict."""
    calls = unanswered(state)
    ids = [id_of(c) for c in calls]
    grants, records = reads or gate_reads(state, deps, thread_id, ids, config, runtime)
    now: list[ToolTask] = []
    gated: list[tuple[ToolCall, Verdict]] = []
    for call in calls:
        verdict = judge(
            call, deps, thread_id, grants, runtime, reviewing=reviewing, auto=auto, records=records
        )
        if isinstance(verdict, Ask):
            gated.append((call, verdict.verdict))
        elif (task := task_for(call, verdict)) is not None:
            now.append(task)
    return now, gated


def auto_approving(
    runtime: Runtime[RunContext] | None, deps: AgentDeps, grants: list[Grant]
) -> AutoMode | None:
    """Whose auto-approve is on: the thread's switch (in the decision log only), the Session's."""
    if deps.decisions is not None and any(g.tool == ALL_TOOLS for g in grants):
        return "thread"
    if session_auto_approves(runtime):
        return "session"
    return None


def decided_task(
    call: ToolCall,
    deps: AgentDeps,
    thread_id: str,
    records: Sequence[DecisionRecord] | None = None,
) -> ToolTask | None:
    """The task for a call the log holds a review answer for, bound to exactly this
    call (id, tool, canonical arguments), never another that reuses its id."""
    if deps.decisions is None:
        return None
    if records is None:
        records = deps.decisions.approvals(thread_id, id_of(call))
    answered = [r for r in records if r.question == "review" and r.binds(call)]
    if not answered:
        return None
    record = answered[-1]
    if record.runs:
        return {"call": {**call, "args": record.args}, "mode": "run"}
    return {
        "call": call,
        "mode": "reject" if record.decision == "reject" else "respond",
        "note": record.message,
    }


def ran_already(task: ToolTask, deps: AgentDeps, thread_id: str) -> bool:
    """Whether the journal holds this decided call finished (not just started)."""
    if task["mode"] != "run" or deps.journal is None:
        return False
    entry = deps.journal.find(thread_id, task["call"])
    return entry is not None and entry.finished


def permit(
    call: ToolCall,
    config: RunnableConfig,
    runtime: Runtime[RunContext] | None,
    deps: AgentDeps,
    task: ToolTask,
) -> Permit:
    """`RunFree` when the policy lets it run, `Approved` on a recorded approval of
    exactly this call as it runs, else `Refused` (no log: the task is all there is)."""
    if deps.decisions is None:
        decision = task.get("decision")
        return Approved(decision) if decision else RunFree()
    thread_id = thread_of(config)
    grants, records = gate_reads({}, deps, thread_id, [id_of(call)], config, runtime)
    verdict = policy_verdict(call, deps, thread_id, grants, runtime)
    if verdict.mode == "allow":
        return RunFree(verdict.grant)
    approving = [
        r for r in records if r.question == "review" and r.runs and r.binds(call, as_run=True)
    ]
    if verdict.mode == "ask" and approving:
        return Approved(approving[-1].decision)
    return Refused(
        f"Refused a task to run {call['name']} (call {call['id']}): no person approved this call with "
        "these arguments. It did not run."
    )


def invalid_permit(call: ToolCall, deps: AgentDeps) -> Invalid | Refused:
    """Answer as invalid only arguments that really fail the schema (checked, not believed)."""
    tool = deps.tools.get(call["name"])
    problem = args_problem(tool, call["args"]) if tool is not None else None
    if problem is None:
        return Refused(
            f"Refused a task that called the arguments of {call['name']} (call {call['id']}) invalid; "
            "they fit the tool. Nothing was answered."
        )
    return Invalid(problem)


def answer_permit(
    call: ToolCall,
    task: ToolTask,
    config: RunnableConfig,
    runtime: Runtime[RunContext] | None,
    deps: AgentDeps,
) -> Refused | None:
    """Whether `run_tool` may answer the call as its task says: "deny" if the policy
    denies it, "reject" / "respond" as the log holds for exactly this call, "skip" (a
    stopped run) always; a claimed answer nobody gave is refused, the call waits."""
    mode = task["mode"]
    thread_id = thread_of(config)
    if mode == "deny":
        grants = gate_reads({}, deps, thread_id, (), config, runtime)[0]
        if policy_verdict(call, deps, thread_id, grants, runtime).mode == "deny":
            return None
    elif mode in ("reject", "respond"):
        if deps.decisions is None:
            return None  # nothing but the tasks to go by (as `permit`)
        records = gate_reads({}, deps, thread_id, [id_of(call)], config, runtime)[1]
        decided = decided_task(call, deps, thread_id, records)
        if decided and (decided["mode"], decided.get("note")) == (mode, task.get("note")):
            return None
    elif mode == "skip":
        return None
    else:
        # Not a mode Gatehouse sends: refused, never taken as "run" (a forged task).
        return Refused(
            f"Refused a task for {call['name']} (call {call['id']}) with an unknown mode {mode!r}. "
            "Nothing ran or was answered."
        )
    return Refused(
        f"Refused a task to answer {call['name']} (call {call['id']}) as {mode}: no person or "
        "policy gave that answer. Nothing was answered."
    )

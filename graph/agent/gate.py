"""The gate: may this tool call run? One module answers it, for every node that asks.

Given a call and what the thread holds (its grants and decisions in the decision
log, the journal), the policy and the auto-approve mode, the answer is a typed
verdict (`CallVerdict`):
- `RunFree`: the policy allows it (maybe through a standing grant, named);
- `Denied`: the policy refuses it; nobody is asked;
- `Invalid`: a call the policy gates whose arguments fail the tool's schema,
  answered with the validation error (a person would only approve a call that
  cannot run);
- `Decided`: a person already answered exactly this call (its run was cut off by a
  crash, or new input arrived before the answer was saved): it goes on as decided;
- `Journaled`: decided and already run (a replay of a checkpoint from before it
  ran): its journaled result, never a second run;
- `AutoApproved`: auto-approve is on for the thread (a switch in the decision log)
  or for the Session that started the run (a private field of the run context); the
  approval is recorded by run_tool before the call runs. No client can turn it on: not by
  run input, config, context, a state edit or a `Command`. `deny` still refuses, and
  a tool with named approvers is never approved automatically;
- `Ask`: a person decides (the review's card, with the policy's verdict).

`run_tool` asks again before a call runs (`permit`) or is answered as invalid
(`invalid_permit`), from the decision log and the tool's schema, never from its task: a client's forged `Send`, a state edit or a raw `Command` reaches that
node too. So the gate holds on every path, whatever a task claims.

The policy is evaluated once per call per run (`policy_verdict`): the verdict of a
call, for the thread's grants as they are, is kept in the run's context (private to
the process) and reused by the steps after the one that computed it (routing, the
review, run_tool). A new run (a resume, days later) evaluates afresh.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graph.agent.authority import grant_holds
from graph.agent.call_ids import id_of
from graph.agent.context import RunContext, context_of, session_auto_approves
from graph.agent.deps import AgentDeps
from graph.agent.emit import thread_of
from graph.agent.history import unanswered
from graph.agent.policy import Grant, Verdict
from graph.agent.state import AgentState, ToolTask
from graph.agent.tool_call import args_problem
from graph.protocol.decisions import ALL_TOOLS, AUTO_APPROVE

AutoMode = Literal["thread", "session"]


@dataclass(frozen=True)
class RunFree:
    grant: Grant | None = None  # the standing grant that lets it run, when that is why


@dataclass(frozen=True)
class Denied:
    pass


@dataclass(frozen=True)
class Invalid:
    problem: str


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


# -- run_tool's question: may this task run here? --------------------------------------
@dataclass(frozen=True)
class Free:
    grant: Grant | None = None


@dataclass(frozen=True)
class Approved:
    decision: str  # "approve", "edit", "auto_approve"


@dataclass(frozen=True)
class Refused:
    reason: str


Permit = Free | Approved | Refused


def grants_of(state: Mapping[str, Any], deps: AgentDeps, thread_id: str) -> list[Grant]:
    """The thread's "always allow" grants: from the decision log when there is one
    (state is what clients can write), as the door wrote them in this thread's life
    and whose giver may still decide their tool; else from the state."""
    if deps.decisions is not None:
        return [
            Grant(tool=g.tool, pattern=g.pattern)
            for g in deps.decisions.grants(thread_id)
            if grant_holds(g, deps.policy)
        ]
    return [Grant.from_dict(g) for g in state.get("grants") or []]


def policy_verdict(
    call: ToolCall,
    deps: AgentDeps,
    thread_id: str,
    grants: list[Grant],
    runtime: Runtime[RunContext] | None,
) -> Verdict:
    """The policy's verdict on `call` under `grants`, evaluated once per run: the key is
    everything the verdict is a function of (the call's id, tool and arguments, the
    grants), so a reuse answers exactly what an evaluation would."""
    tool = deps.tools.get(call["name"])
    ctx = context_of(runtime)
    if ctx is None:
        return deps.policy.evaluate(call["name"], call["args"], tool, grants)
    key = (
        id(deps.policy),
        thread_id,
        call["id"],
        call["name"],
        _args_key(call["args"]),
        tuple(grants),
    )
    found: Verdict | None = ctx.verdicts.get(key)
    if found is None:
        found = ctx.verdicts[key] = deps.policy.evaluate(call["name"], call["args"], tool, grants)
    return found


def _args_key(args: Mapping[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, default=repr)


def judge(
    call: ToolCall,
    deps: AgentDeps,
    thread_id: str,
    grants: list[Grant],
    runtime: Runtime[RunContext] | None,
    *,
    reviewing: bool = False,
    auto: AutoMode | None = None,
) -> CallVerdict:
    """The gate's verdict on one open call of the turn. The review (`reviewing`) must
    ask what it asked before it paused, whatever was decided since (it runs again from
    its start on resume), except a call the journal shows already finished; it never
    auto-approves (routing did, before the review)."""
    verdict = policy_verdict(call, deps, thread_id, grants, runtime)
    if verdict.mode == "allow":
        return RunFree(verdict.grant)
    if verdict.mode == "deny":
        return Denied()
    tool = deps.tools.get(call["name"])
    if tool is not None and (problem := args_problem(tool, call["args"])) is not None:
        return Invalid(problem)
    decided = decided_task(call, deps, thread_id)
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
        return {
            "call": call,
            "mode": "run",
            "decision": AUTO_APPROVE,
            "note": None,
        }
    return None


def split_turn(
    state: AgentState,
    deps: AgentDeps,
    thread_id: str,
    runtime: Runtime[RunContext] | None,
    *,
    reviewing: bool = False,
    auto: AutoMode | None = None,
    grants: list[Grant] | None = None,
) -> tuple[list[ToolTask], list[tuple[ToolCall, Verdict]]]:
    """The turn's open calls, split into tasks to send now and calls to review (with
    the policy's verdict for the card)."""
    grants = grants_of(state, deps, thread_id) if grants is None else grants
    now: list[ToolTask] = []
    gated: list[tuple[ToolCall, Verdict]] = []
    for call in unanswered(state):
        verdict = judge(call, deps, thread_id, grants, runtime, reviewing=reviewing, auto=auto)
        if isinstance(verdict, Ask):
            gated.append((call, verdict.verdict))
        elif (task := task_for(call, verdict)) is not None:
            now.append(task)
    return now, gated


def auto_approving(
    runtime: Runtime[RunContext] | None, deps: AgentDeps, grants: list[Grant]
) -> AutoMode | None:
    """ "thread" when the thread's auto-approve switch is on (a grant of every tool; only
    a decision log holds it: state is what clients write), "session" when the run's
    Session has it on."""
    if deps.decisions is not None and any(g.tool == ALL_TOOLS for g in grants):
        return "thread"
    if session_auto_approves(runtime):
        return "session"
    return None


def decided_task(call: ToolCall, deps: AgentDeps, thread_id: str) -> ToolTask | None:
    """The task for a call the decision log already holds a review answer for: for
    exactly this call (id, tool and canonical arguments), never for another call that
    reuses its id."""
    if deps.decisions is None:
        return None
    answered = [
        r
        for r in deps.decisions.approvals(thread_id, id_of(call))
        if r.question == "review" and r.binds(call)
    ]
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
    """Whether the journal holds this decided call, as it runs, finished. (Only started:
    it may be running for another client right now, whose answer the review must still
    take itself; run_tool then refuses or asks about its outcome.)"""
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
    """Whether `run_tool` may run this call: `Free` for a call the policy lets run (with
    the grant that lets it, if one does), `Approved` for a gated call with a recorded
    approval of exactly these arguments (its id, tool and canonical arguments as they
    run), else `Refused`. Without a decision log the graph has nothing but its tasks
    to go by."""
    if deps.decisions is None:
        decision = task.get("decision")
        return Approved(decision) if decision else Free()
    thread_id = thread_of(config)
    verdict = policy_verdict(call, deps, thread_id, grants_of({}, deps, thread_id), runtime)
    if verdict.mode == "allow":
        return Free(verdict.grant)
    if verdict.mode == "ask":
        records = deps.decisions.approvals(thread_id, id_of(call))
        if matching := [
            r for r in records if r.question == "review" and r.runs and r.binds(call, as_run=True)
        ]:
            return Approved(matching[-1].decision)
    return Refused(
        f"Refused a task to run {call['name']} (call {call['id']}): no person approved this call with "
        "these arguments. It did not run."
    )


def invalid_permit(call: ToolCall, deps: AgentDeps) -> Invalid | Refused:
    """Whether `run_tool` may answer this call as invalid without asking anyone: only
    for arguments that really fail the tool's schema (a task claiming so is checked,
    not believed)."""
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
    """Whether `run_tool` may take a task that does not run its call ("run" and
    "invalid" have their own checks) and answer the call as the task says:
    "deny" only for a call the policy denies; "reject" / "respond" only with the answer
    the decision log holds for exactly this call (what a person decided, the note being
    theirs). A task that claims an answer nobody gave is refused: the call keeps waiting.
    ("skip" answers the calls of a stopped run: the stop reason is the run's state.)"""
    mode = task["mode"]
    thread_id = thread_of(config)
    if mode == "deny":
        grants = grants_of({}, deps, thread_id)
        if policy_verdict(call, deps, thread_id, grants, runtime).mode == "deny":
            return None
    elif mode in ("reject", "respond"):
        if deps.decisions is None:
            return None  # nothing but the tasks to go by (as `permit`)
        decided = decided_task(call, deps, thread_id)
        if (
            decided is not None
            and decided["mode"] == mode
            and decided.get("note") == task.get("note")
        ):
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

"""Where the run goes after the model: the end, the on_exit hooks, the model again (an
after_llm hook sent the reply back), or the tool calls, split by the policy into
calls to run or answer now (one `run_tool` task each) and gated calls (one `review`
for the whole turn).

Not every call the policy gates goes to a person:
- arguments that fail the tool's schema are answered with the validation error (a
  person would only approve a call that cannot run);
- auto-approve runs it, when it is on for the thread (a switch in the decision log,
  set through the Session) or for the Session that started the run (a private field
  of the run context). Either way the approval is recorded in the decision log as
  "auto_approve" before the task is sent, so run_tool finds it like a person's. No
  client can turn it on: not by run input, config, context, a state edit or a
  `Command`. `deny` still refuses.

Joining without a join node: free calls that run beside a review do not move the run
on; the review does (straight to `model` when nothing was approved), or the approved
calls do, all in one step, so `model` runs once, after every answer.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Send

from graph.agent.context import RunContext, cancelled, session_auto_approves
from graph.agent.deps import AgentDeps
from graph.agent.emit import decided_by, thread_of
from graph.agent.history import last_ai, unanswered
from graph.agent.model_node import STOPPED_BY_PERSON
from graph.agent.policy import Grant, Verdict
from graph.agent.state import AgentState, ToolTask
from graph.agent.tool_call import args_problem
from graph.protocol.decisions import ALL_TOOLS, AUTO_APPROVE, DecisionRecord


def after_model(
    state: AgentState, config: RunnableConfig, runtime: Runtime[RunContext], *, deps: AgentDeps
) -> Sequence[Send | str]:
    if state.get("stop_reason"):
        return ["finish"]
    if state.get("rerun_llm"):
        return ["model"]
    # Calls with broken arguments were answered with errors already; the model
    # still gets another turn to react to them.
    last = last_ai(state)
    if last is None:
        return [END]  # nothing was asked (see call_model)
    if last.tool_calls:
        return ["before_tool"] if deps.hooks["before_tool"] else dispatch(state, config, runtime, deps=deps)
    if last.invalid_tool_calls:
        return ["model"]
    return ["finish"] if deps.hooks["on_exit"] else [END]


def grants_of(state: Mapping[str, Any], deps: AgentDeps, thread_id: str) -> list[Grant]:
    """The thread's "always allow" grants: from the decision log when there is one
    (state is what clients can write), else from the state."""
    if deps.decisions is not None:
        return [Grant(tool=tool, pattern=pattern) for tool, pattern in deps.decisions.grants(thread_id)]
    return [Grant.from_dict(g) for g in state.get("grants") or []]


def classify(
    state: AgentState,
    deps: AgentDeps,
    thread_id: str,
    *,
    reviewing: bool = False,
    auto: str | None = None,
    grants: list[Grant] | None = None,
) -> tuple[list[ToolTask], list[tuple[ToolCall, Verdict]]]:
    """Split the turn's open calls into tasks to run now and calls to review. A call a
    person already decided (its run was cut off by a crash, or new input arrived
    before its answer was saved) is not asked again: it goes on as decided. Except
    for the review itself (`reviewing`): it must ask what it asked before it paused,
    whatever was decided since (it runs again from its start on resume). With `auto`
    ("thread" or "session"), calls that would be asked run, marked auto-approved."""
    grants = grants_of(state, deps, thread_id) if grants is None else grants
    now: list[ToolTask] = []
    gated: list[tuple[ToolCall, Verdict]] = []
    for call in unanswered(state):
        tool = deps.tools.get(call["name"])
        verdict = deps.policy.evaluate(call["name"], call["args"], tool, grants)
        if verdict.mode != "ask":
            now.append({"call": call, "mode": "run" if verdict.mode == "allow" else "deny"})
        elif tool is not None and (problem := args_problem(tool, call["args"])) is not None:
            now.append({"call": call, "mode": "invalid", "note": problem})
        elif not reviewing and (decided := decided_task(call, deps, thread_id)) is not None:
            now.append(decided)
        elif not reviewing and auto is not None and not verdict.approvers:
            # A tool with named approvers is never approved automatically: auto-approve
            # is someone's switch, and they may not be among its approvers.
            now.append({"call": call, "mode": "run", "decision": AUTO_APPROVE, "note": None, "auto": auto})
        else:
            gated.append((call, verdict))
    return now, gated


def auto_approving(runtime: Runtime[RunContext] | None, deps: AgentDeps, grants: list[Grant]) -> str | None:
    """"thread" when the thread's auto-approve switch is on (a grant of every tool; only
    a decision log holds it: state is what clients write), "session" when the run's
    Session has it on."""
    if deps.decisions is not None and any(g.tool == ALL_TOOLS for g in grants):
        return "thread"
    if session_auto_approves(runtime):
        return "session"
    return None


def record_auto_approvals(tasks: list[ToolTask], deps: AgentDeps, thread_id: str, config: RunnableConfig) -> None:
    """Write the auto-approvals to the decision log before their tasks are sent: run_tool
    runs a gated call only on a recorded approval."""
    auto = [t for t in tasks if t.get("decision") == AUTO_APPROVE]
    if not auto or deps.decisions is None:
        return
    who = decided_by(config)
    now = time.time()
    deps.decisions.record(
        [
            DecisionRecord(
                thread_id=thread_id,
                question="review",
                tool_call_id=t["call"]["id"],
                tool=t["call"]["name"],
                decision=AUTO_APPROVE,
                args=t["call"]["args"],
                message=f"auto-approved: auto-approve is on for this {t.get('auto') or 'session'}",
                source=who["source"],
                actor=who["actor"],
                decided_at=now,
            )
            for t in auto
        ]
    )


def decided_task(call: ToolCall, deps: AgentDeps, thread_id: str) -> ToolTask | None:
    """The task for a call the decision log already holds a review answer for."""
    if deps.decisions is None:
        return None
    answered = [r for r in deps.decisions.for_call(thread_id, call["id"]) if r.question == "review"]
    if not answered:
        return None
    record = answered[-1]
    if record.runs:
        return {"call": {**call, "args": record.args}, "mode": "run"}
    return {"call": call, "mode": record.decision, "note": record.message}


def dispatch(
    state: AgentState, config: RunnableConfig, runtime: Runtime[RunContext], *, deps: AgentDeps
) -> list[Send | str]:
    stop = state.get("stop_reason") or (STOPPED_BY_PERSON if cancelled(runtime) else None)
    if stop:
        return [
            Send("run_tool", {"call": c, "mode": "skip", "note": stop, "moves_on": True})
            for c in unanswered(state)
        ] or ["model"]
    thread_id = thread_of(config)
    grants = grants_of(state, deps, thread_id)
    now, gated = classify(state, deps, thread_id, auto=auto_approving(runtime, deps, grants), grants=grants)
    record_auto_approvals(now, deps, thread_id, config)
    # Beside a review, the review moves the run on once it is answered.
    targets: list[Send | str] = [Send("run_tool", {**task, "moves_on": not gated}) for task in now]
    if gated:
        targets.append("review")
    return targets or ["model"]


def before_tool(state: AgentState, *, deps: AgentDeps) -> dict[str, Any]:
    """The before_tool hooks (a node only when there are some)."""
    return deps.hooks.run("before_tool", state)

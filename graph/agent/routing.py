"""Where the run goes after the model: the end, the on_exit hooks, or the tool calls,
split by the policy into free calls (one `run_tool` task each, now) and gated calls
(one `review` for the whole turn).

Joining without a join node: free calls that run beside a review do not move the run
on; the review does (straight to `model` when nothing was approved), or the approved
calls do, all in one step, so `model` runs once, after every answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import ToolCall
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Send

from graph.agent.context import RunContext, cancelled
from graph.agent.deps import AgentDeps
from graph.agent.history import last_ai, unanswered
from graph.agent.model_node import STOPPED_BY_PERSON
from graph.agent.policy import Grant, Verdict
from graph.agent.state import AgentState, ToolTask


def after_model(state: AgentState, runtime: Runtime[RunContext], *, deps: AgentDeps) -> Sequence[Send | str]:
    if state.get("stop_reason"):
        return ["finish"]
    # Calls with broken arguments were answered with errors already; the model
    # still gets another turn to react to them.
    last = last_ai(state)
    if last is None:
        return [END]  # nothing was asked (see call_model)
    if last.tool_calls:
        return ["before_tool"] if deps.hooks["before_tool"] else dispatch(state, runtime, deps=deps)
    if last.invalid_tool_calls:
        return ["model"]
    return ["finish"] if deps.hooks["on_exit"] else [END]


def classify(state: AgentState, deps: AgentDeps) -> tuple[list[ToolTask], list[tuple[ToolCall, Verdict]]]:
    """Split the turn's open calls into tasks to run now and calls to review."""
    grants = [Grant.from_dict(g) for g in state.get("grants") or []]
    now: list[ToolTask] = []
    gated: list[tuple[ToolCall, Verdict]] = []
    for call in unanswered(state):
        verdict = deps.policy.evaluate(call["name"], call["args"], deps.tools.get(call["name"]), grants)
        if verdict.mode == "ask":
            gated.append((call, verdict))
        else:
            now.append({"call": call, "mode": "run" if verdict.mode == "allow" else "deny"})
    return now, gated


def dispatch(state: AgentState, runtime: Runtime[RunContext], *, deps: AgentDeps) -> list[Send | str]:
    stop = state.get("stop_reason") or (STOPPED_BY_PERSON if cancelled(runtime) else None)
    if stop:
        return [
            Send("run_tool", {"call": c, "mode": "skip", "note": stop, "moves_on": True})
            for c in unanswered(state)
        ] or ["model"]
    now, gated = classify(state, deps)
    # Beside a review, the review moves the run on once it is answered.
    targets: list[Send | str] = [Send("run_tool", {**task, "moves_on": not gated}) for task in now]
    if gated:
        targets.append("review")
    return targets or ["model"]


def before_tool(state: AgentState, *, deps: AgentDeps) -> dict[str, Any]:
    """The before_tool hooks (a node only when there are some)."""
    return deps.hooks.run("before_tool", state)

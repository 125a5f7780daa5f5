"""Where the run goes after the model: the end, the on_exit hooks, the model again, or
the tool calls: free ones (a `run_tool` task each), gated ones (one `review` for the
turn), by the gate's verdict. Routes write nothing (run_tool records an
auto-approval). No join node: beside a review, the review moves the run on, so
`model` runs once, after every answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Send

from gatehouse.graph.agent.call_ids import id_of
from gatehouse.graph.agent.context import RunContext, cancelled
from gatehouse.graph.agent.deps import AgentDeps
from gatehouse.graph.agent.emit import thread_of
from gatehouse.graph.agent.gate import auto_approving, gate_reads, keep_read, split_turn
from gatehouse.graph.agent.history import last_ai, unanswered
from gatehouse.graph.agent.run_end import STOPPED_BY_PERSON
from gatehouse.graph.agent.state import AgentState
from gatehouse.graph.store.langgraph_private import CONFIG_KEY_RUNTIME


# The runtime comes from `config` (None for a state edit: nothing cancelled or
# auto-approved): with an injected `runtime` argument a state edit failed ("Missing
# required config key 'N/A'").
def after_model(
    state: AgentState, config: RunnableConfig, *, deps: AgentDeps
) -> Sequence[Send | str]:
    if state.get("stop_reason"):
        return ["finish"]
    if state.get("rerun_llm"):
        return ["model"]
    last = last_ai(state)
    if last is None:
        return [END]  # nothing was asked (see call_model)
    if last.tool_calls:
        return ["before_tool"] if deps.hooks["before_tool"] else dispatch(state, config, deps=deps)
    if last.invalid_tool_calls:  # answered with errors already: the model reacts
        return ["model"]
    return ["finish"] if deps.hooks["on_exit"] else [END]


def dispatch(state: AgentState, config: RunnableConfig, *, deps: AgentDeps) -> list[Send | str]:
    runtime: Runtime[RunContext] | None = (config.get("configurable") or {}).get(CONFIG_KEY_RUNTIME)
    stop = state.get("stop_reason") or (STOPPED_BY_PERSON if cancelled(runtime) else None)
    if stop:
        return [
            Send("run_tool", {"call": c, "mode": "skip", "note": stop, "moves_on": True})
            for c in unanswered(state)
        ] or ["model"]
    thread_id = thread_of(config)
    ids = [id_of(c) for c in unanswered(state)]
    reads = gate_reads(state, deps, thread_id, ids, config, runtime)
    keep_read(config, runtime, thread_id, ids)  # the review and free calls next: one read
    auto = auto_approving(runtime, deps, reads[0])
    now, gated = split_turn(state, deps, thread_id, runtime, auto=auto, reads=reads)
    targets: list[Send | str] = [Send("run_tool", {**task, "moves_on": not gated}) for task in now]
    if gated:
        targets.append("review")
    return targets or ["model"]


def before_tool(state: AgentState, *, deps: AgentDeps) -> dict[str, Any]:
    """The before_tool hooks (a node only when there are some)."""
    return deps.hooks.run("before_tool", state)

"""The `model` node: start a new run's counters, stop on a limit, a cancel or a hook's
stop, run the before_llm hooks, then stream the model's reply.

Bad tool-call JSON is answered with an error at once, so every call the reply makes
has its ToolMessage; the model gets another turn to react.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graph.agent.context import RunContext, cancelled, model_call_limit
from graph.agent.deps import AgentDeps
from graph.agent.emit import emit
from graph.agent.history import last_human_id, open_turn_before_new_input
from graph.agent.message_merge import merge_messages
from graph.agent.model_call import (
    CUT_OFF_KIND,
    CUT_OFF_STOP,
    answer_invalid_calls,
    is_cut_off,
    stream_reply,
)
from graph.agent.state import RUN_KEYS, AgentState, add_usage
from graph.protocol import events as ev

STOPPED_BY_PERSON = "Stopped by the person."


def call_model(
    state: AgentState, config: RunnableConfig, runtime: Runtime[RunContext], *, deps: AgentDeps
) -> dict[str, Any]:
    if not state.get("messages"):
        # A bare `Command(resume=...)` on a thread that never started: nothing to do.
        return {}
    if (held := hold_new_input(state)) is not None:
        return held
    # Input held while calls were open joins the history now that each has its answer
    # (same ids, after the answers).
    released = list(state.get("held_messages") or [])
    if released:
        state = {**state, "messages": merge_messages(state["messages"], [released])}  # type: ignore[typeddict-item]
    update = fresh_run(state)
    if released:
        update.update(messages=released, held_messages=[])
    view: dict[str, Any] = {**state, **update}
    if cancelled(runtime):
        return {**update, **stop(STOPPED_BY_PERSON, "cancelled")}
    if view.get("stop_reason"):
        return update
    limit = model_call_limit(runtime, deps.max_model_calls)
    if view.get("run_model_calls", 0) >= limit:
        reason = f"Stopped: this run reached its limit of {limit} model calls. Send a message to continue."
        return {**update, **stop(reason, "stopped")}
    # Extra system text lives for one model call: the hooks write it afresh each time.
    hooked = deps.hooks.run("before_llm", {**view, "model_context": {}})
    update.update({"model_context": {}, **hooked})
    if hooked.get("stop_reason"):
        update.setdefault("stop_kind", "stopped")
        update["messages"] = [*released, *hooked.get("messages", [])]
        return update
    view.update(update)
    history = state["messages"]
    if hooked.get("messages"):
        history = merge_messages(history, [hooked["messages"]])
    ai, was_cancelled = stream_reply(
        deps.model, deps.system_prompt, view, history, config, runtime, deps.model_options
    )
    update["run_model_calls"] = view.get("run_model_calls", 0) + 1
    if was_cancelled:
        update.update(stop(STOPPED_BY_PERSON, "cancelled"))
    elif is_cut_off(ai):
        update.update(stop(CUT_OFF_STOP, CUT_OFF_KIND))
    update["messages"] = [*released, *hooked.get("messages", []), ai, *answer_invalid_calls(ai)]
    if not (ai.tool_calls or ai.invalid_tool_calls or update.get("stop_reason") or deps.hooks["on_exit"]):
        update["run_status"] = "completed"  # the reply ends the run (routing.after_model: END)
    # A hook's own user message (a summary, a nudge) belongs to this run.
    update["run_message_id"] = last_human_id(history, view.get("run_message_id"))
    if ai.usage_metadata:
        usage = {
            "input_tokens": ai.usage_metadata.get("input_tokens", 0),
            "output_tokens": ai.usage_metadata.get("output_tokens", 0),
            "total_tokens": ai.usage_metadata.get("total_tokens", 0),
        }
        update["usage"] = add_usage(update.get("usage"), usage)
        update["run_usage"] = add_usage(view.get("run_usage"), usage)
        emit(ev.Usage, **usage)
    return update


def hold_new_input(state: Mapping[str, Any]) -> dict[str, Any] | None:
    """New input on a thread whose last model turn has calls without a result: take
    it out of the history (kept in `held_messages`) so the open calls are decided
    first, by the normal path (the policy, the review, the journal's outcome
    question). Every tool call keeps exactly one result, right after it."""
    found = open_turn_before_new_input(state["messages"])
    if found is None:
        return None
    _, later = found
    return {
        "messages": [RemoveMessage(id=m.id) for m in later if m.id],
        "held_messages": [*(state.get("held_messages") or []), *later],
    }


def fresh_run(state: Mapping[str, Any]) -> dict[str, Any]:
    """The per-run keys, reset, when the latest user message is one this run has not
    seen (a new message started it); else nothing. Checked in the model node rather
    than in a node of its own: every node is a saved step on every turn."""
    latest = last_human_id(state.get("messages") or [], None)
    if latest is None or latest == state.get("run_message_id"):
        return {}
    return {**RUN_KEYS, "run_message_id": latest}


def stop(reason: str, kind: str) -> dict[str, Any]:
    return {"stop_reason": reason, "stop_kind": kind}

"""The `model` node: start a new run's counters, stop on a limit, a cancel or a hook's
stop, run the before_llm hooks, stream the model's reply, then the after_llm hooks.

An after_llm hook may send the reply back (`rerun_llm`): the reply is not stored
(unless the hook keeps it), a `reply_rejected` event tells front ends to drop the
text they showed, and the run comes back here for another call, which counts
against the run's limits like any other (graph/agent/routing.py routes it).

Calls that must not run are answered at once, so every call the reply makes has its
ToolMessage and the model gets another turn to react: bad tool-call JSON (and every
call of a cut-off reply), and the doom-loop guard's repeats (graph/agent/doom_loop.py).
Each shows on the stream as a failed call.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, cast

from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graph.agent import doom_loop
from graph.agent.call_ids import fresh_call_ids
from graph.agent.client_input import announce_dropped
from graph.agent.context import RunContext, cancelled, model_call_limit
from graph.agent.deps import AgentDeps
from graph.agent.emit import emit, thread_of
from graph.agent.history import last_human_id, open_turn_before_new_input, text_of
from graph.agent.message_merge import merge_messages
from graph.agent.model_call import (
    CUT_OFF_KIND,
    CUT_OFF_STOP,
    answer_invalid_calls,
    is_cut_off,
    stream_reply,
)
from graph.agent.run_end import STOPPED_BY_PERSON, ended, ends_here, history_size, stop
from graph.agent.state import RUN_KEYS, AgentState, add_usage
from graph.agent.tool_call import answered_unrun
from graph.agent.tool_messages import not_run, sent_back
from graph.protocol import events as ev
from graph.protocol.errors import HookError


def call_model(
    state: AgentState, config: RunnableConfig, runtime: Runtime[RunContext], *, deps: AgentDeps
) -> dict[str, Any]:
    if not state.get("messages"):
        # A bare `Command(resume=...)` on a thread that never started: nothing to do.
        return {}
    if (held := hold_new_input(state)) is not None:
        announce_dropped(config)
        return held
    # Input held while calls were open joins the history now that each has its answer
    # (same ids, after the answers).
    stored = state["messages"]  # the history as saved, before this step
    released = list(state.get("held_messages") or [])
    if released:
        state = {**state, "messages": merge_messages(state["messages"], [released])}
    update = fresh_run(state)
    if released:
        update.update(messages=released, held_messages=[])
    if state.get("rerun_llm") and "rerun_llm" not in update:
        update["rerun_llm"] = False  # this call is the re-ask
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
    # Before anything sees the calls: a repeated id gets one of its own (call_ids.py).
    ai = fresh_call_ids(
        ai, history, view.get("held_messages") or [], partial(logged, deps, thread_of(config))
    )
    update["run_model_calls"] = view.get("run_model_calls", 0) + 1
    if ai.usage_metadata:
        usage: dict[str, float] = {
            "input_tokens": ai.usage_metadata.get("input_tokens", 0),
            "output_tokens": ai.usage_metadata.get("output_tokens", 0),
            "total_tokens": ai.usage_metadata.get("total_tokens", 0),
        }
        update["usage"] = add_usage(update.get("usage"), usage)
        update["run_usage"] = add_usage(view.get("run_usage"), usage)
        emit(ev.Usage, **usage)
    before = [*released, *hooked.get("messages", [])]
    if was_cancelled:
        update.update(stop(STOPPED_BY_PERSON, "cancelled"))
    elif is_cut_off(ai):
        update.update(stop(CUT_OFF_STOP, CUT_OFF_KIND))
    elif deps.hooks["after_llm"]:
        return after_reply(
            update, {**view, "usage": state.get("usage") or {}}, history, ai, before, deps, stored
        )
    update["messages"] = [*before, ai, *answer_now(ai, history, update, deps)]
    ends = ends_here(ai, update, bool(deps.hooks["on_exit"]))
    # A hook's own user message (a summary, a nudge) belongs to this run.
    update["run_message_id"] = last_human_id(history, view.get("run_message_id"))
    announce(ai, stored, update, ends)
    return update


def announce(
    reply: AIMessage | None, history: list[AnyMessage], update: dict[str, Any], ends: bool
) -> None:
    """The whole-message events of a step that keeps `reply`: `assistant_message`, and
    when the run ends here (`ends`), its end (graph/agent/run_end.py) after it
    (`history`: the saved history the step's update applies to)."""
    if reply is not None:
        emit(
            ev.AssistantMessage,
            message_id=reply.id,
            text=text_of(reply.content),
            tool_calls=[c["name"] for c in reply.tool_calls],
        )
    if ends:
        update.update(ended("completed", history_size(history, update["messages"])))


def logged(deps: AgentDeps, thread_id: str, call_id: str) -> bool:
    """Whether the thread's decision log or journal holds a call under `call_id`."""
    if deps.decisions is not None and deps.decisions.for_call(thread_id, call_id):
        return True
    return deps.journal is not None and deps.journal.get(thread_id, call_id) is not None


def after_reply(
    update: dict[str, Any],
    view: dict[str, Any],
    history: list[AnyMessage],
    ai: AIMessage,
    before: list[AnyMessage],
    deps: AgentDeps,
    stored: list[AnyMessage] | None = None,
) -> dict[str, Any]:
    """The after_llm hooks on a complete reply: keep it (maybe changed by them), or
    send it back (`rerun_llm`) so the model node asks again. `view` holds the
    thread's usage before this step; `update` what this step added."""
    usage = add_usage(view.get("usage"), update.get("usage"))
    checked = deps.hooks.run(
        "after_llm", {**view, **update, "usage": usage, "messages": [*history, ai]}
    )
    rerun = checked.pop("rerun_llm", False)
    added = list(checked.pop("messages", []))
    if "usage" in checked:
        update["usage"] = add_usage(update.get("usage"), checked.pop("usage"))
    update.update(checked)
    if update.get("stop_reason"):
        update.setdefault("stop_kind", "stopped")
    if rerun and not update.get("stop_reason"):
        # Kept only when a hook kept it: returned it (or changed it) under its id.
        kept = [m for m in added if m.id == ai.id and not isinstance(m, RemoveMessage)]
        added = [m for m in added if m.id != ai.id]
        reason = rerun if isinstance(rerun, str) else "an after_llm hook sent the reply back"
        emit(ev.ReplyRejected, message_id=ai.id, reason=reason)
        reply = kept[-1] if kept else None
        unrun = (
            [
                answered_unrun(c, sent_back(reason))
                for c in [*reply.tool_calls, *reply.invalid_tool_calls]
            ]
            if isinstance(reply, AIMessage)
            else []
        )
        update["messages"] = [*before, *([reply, *unrun] if reply is not None else []), *added]
        update["rerun_llm"] = True
        update["run_message_id"] = last_human_id([*history, *added], view.get("run_message_id"))
        return update
    merged = merge_messages([*history, ai], [added]) if added else [*history, ai]
    final = next((m for m in reversed(merged) if m.id == ai.id), None)
    answers: list[ToolMessage] = []
    if isinstance(final, AIMessage):
        after = merged[merged.index(final) + 1 :]
        if (final.tool_calls or final.invalid_tool_calls) and any(
            not isinstance(m, ToolMessage) for m in after
        ):
            # Kept, its calls will be answered after it: nothing may come in between.
            raise HookError(
                "after_llm hooks added messages after a reply whose tool calls are still open; send the reply "
                "back with rerun_llm, or add nothing after it"
            )
    # The reply's text streamed before the hooks ran: a change to it replaces it on
    # screen (announced before anything else of this step reaches the stream).
    new_text = text_of(final.content) if isinstance(final, AIMessage) else None
    if new_text != text_of(ai.content) and ai.id is not None:
        emit(ev.MessageReplaced, message_id=ai.id, text=new_text or "", removed=new_text is None)
    ends = False
    if isinstance(final, AIMessage):
        answers = answer_now(final, history, update, deps)
        ends = ends_here(final, update, bool(deps.hooks["on_exit"]))
    update["messages"] = [*before, ai, *added, *answers]
    update["run_message_id"] = last_human_id(merged, view.get("run_message_id"))
    announce(
        final if isinstance(final, AIMessage) else None,
        history if stored is None else stored,
        update,
        ends,
    )
    return update


def answer_now(
    ai: AIMessage, history: list[AnyMessage], update: dict[str, Any], deps: AgentDeps
) -> list[ToolMessage]:
    """The reply's calls that must not run, answered at once: broken arguments (and
    every call of a cut-off reply), the doom-loop guard's repeats, and everything
    when the run stops here. Sets the stop in `update` when the guard stops the run."""
    unrun = answer_invalid_calls(ai)
    # A cut reply's calls were never tried: answered for the model, not shown as calls.
    # (answer_invalid_calls writes their content as text: the cast only narrows the type.)
    answers = (
        unrun
        if is_cut_off(ai)
        else [
            answered_unrun(c, cast(str, m.content))
            for c, m in zip(ai.invalid_tool_calls, unrun, strict=True)
        ]
    )
    calls = list(ai.tool_calls)
    if not update.get("stop_reason"):
        found = doom_loop.describe(
            doom_loop.repeats(history, ai, deps.doom_loop_threshold), deps.doom_loop_threshold
        )
        if (looping := found["stop"]) is not None:
            update.update(stop(doom_loop.stop_reason(looping), "stopped"))
        for repeat in found["nudges"]:
            if looping is None:
                emit(ev.Notice, text=doom_loop.notice(repeat), source=ev.DOOM_LOOP_SOURCE)
                answers.append(answered_unrun(repeat.call, doom_loop.nudge(repeat)))
                calls = [c for c in calls if c["id"] != repeat.call["id"]]
    if update.get("stop_reason"):
        # The run ends here: nothing is dispatched, so every call is answered now.
        answers += [answered_unrun(c, not_run(update["stop_reason"])) for c in calls]
    return answers


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

"""The Gatehouse agent graph, assembled top to bottom.

    START → intake → prepare ──→ model ──→ before_tool ─┬→ run_tool (free calls, one task each)
                        ↑   └→ finish      └→ finish     ├→ review ──→ run_tool (approved/edited)
                        │        │ on_exit               │      └─ rejected / answered: ToolMessages
                        │        └→ END or prepare       └→ after_tools (join) → prepare
                        └──────────────────────────────────────────────┘

- `intake` runs once per new message (not on resume) and resets per-run keys.
- `prepare` runs the before_llm hooks and stops the run on a limit, a hook's
  `stop_run` or a cancel request.
- `model` streams tokens; bad tool-call JSON is answered with an error at once.
- `before_tool` runs the before_tool hooks; the policy then sends every free call to
  its own `run_tool` task and the gated ones to `review`, which asks ONE interrupt
  per model turn. Sibling tasks that finished are pending writes and are not re-run
  when the review resumes (a single node holding all calls would re-run them).
- `after_tools` joins: the run moves on only when every call has its ToolMessage.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, Send, interrupt

from graph import journal as jr
from graph import review as rv
from graph.context import RunContext
from graph.hooks import Hook, HookSet
from graph.policy import Grant, Policy, Verdict
from graph.state import AgentState, ToolTask
from graph.tool_runner import answer, emit, finished, invoke_tool, timed
from tools.base import spec_of

DEFAULT_SYSTEM_PROMPT = (
    "You are Gatehouse, a careful assistant that works in the user's workspace through tools. "
    "Some tool calls wait for a person's approval. When a call is declined, respect the reason "
    "and do not retry the same call unchanged. Be concise."
)
DEFAULT_MAX_MODEL_CALLS = 25


def build_graph(
    *,
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    checkpointer: BaseCheckpointSaver | bool | None = None,
    policy: Policy | Mapping[str, Any] | None = None,
    hooks: Mapping[str, Sequence[Hook | Any]] | None = None,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    max_model_calls: int = DEFAULT_MAX_MODEL_CALLS,
    name: str = "gatehouse",
    journal: jr.Journal | None = None,
) -> CompiledStateGraph:
    """Compile the approval-gated agent. `policy` also takes LangChain's
    `HumanInTheLoopMiddleware(interrupt_on=...)` mapping unchanged."""
    tools_by_name = {t.name: t for t in tools}
    if len(tools_by_name) != len(tools):
        raise ValueError("tool names must be unique")
    rules = policy if isinstance(policy, Policy) else Policy.from_mapping(policy)
    hook_set = hooks if isinstance(hooks, HookSet) else HookSet(hooks)
    bound = model.bind_tools(list(tools)) if tools else model

    def intake(state: AgentState) -> dict[str, Any]:
        return {
            "run_model_calls": 0,
            "run_usage": {},
            "stop_run": None,
            "stop_kind": None,
            "continue_run": False,
            "hook_run": {},
        }

    def prepare(state: AgentState, runtime: Runtime[RunContext]) -> Command:
        if not state.get("messages"):
            # A bare `Command(resume=...)` on a thread that never started: nothing to do.
            return Command(goto=END)
        if _cancelled(runtime):
            return Command(goto="finish", update=_stop("Stopped by the person.", "cancelled"))
        if state.get("stop_run"):
            return Command(goto="finish")
        if state.get("run_model_calls", 0) >= max_model_calls:
            reason = (
                f"Stopped: this run reached its limit of {max_model_calls} model calls. "
                "Send a message to continue."
            )
            return Command(goto="finish", update=_stop(reason, "stopped"))
        # Extra system text lives for one model call: the hooks write it afresh each time.
        update = {"model_context": {}, **hook_set.run("before_llm", {**state, "model_context": {}})}
        if update.get("stop_run"):
            update.setdefault("stop_kind", "stopped")
            return Command(goto="finish", update=update)
        return Command(goto="model", update=update)

    def call_model(state: AgentState, config: RunnableConfig, runtime: Runtime[RunContext]) -> dict[str, Any]:
        prompt = _system_text(system_prompt, state.get("model_context") or {})
        messages: list[AnyMessage] = [SystemMessage(prompt)] if prompt else []
        messages += state["messages"]
        merged: AIMessageChunk | None = None
        cancelled = False
        for chunk in bound.stream(messages, config):
            merged = chunk if merged is None else merged + chunk  # type: ignore[assignment]
            if _cancelled(runtime):
                cancelled = True
                break
        ai = _to_message(merged)
        update: dict[str, Any] = {"run_model_calls": state.get("run_model_calls", 0) + 1}
        if cancelled:
            # Drop half-streamed tool calls: nothing may be left without an answer.
            ai = AIMessage(content=ai.content, id=ai.id)
            update.update(_stop("Stopped by the person.", "cancelled"))
        update["messages"] = [ai, *_answer_invalid_calls(ai)]
        if ai.usage_metadata:
            usage = {
                "input_tokens": ai.usage_metadata.get("input_tokens", 0),
                "output_tokens": ai.usage_metadata.get("output_tokens", 0),
                "total_tokens": ai.usage_metadata.get("total_tokens", 0),
            }
            update["usage"] = usage
            run_usage = dict(state.get("run_usage") or {})
            for key, value in usage.items():
                run_usage[key] = run_usage.get(key, 0) + value
            update["run_usage"] = run_usage
            emit("usage", **usage)
        return update

    def after_model(state: AgentState) -> str:
        if state.get("stop_run"):
            return "finish"
        # Calls with broken arguments were answered with errors already; the model
        # still gets another turn to react to them.
        last = _last_ai(state)
        has_calls = last is not None and bool(last.tool_calls or last.invalid_tool_calls)
        return "before_tool" if has_calls else "finish"

    def before_tool(state: AgentState) -> dict[str, Any]:
        return hook_set.run("before_tool", state)

    def classify(state: AgentState) -> tuple[list[ToolTask], list[tuple[ToolCall, Verdict]]]:
        """Split the turn's open calls into tasks to run now and calls to review."""
        grants = [Grant.from_dict(g) for g in state.get("grants") or []]
        now: list[ToolTask] = []
        gated: list[tuple[ToolCall, Verdict]] = []
        for call in _unanswered(state):
            verdict = rules.evaluate(call["name"], call["args"], tools_by_name.get(call["name"]), grants)
            if verdict.mode == "ask":
                gated.append((call, verdict))
            else:
                now.append({"call": call, "mode": "run" if verdict.mode == "allow" else "deny"})
        return now, gated

    def dispatch(state: AgentState, runtime: Runtime[RunContext]) -> list[Send | str]:
        stop = state.get("stop_run") or ("Stopped by the person." if _cancelled(runtime) else None)
        if stop:
            return [
                Send("run_tool", {"call": c, "mode": "skip", "note": stop}) for c in _unanswered(state)
            ] or ["after_tools"]
        now, gated = classify(state)
        targets: list[Send | str] = [Send("run_tool", task) for task in now]
        if gated:
            targets.append("review")
        return targets or ["after_tools"]

    def review(state: AgentState) -> Command:
        _, gated = classify(state)
        request = rv.build_request(gated, tools_by_name)
        reply = interrupt(request, response_schema=rv.answer_model(request, tools_by_name))
        sends: list[Send] = []
        messages: list[ToolMessage] = []
        grants: list[dict[str, Any]] = []
        for (call, _), decision in zip(gated, reply.decisions, strict=True):
            if (grant := rv.grant_from(decision, call["name"])) is not None:
                grants.append(grant.to_dict())
            if isinstance(decision, rv.Approve):
                sends.append(Send("run_tool", {"call": call, "mode": "run"}))
            elif isinstance(decision, rv.Edit):
                edited: ToolCall = {**call, "args": decision.edited_action.args}
                note = rv.edit_note(call["args"], edited["args"])
                sends.append(Send("run_tool", {"call": edited, "mode": "run", "note": note}))
            else:
                if isinstance(decision, rv.Reject):
                    msg, status = rv.rejected_message(call, decision.message), "rejected"
                else:
                    msg, status = rv.responded_message(call, decision.message), "responded"
                messages.append(finished(call, msg, status))
        update: dict[str, Any] = {"messages": messages}
        if grants:
            update["grants"] = grants
        return Command(goto=sends or "after_tools", update=update)

    def run_tool(task: ToolTask, config: RunnableConfig) -> dict[str, Any]:
        call, mode = task["call"], task["mode"]
        # The journal is read before anything with side effects: this node re-runs
        # from its start when an "outcome unknown" interrupt below is answered.
        tool = tools_by_name.get(call["name"])
        journaled = journal is not None and mode == "run" and tool is not None and not spec_of(tool).idempotent
        thread_id = str((config.get("configurable") or {}).get("thread_id", ""))
        recorded = journal.get(thread_id, call["id"]) if journaled else None
        if recorded is not None and recorded.finished and recorded.result is not None:
            # The tool ran but the checkpoint never saw its result: use the stored one.
            return _journaled_answer(call, recorded.result, "error" if recorded.result.status == "error" else "ok")
        if recorded is not None:
            # Started, never finished: ask. One interrupt per crashed attempt, so a
            # "run again" whose re-run crashed too is not replayed by the next resume.
            asked = 0
            while True:
                reply = interrupt(jr.outcome_request(call, recorded), response_schema=jr.OutcomeAnswer)
                if not isinstance(reply, jr.OutcomeAnswer):
                    reply = jr.OutcomeAnswer.model_validate(reply)
                if reply.type != "run_again":
                    msg = jr.outcome_message(call, reply)
                    journal.finish(thread_id, call, msg)
                    return _journaled_answer(call, msg, "error" if msg.status == "error" else "responded")
                asked += 1
                if recorded.attempts <= asked:
                    break
        emit("tool_started", call_id=call["id"], name=call["name"], args=call["args"])
        if mode == "deny":
            msg, ms = answer(call, f"Error: the policy does not allow {call['name']} here; the call was not run.", status="error"), 0.0
            status = "denied"
        elif mode == "skip":
            msg, ms = answer(call, f"Not run: {task.get('note') or 'the run was stopped'}", status="error"), 0.0
            status = "error"
        else:
            if journaled:
                journal.start(thread_id, call)
                jr.crash_point("before_tool")
            msg, ms = timed(lambda: invoke_tool(tool, call, config, tools_by_name))
            status = "error" if msg.status == "error" else "ok"
            if task.get("note"):
                msg.content = f"{task['note']}\n\n{msg.content}"
            if journaled:
                journal.finish(thread_id, call, msg)
                jr.crash_point("after_tool")
        return {"messages": [finished(call, msg, status, ms)]}

    def after_tools(state: AgentState) -> dict[str, Any]:
        return {}

    def all_answered(state: AgentState) -> str:
        # Approved calls may still be running in this step; the last one to finish
        # brings the run here again with everything answered.
        return END if _unanswered(state) else "prepare"

    def finish(state: AgentState) -> Command:
        if state.get("stop_run"):
            notice = AIMessage(content=state["stop_run"], additional_kwargs={"gatehouse_notice": "stop"})
            emit("notice", text=state["stop_run"], source="stop")
            return Command(goto=END, update={"messages": [notice]})
        update = hook_set.run("on_exit", state)
        if update.get("stop_run"):
            update.setdefault("stop_kind", "stopped")
            return Command(goto="finish", update=update)
        if update.pop("continue_run", False):
            return Command(goto="prepare", update={**update, "continue_run": False})
        return Command(goto=END, update=update)

    builder = StateGraph(AgentState, context_schema=RunContext)
    builder.add_node("intake", intake)
    builder.add_node("prepare", prepare, destinations=("model", "finish", END))
    builder.add_node("model", call_model)
    builder.add_node("before_tool", before_tool)
    builder.add_node("review", review, destinations=("run_tool", "after_tools"))
    builder.add_node("run_tool", run_tool)
    builder.add_node("after_tools", after_tools)
    builder.add_node("finish", finish, destinations=("prepare", "finish", END))
    builder.add_edge(START, "intake")
    builder.add_edge("intake", "prepare")
    builder.add_conditional_edges("model", after_model, ["before_tool", "finish"])
    builder.add_conditional_edges("before_tool", dispatch, ["run_tool", "review", "after_tools"])
    builder.add_edge("run_tool", "after_tools")
    builder.add_conditional_edges("after_tools", all_answered, ["prepare", END])
    compiled = builder.compile(checkpointer=checkpointer, name=name)
    # The Session warms up and closes the hooks with the agent (see graph.hooks).
    compiled.gatehouse_hooks = hook_set  # type: ignore[attr-defined]
    return compiled


def _journaled_answer(call: ToolCall, msg: ToolMessage, status: str) -> dict[str, Any]:
    """A call answered from the journal (or by a person after a crash), not run now."""
    emit("tool_started", call_id=call["id"], name=call["name"], args=call["args"])
    return {"messages": [finished(call, msg, status)]}


def _stop(reason: str, kind: str) -> dict[str, Any]:
    return {"stop_run": reason, "stop_kind": kind}


def _cancelled(runtime: Runtime[RunContext] | None) -> bool:
    ctx = getattr(runtime, "context", None)
    return bool(ctx is not None and isinstance(ctx, RunContext) and ctx.cancelled)


def _system_text(base: str | None, extra: Mapping[str, str]) -> str:
    return "\n\n".join(p for p in [base or "", *extra.values()] if p)


def _to_message(chunk: AIMessageChunk | None) -> AIMessage:
    if chunk is None:
        return AIMessage(content="", id=f"run-{uuid.uuid4()}")
    calls, invalid = _strict_tool_calls(chunk)
    return AIMessage(
        content=chunk.content,
        id=chunk.id or f"run-{uuid.uuid4()}",
        tool_calls=calls,
        invalid_tool_calls=invalid,
        usage_metadata=chunk.usage_metadata,
        response_metadata=chunk.response_metadata,
        additional_kwargs=chunk.additional_kwargs,
    )


def _strict_tool_calls(chunk: AIMessageChunk) -> tuple[list[Any], list[Any]]:
    """Parse streamed tool-call arguments strictly.

    LangChain assembles streamed arguments with a lenient partial-JSON parser, which
    turns `{"path": "x"` (cut off) into a valid-looking call. A call that would run
    with arguments the model never finished must be answered with an error instead.
    """
    calls: list[Any] = []
    invalid: list[Any] = list(chunk.invalid_tool_calls)
    raw = {c.get("index", i): c for i, c in enumerate(chunk.tool_call_chunks)} if chunk.tool_call_chunks else {}
    for i, call in enumerate(chunk.tool_calls):
        call_id = call.get("id") or f"call_{uuid.uuid4().hex[:24]}"
        source = next((c for c in raw.values() if c.get("id") and c.get("id") == call.get("id")), None)
        if source is None and len(raw) == len(chunk.tool_calls):
            source = list(raw.values())[i]
        text = source.get("args") if source else None
        if isinstance(text, str) and text.strip():
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                invalid.append({"name": call["name"], "args": text, "id": call_id, "error": str(exc), "type": "invalid_tool_call"})
                continue
            if not isinstance(parsed, dict):
                invalid.append({"name": call["name"], "args": text, "id": call_id, "error": "not a JSON object", "type": "invalid_tool_call"})
                continue
        calls.append({**call, "id": call_id})
    for bad in invalid:
        bad["id"] = bad.get("id") or f"call_{uuid.uuid4().hex[:24]}"
    return calls, invalid


def _answer_invalid_calls(ai: AIMessage) -> list[ToolMessage]:
    """Tool calls whose arguments were not a JSON object: answer with an error now."""
    return [
        ToolMessage(
            content=(
                f"Error: the arguments for {c.get('name') or 'this tool'} were not a valid JSON object "
                f"({c.get('error') or 'could not parse'}): {c.get('args')!r}"
            ),
            tool_call_id=c["id"],
            name=c.get("name") or "unknown",
            status="error",
        )
        for c in ai.invalid_tool_calls
    ]


def _last_ai(state: Mapping[str, Any]) -> AIMessage | None:
    for msg in reversed(state.get("messages") or []):
        if isinstance(msg, AIMessage):
            return msg
    return None


def _unanswered(state: Mapping[str, Any]) -> list[ToolCall]:
    """Tool calls of the last model turn that have no ToolMessage yet."""
    messages = state.get("messages") or []
    answered: set[str] = set()
    for msg in reversed(messages):
        if isinstance(msg, ToolMessage):
            answered.add(msg.tool_call_id)
        elif isinstance(msg, AIMessage):
            return [c for c in msg.tool_calls if c["id"] not in answered]
        else:
            return []
    return []

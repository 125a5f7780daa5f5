"""The Gatehouse agent graph, assembled top to bottom.

    START → model ─┬→ no tool calls → END (or finish, with on_exit hooks or a stop)
              ↑    └→ tool calls → [before_tool] → policy ─┬→ run_tool (free calls, one task each)
              │                                            └→ review ──→ run_tool (approved/edited)
              │                                                  └─ rejected / answered: ToolMessages
              └──────── every call answered (the turn's last tasks move the run on) ──┘

- `model` starts a fresh run's counters on a new user message, stops the run on a
  limit, a cancel request or a hook's `stop_run`, runs the before_llm hooks, then
  streams the model's reply; bad tool-call JSON is answered with an error at once.
- `before_tool` (only when there are before_tool hooks) runs those hooks; the
  policy then sends every free call to its own `run_tool` task and the gated ones to
  `review`, which asks ONE interrupt per model turn. Sibling tasks that finished are
  pending writes and are not re-run when the review resumes (a single node holding
  all calls would re-run them).
- Joining without a join node: free calls that run beside a review do not move the
  run on; the review does (straight to `model` when nothing was approved), or the
  approved calls do, all in one step, so `model` runs once, after every answer.

A turn is about six checkpoints (input, model, tools + review, the approved call,
model); each saved step costs time on every turn, so nodes are only added where a
checkpoint buys something (a hook's changes, a pause, a tool's result).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
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
from graph.message_merge import merge_messages
from graph.model_call import (
    CUT_OFF_KIND,
    CUT_OFF_STOP,
    ModelOptions,
    answer_invalid_calls,
    is_cut_off,
    stream_reply,
)
from graph.model_call import cancelled as _cancelled
from graph.policy import Grant, Policy, Verdict
from graph.state import AgentState, ToolTask, add_usage
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
    model_options: ModelOptions | None = None,
) -> CompiledStateGraph:
    """Compile the approval-gated agent. `policy` also takes LangChain's
    `HumanInTheLoopMiddleware(interrupt_on=...)` mapping unchanged."""
    tools_by_name = {t.name: t for t in tools}
    if len(tools_by_name) != len(tools):
        raise ValueError("tool names must be unique")
    rules = policy if isinstance(policy, Policy) else Policy.from_mapping(policy)
    hook_set = hooks if isinstance(hooks, HookSet) else HookSet(hooks)
    bound = model.bind_tools(list(tools)) if tools else model

    def call_model(state: AgentState, config: RunnableConfig, runtime: Runtime[RunContext]) -> dict[str, Any]:
        if not state.get("messages"):
            # A bare `Command(resume=...)` on a thread that never started: nothing to do.
            return {}
        update = _fresh_run(state)
        view: dict[str, Any] = {**state, **update}
        if _cancelled(runtime):
            return {**update, **_stop("Stopped by the person.", "cancelled")}
        if view.get("stop_run"):
            return update
        if view.get("run_model_calls", 0) >= max_model_calls:
            reason = (
                f"Stopped: this run reached its limit of {max_model_calls} model calls. "
                "Send a message to continue."
            )
            return {**update, **_stop(reason, "stopped")}
        # Extra system text lives for one model call: the hooks write it afresh each time.
        hooked = hook_set.run("before_llm", {**view, "model_context": {}})
        update.update({"model_context": {}, **hooked})
        if hooked.get("stop_run"):
            update.setdefault("stop_kind", "stopped")
            return update
        view.update(update)
        history = state["messages"]
        if hooked.get("messages"):
            history = merge_messages(history, [hooked["messages"]])
        ai, cancelled = stream_reply(bound, system_prompt, view, history, config, runtime, model_options)
        update["run_model_calls"] = view.get("run_model_calls", 0) + 1
        if cancelled:
            update.update(_stop("Stopped by the person.", "cancelled"))
        elif is_cut_off(ai):
            update.update(_stop(CUT_OFF_STOP, CUT_OFF_KIND))
        update["messages"] = [*hooked.get("messages", []), ai, *answer_invalid_calls(ai)]
        # A hook's own user message (a summary, a nudge) belongs to this run.
        update["run_message_id"] = _last_human_id(history, view.get("run_message_id"))
        if ai.usage_metadata:
            usage = {
                "input_tokens": ai.usage_metadata.get("input_tokens", 0),
                "output_tokens": ai.usage_metadata.get("output_tokens", 0),
                "total_tokens": ai.usage_metadata.get("total_tokens", 0),
            }
            update["usage"] = add_usage(update.get("usage"), usage)
            update["run_usage"] = add_usage(view.get("run_usage"), usage)
            emit("usage", **usage)
        return update

    def after_model(state: AgentState, runtime: Runtime[RunContext]) -> Sequence[Send | str]:
        if state.get("stop_run"):
            return ["finish"]
        # Calls with broken arguments were answered with errors already; the model
        # still gets another turn to react to them.
        last = _last_ai(state)
        if last is None:
            return [END]  # nothing was asked (see call_model)
        if last.tool_calls:
            return ["before_tool"] if hook_set["before_tool"] else dispatch(state, runtime)
        if last.invalid_tool_calls:
            return ["model"]
        return ["finish"] if hook_set["on_exit"] else [END]

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
                Send("run_tool", {"call": c, "mode": "skip", "note": stop, "moves_on": True})
                for c in _unanswered(state)
            ] or ["model"]
        now, gated = classify(state)
        # Beside a review, the review moves the run on once it is answered.
        targets: list[Send | str] = [Send("run_tool", {**task, "moves_on": not gated}) for task in now]
        if gated:
            targets.append("review")
        return targets or ["model"]

    def review(state: AgentState) -> Command:
        _, gated = classify(state)
        request = rv.build_request(gated, tools_by_name)
        with rv.answering(request, tools_by_name) as schema:
            reply = interrupt(request, response_schema=schema)
        sends: list[Send] = []
        messages: list[ToolMessage] = []
        grants: list[dict[str, Any]] = []
        for (call, _), decision in zip(gated, reply.decisions, strict=True):
            if (grant := rv.grant_from(decision, call["name"])) is not None:
                grants.append(grant.to_dict())
            if isinstance(decision, rv.Approve):
                sends.append(Send("run_tool", {"call": call, "mode": "run", "moves_on": True}))
            elif isinstance(decision, rv.Edit):
                edited: ToolCall = {**call, "args": decision.edited_action.args}
                note = rv.edit_note(call["args"], edited["args"])
                sends.append(Send("run_tool", {"call": edited, "mode": "run", "note": note, "moves_on": True}))
            else:
                if isinstance(decision, rv.Reject):
                    msg, status = rv.rejected_message(call, decision.message), "rejected"
                else:
                    msg, status = rv.responded_message(call, decision.message), "responded"
                messages.append(finished(call, msg, status))
        update: dict[str, Any] = {"messages": messages}
        if grants:
            update["grants"] = grants
        return Command(goto=sends or "model", update=update)

    def run_tool(task: ToolTask, config: RunnableConfig) -> Command:
        update = _run_call(task, config)
        return Command(goto="model" if task.get("moves_on", True) else (), update=update)

    def _run_call(task: ToolTask, config: RunnableConfig) -> dict[str, Any]:
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
            seen = _last_human_id(update.get("messages") or [], state.get("run_message_id"))
            return Command(goto="model", update={**update, "continue_run": False, "run_message_id": seen})
        return Command(goto=END, update=update)

    builder = StateGraph(AgentState, context_schema=RunContext)
    builder.add_node("model", call_model)
    builder.add_node("before_tool", before_tool)
    builder.add_node("review", review, destinations=("run_tool", "model"))
    builder.add_node("run_tool", run_tool, destinations=("model",))
    builder.add_node("finish", finish, destinations=("model", "finish", END))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", after_model, ["before_tool", "run_tool", "review", "model", "finish", END])
    builder.add_conditional_edges("before_tool", dispatch, ["run_tool", "review", "model"])
    compiled = builder.compile(checkpointer=checkpointer, name=name)
    # The Session warms up and closes the hooks with the agent (see graph.hooks).
    compiled.gatehouse_hooks = hook_set  # type: ignore[attr-defined]
    return compiled


def _journaled_answer(call: ToolCall, msg: ToolMessage, status: str) -> dict[str, Any]:
    """A call answered from the journal (or by a person after a crash), not run now."""
    emit("tool_started", call_id=call["id"], name=call["name"], args=call["args"])
    return {"messages": [finished(call, msg, status)]}


# Reset when a new user message starts a run; kept across pauses, retries and the
# model calls of one run.
RUN_KEYS: dict[str, Any] = {
    "run_model_calls": 0,
    "run_usage": {},
    "stop_run": None,
    "stop_kind": None,
    "continue_run": False,
    "hook_run": {},
}


def _fresh_run(state: Mapping[str, Any]) -> dict[str, Any]:
    """The per-run keys, reset, when the latest user message is one this run has not
    seen (a new message started it); else nothing. Checked in the model node rather
    than in a node of its own: every node is a saved step on every turn."""
    latest = _last_human_id(state.get("messages") or [], None)
    if latest is None or latest == state.get("run_message_id"):
        return {}
    return {**RUN_KEYS, "run_message_id": latest}


def _last_human_id(messages: Sequence[AnyMessage], default: str | None) -> str | None:
    for msg in reversed(messages):
        if isinstance(msg, HumanMessage):
            return msg.id
    return default


def _stop(reason: str, kind: str) -> dict[str, Any]:
    return {"stop_run": reason, "stop_kind": kind}


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

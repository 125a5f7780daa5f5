"""The `review` node: the request a person answers, and what their answer means.

The request is LangChain's `HITLRequest` plus Gatehouse extras; the answer is checked
by a pydantic model bound to the request (`answering`) handed to
`interrupt(response_schema=...)`, so LangGraph refuses a wrong answer before anything
is saved, on every path (Studio, the SDK). The node re-runs from its start on resume:
nothing with side effects comes before its `interrupt()`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from langgraph.types import Command, Interrupt, Send, interrupt
from pydantic import (
    BaseModel,
    GetJsonSchemaHandler,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from gatehouse.graph.agent.authority import decide, refusal
from gatehouse.graph.agent.call_ids import id_of
from gatehouse.graph.agent.context import RunContext
from gatehouse.graph.agent.deps import AgentDeps
from gatehouse.graph.agent.emit import decided_by, thread_of, visiting
from gatehouse.graph.agent.gate import keep_read, split_turn
from gatehouse.graph.agent.policy import Grant, Verdict
from gatehouse.graph.agent.state import AgentState
from gatehouse.graph.agent.tool_call import args_problem, finished
from gatehouse.graph.agent.tool_messages import edit_note, rejected, responded
from gatehouse.graph.protocol.answers import (
    MISSING_REJECTED,
    Approve,
    Edit,
    Reject,
    Respond,
    ReviewAnswer,
)
from gatehouse.graph.protocol.inbox_format import describe_turn, from_inbox, is_inbox_answer
from gatehouse.graph.protocol.pauses import ActionRequest, ApprovalRequest, ReviewConfig
from gatehouse.graph.protocol.tools import scoped, spec_of

PREVIEW_CHARS = 20_000


def review(
    state: AgentState,
    config: RunnableConfig,
    runtime: Runtime[RunContext] | None = None,
    *,
    deps: AgentDeps,
) -> Command:
    """ONE interrupt for a turn's gated calls; approved or edited ones get a `run_tool`
    task each, the others their ToolMessage here. Every decision is recorded first."""
    thread_id = thread_of(config)
    now, gated = split_turn(state, deps, thread_id, runtime, reviewing=True, config=config)
    # Calls already run (a replay from before they ran): their journaled result, no card.
    sends: list[Send] = [
        Send("run_tool", {**task, "moves_on": True}) for task in now if task.get("replayed")
    ]
    if not gated:
        return Command(goto=sends or "model")
    request = build_request(gated, deps.tools)
    # Who answers is in the run's config, so `approvers` are checked with the answer.
    who, visitor = decided_by(config), visiting(config)
    with answering(request, deps.tools, actor=who["actor"], visitor=visitor) as schema:
        answer = interrupt(request, response_schema=schema)
    reads = decide(
        deps,
        config,
        "review",
        [(call, decision) for (call, _), decision in zip(gated, answer.decisions, strict=True)],
        request_id=request_id(config),
        who=who,
        visitor=visitor,
        read_back=True,
    )
    if reads is not None:  # what the approved calls' tasks read next: nothing is newer
        keep_read(config, runtime, thread_id, [id_of(call) for call, _ in gated], reads)
    messages: list[ToolMessage] = []
    grants: list[dict[str, Any]] = []
    for (call, _), decision in zip(gated, answer.decisions, strict=True):
        if isinstance(decision, Approve | Edit) and (flag := decision.always_allow):
            grants.append(Grant(call["name"], flag if isinstance(flag, str) else None).to_dict())
        if isinstance(decision, Approve):
            sends.append(Send("run_tool", {"call": call, "mode": "run", "moves_on": True}))
        elif isinstance(decision, Edit):
            edited: ToolCall = {**call, "args": decision.edited_action.args}
            note = edit_note(call["args"], edited["args"])
            sends.append(
                Send("run_tool", {"call": edited, "mode": "run", "note": note, "moves_on": True})
            )
        elif isinstance(decision, Reject):
            messages.append(finished(call, rejected(call, decision.message), "rejected"))
        else:
            messages.append(finished(call, responded(call, decision.message), "responded"))
    update: dict[str, Any] = {"messages": messages}
    if grants:
        update["grants"] = grants
    return Command(goto=sends or "model", update=update)


@functools.cache
def _base_json_schema() -> JsonSchemaValue:
    """ReviewAnswer's JSON schema, `$defs` inlined (handed out mid-generation)."""
    schema = TypeAdapter(ReviewAnswer).json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(defs[node["$ref"].rsplit("/", 1)[-1]])
            # A discriminator's mapping names $defs; the inlined variants say their type.
            return {k: inline(v) for k, v in node.items() if k != "discriminator"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(schema)


def _json_copy(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _json_copy(v) for k, v in node.items()}
    return [_json_copy(v) for v in node] if isinstance(node, list) else node


def build_request(
    calls: Sequence[tuple[ToolCall, Verdict]], tools: Mapping[str, BaseTool]
) -> dict[str, Any]:
    specs = [spec_of(tools[call["name"]]) for call, _ in calls]
    # After each headline: what it may touch, the policy's words; then the call in full.
    leads = [
        [_preview(spec.describe, call["args"]) or "", verdict.description or ""]
        for (call, verdict), spec in zip(calls, specs, strict=True)
    ]
    descriptions = describe_turn([call for call, _ in calls], leads)
    actions = [
        ActionRequest(
            name=call["name"],
            args=call["args"],
            description=description,
            tool_call_id=call["id"],
            risk=spec.risk,
            preview=_preview(spec.preview, call["args"]),
        )
        for (call, _), spec, description in zip(calls, specs, descriptions, strict=True)
    ]
    configs = [
        ReviewConfig(
            action_name=call["name"],
            allowed_decisions=list(verdict.allowed_decisions),
            approvers=list(verdict.approvers) or None,
        )
        for call, verdict in calls
    ]
    return ApprovalRequest(action_requests=actions, review_configs=configs).wire()


def _preview(render: Any, args: dict[str, Any]) -> str | None:
    if render is None:
        return None
    # A preview is a courtesy: one that fails must not block the approval itself.
    try:
        text = render(dict(args))
    except Exception as exc:
        return f"(no preview: {type(exc).__name__}: {exc})"
    if text is not None and len(text) > PREVIEW_CHARS:
        text = text[:PREVIEW_CHARS] + "\n… (preview truncated)"
    return text


@dataclass(frozen=True)
class _Request:
    actions: list[dict[str, Any]]
    configs: list[dict[str, Any]]
    tools: Mapping[str, BaseTool]
    actor: str | None = None
    visitor: bool = False


# The request `answering` binds: one answer class for all (one per request: ~3 ms a turn).
_answering: ContextVar[_Request | None] = ContextVar("gatehouse_answering", default=None)


def _request_being_answered() -> _Request:
    bound = _answering.get()
    if bound is None:
        raise RuntimeError("CheckedAnswer validates only inside `with answering(request, tools):`")
    return bound


class CheckedAnswer(ReviewAnswer):
    """An answer that fits the request bound by `answering`."""

    @model_validator(mode="before")
    @classmethod
    def _in_request_order(cls, data: Any) -> Any:
        return _normalise(data, _request_being_answered())

    @model_validator(mode="after")
    def _fits_request(self) -> CheckedAnswer:
        _check(self.decisions, _request_being_answered())
        return self

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # LangGraph attaches it to every interrupt (~2 ms to make): made once, copied
        # each time (~3x faster than `deepcopy`).
        return _json_copy(_base_json_schema())


@contextmanager
def answering(
    request: Mapping[str, Any],
    tools: Mapping[str, BaseTool],
    *,
    actor: str | None = None,
    visitor: bool = False,
) -> Iterator[type[CheckedAnswer]]:
    """Check answers (`CheckedAnswer`) against `request` in this block; `actor` answers."""
    actions, configs = list(request["action_requests"]), list(request["review_configs"])
    with scoped(_answering, _Request(actions, configs, tools, actor, visitor)):
        yield CheckedAnswer


def _normalise(data: Any, bound: _Request) -> Any:
    if isinstance(data, BaseModel):
        data = data.model_dump()
    if is_inbox_answer(data):  # Agent Inbox's older format (graph/protocol/inbox_format.py)
        data = from_inbox(data, bound.actions, bound.configs)
    if isinstance(data, list):  # a bare list of decisions
        data = {"decisions": data}
    if not isinstance(data, Mapping) or "decisions" not in data:
        raise ValueError(
            'an answer must be {"decisions": [...]} with one decision per action request'
        )
    decisions = data["decisions"]
    fill = _missing_rejected(data.get("reject_missing", False))
    if isinstance(decisions, Mapping):  # keyed by tool call id
        ids = [a["tool_call_id"] for a in bound.actions]
        if unknown := [k for k in decisions if k not in ids]:
            raise ValueError(
                f"decisions name tool calls that are not pending: {unknown}; pending: {ids}"
            )
        missing = [i for i in ids if i not in decisions]
        if missing and fill is None:
            raise ValueError(
                f"no decision for tool call(s) {missing} (or say reject_missing: true)"
            )
        decisions = [decisions.get(i, fill) for i in ids]
    elif isinstance(decisions, list) and fill is not None:  # a null: left to reject_missing
        decisions = [fill if d is None else d for d in decisions]
    return {**data, "decisions": decisions}


def _missing_rejected(flag: Any) -> dict[str, Any] | None:
    """The decision `reject_missing` gives an undecided call (None: the option is off)."""
    if flag is False or flag is None:
        return None
    if flag is True:
        return {"type": "reject", "message": MISSING_REJECTED}
    if isinstance(flag, str) and flag.strip():
        return {"type": "reject", "message": flag.strip()}
    raise ValueError("reject_missing must be true, false or a reason (text)")


def _check(decisions: list[Any], bound: _Request) -> None:
    actions, configs, tools, actor = bound.actions, bound.configs, bound.tools, bound.actor
    if len(decisions) != len(actions):
        raise ValueError(
            f"expected {len(actions)} decision(s), one per action request, got {len(decisions)}"
        )
    for i, (decision, action, config) in enumerate(zip(decisions, actions, configs, strict=True)):
        where = f"decision {i + 1} ({action['name']})"
        approvers = config.get("approvers") or ()
        if (problem := refusal(actor, action["name"], approvers, bound.visitor)) is not None:
            raise ValueError(f"{where}: {problem}; the call stays pending")
        if decision.type not in config["allowed_decisions"]:
            raise ValueError(
                f"{where}: {decision.type!r} is not allowed; allowed: {', '.join(config['allowed_decisions'])}"
            )
        if isinstance(decision, Respond) and not decision.message.strip():
            raise ValueError(f"{where}: a respond decision needs a non-empty message")
        if isinstance(decision, Edit):
            if decision.edited_action.name != action["name"]:
                raise ValueError(
                    f"{where}: an edit may change the arguments, not the tool "
                    f"({decision.edited_action.name!r} instead of {action['name']!r})"
                )
            if problem := args_problem(tools[action["name"]], decision.edited_action.args):
                raise ValueError(f"{where}: edited arguments do not fit the tool: {problem}")


def explain(error: ValidationError) -> str:
    """A person-readable reason from a refused answer."""
    parts = []
    for e in error.errors():
        msg = str(e.get("msg", "")).removeprefix("Value error, ")
        loc = ".".join(str(p) for p in e.get("loc", ()) if p not in ("decisions",))
        parts.append(f"{loc}: {msg}" if loc and "decision" not in msg else msg)
    return "; ".join(dict.fromkeys(parts))


def request_id(config: RunnableConfig) -> str:
    """The id of this task's interrupt, recorded with each decision."""
    return Interrupt.from_ns(None, (config.get("configurable") or {}).get("checkpoint_ns") or "").id

"""The one door for authority: every decision that lets a call run or answers for it
enters the decision log here (`enter`), and nowhere else. It checks who decides (the
run's trusted identity, never a client's field), whether they may (the tool's
`approvers`, on every kind of question; a grant's giver when it is read,
`grant_holds`) and what it binds (`DecisionRecord.binds`). A refused entry writes
nothing; answers are checked with `refusal` before LangGraph stores a resume value.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt
from pydantic import model_validator

from gatehouse.graph.agent.call_ids import id_of
from gatehouse.graph.agent.deps import AgentDeps, DecisionLog, GateReads
from gatehouse.graph.agent.emit import decided_by, thread_of, visiting
from gatehouse.graph.agent.policy import Policy
from gatehouse.graph.protocol.answers import Approve, Edit, OutcomeAnswer
from gatehouse.graph.protocol.decisions import STANDING_QUESTION, DecisionRecord, StandingGrant
from gatehouse.graph.protocol.identity import identity_problem, listed
from gatehouse.graph.protocol.tools import scoped


class NotAllowed(PermissionError):
    """A decision the door refused; nothing was recorded."""


def refusal(
    actor: str | None, tool: str, approvers: Sequence[str], visitor: bool = False
) -> str | None:
    """Why `actor` may not decide `tool` calls (None: they may). No approvers: anyone
    who may act in the thread; a `visitor` (not the owner) only where listed."""
    if actor is not None and (problem := identity_problem(actor)) is not None:
        return f"the identity {problem}: it decides nothing"
    if approvers and not listed(actor, approvers):
        you = f"you are {actor}" if actor else "this answer names nobody"
        return f"only {', '.join(approvers)} may decide {tool} calls ({you})"
    if visitor and not approvers:
        return f"only the thread's owner decides its {tool} calls (you are {actor})"
    return None


def approvers_of(policy: Policy, tool: str) -> tuple[str, ...]:
    return policy.for_tool(tool).approvers


def grant_holds(grant: StandingGrant, policy: Policy) -> bool:
    """Whether a grant's giver may still decide its tool."""
    return refusal(grant.actor, grant.tool, approvers_of(policy, grant.tool)) is None


def _binding_problem(record: DecisionRecord) -> str | None:
    if not (record.thread_id and record.tool_call_id and record.tool):
        return "a decision must name its thread, call and tool"
    if not isinstance(record.args, Mapping):
        return "a decision must carry the call's arguments"
    if record.question == "review" and record.decision != "auto_approve" and not record.request_id:
        return "an answer must name the request it answers"
    return None


def enter(
    log: DecisionLog | None,
    policy: Policy,
    records: Sequence[DecisionRecord],
    *,
    visitor: bool = False,
    read_back: bool = False,
) -> GateReads | None:
    """Record `records` after checking each; `NotAllowed`, recording none, when one is
    refused (checked also without a log: resolve.py acts on what the door allows).
    `read_back`: the gate's read of their calls, in the same transaction."""
    for record in records:
        problem = _binding_problem(record)
        if problem is None and record.question != STANDING_QUESTION:
            approvers = approvers_of(policy, record.tool)
            problem = refusal(record.actor, record.tool, approvers, visitor)
        if problem is not None:
            raise NotAllowed(f"{problem}; nothing was recorded")
    if log is None:
        return None
    if read_back and records:
        return log.record_and_read(records)
    log.record(records)
    return None


def record_of(
    thread_id: str,
    question: str,
    call: ToolCall,
    decision: Any,
    *,
    source: str | None,
    actor: str | None,
    request_id: str | None = None,
) -> DecisionRecord:
    edited = isinstance(decision, Edit)
    always = decision.always_allow if isinstance(decision, Approve | Edit) else None
    return DecisionRecord(
        thread_id=thread_id,
        question=question,
        tool_call_id=id_of(call),
        tool=call["name"],
        decision=decision.type,
        args=decision.edited_action.args if edited else call["args"],
        requested_args=call["args"] if edited else None,
        message=getattr(decision, "message", None),
        always_allow=("*" if always is True else always) if always else None,
        source=source,
        actor=actor,
        decided_at=time.time(),
        request_id=request_id,
    )


def decide(
    deps: AgentDeps,
    config: RunnableConfig,
    question: str,
    answers: Sequence[tuple[ToolCall, Any]],
    *,
    request_id: str | None = None,
    who: Mapping[str, str | None] | None = None,
    visitor: bool | None = None,
    read_back: bool = False,
) -> GateReads | None:
    """Enter a person's (call, decision) answers to one question, by the run's identity."""
    who = dict(who or decided_by(config))
    source, actor, thread_id = who.get("source"), who.get("actor"), thread_of(config)
    records = [
        record_of(thread_id, question, call, d, source=source, actor=actor, request_id=request_id)
        for call, d in answers
    ]
    visitor = visiting(config) if visitor is None else visitor
    return enter(deps.decisions, deps.policy, records, visitor=visitor, read_back=read_back)


# Who answers an "outcome unknown" question and its tool's approvers (`CheckedOutcome`).
_deciding: ContextVar[tuple[str | None, str, tuple[str, ...], bool] | None] = ContextVar(
    "gatehouse_deciding", default=None
)


class CheckedOutcome(OutcomeAnswer):
    @model_validator(mode="after")
    def _may_decide(self) -> CheckedOutcome:
        bound = _deciding.get()
        if bound is not None and (problem := refusal(*bound)) is not None:
            raise ValueError(f"{problem}; the question stays pending")
        return self


@contextmanager
def deciding(
    actor: str | None, tool: str, policy: Policy, visitor: bool = False
) -> Iterator[type[CheckedOutcome]]:
    with scoped(_deciding, (actor, tool, approvers_of(policy, tool), visitor)):
        yield CheckedOutcome


def ask_outcome(
    request: dict[str, Any], call: ToolCall, attempt: int, deps: AgentDeps, config: RunnableConfig
) -> OutcomeAnswer:
    """Ask what became of a call a crash cut off; the answer enters through the door."""
    actor = decided_by(config)["actor"]
    with deciding(actor, call["name"], deps.policy, visiting(config)) as schema:
        answer = interrupt(request, response_schema=schema)
        if not isinstance(answer, OutcomeAnswer):
            answer = schema.model_validate(answer)
    decide(deps, config, f"outcome:{attempt}", [(call, answer)])
    return answer

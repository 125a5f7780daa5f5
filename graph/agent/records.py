"""What the agent writes to the decision log besides a person's answer, through the
one door (authority.py): an auto-approval, and a run a standing grant let through
(question "standing", decision "always_allowed", naming the grant found in the log,
never one from a task), so front ends show why nobody was asked.
"""

from __future__ import annotations

import time

from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graph.agent.authority import enter
from graph.agent.call_ids import id_of
from graph.agent.context import RunContext
from graph.agent.deps import AgentDeps
from graph.agent.emit import decided_by, thread_of
from graph.agent.gate import AutoApproved, auto_approving, grants_of, judge
from graph.agent.policy import Grant
from graph.protocol.decisions import (
    ALWAYS_ALLOWED,
    AUTO_APPROVE,
    STANDING_QUESTION,
    DecisionRecord,
    grant_label,
)


def record_auto_approval(
    call: ToolCall, config: RunnableConfig, runtime: Runtime[RunContext], deps: AgentDeps
) -> None:
    """Record the auto-approval a task claims, when the gate, asked afresh, gives it.
    A node writes it, not the route that sent the task: routes also run for state edits."""
    if deps.decisions is None:
        return
    thread_id = thread_of(config)
    grants = grants_of({}, deps, thread_id)
    auto = auto_approving(runtime, deps, grants)
    verdict = judge(call, deps, thread_id, grants, runtime, auto=auto) if auto else None
    if not isinstance(verdict, AutoApproved):
        return  # already recorded (a re-run), or not auto-approved: permit decides
    message = f"auto-approved: auto-approve is on for this {verdict.by}"
    _enter(call, config, deps, "review", AUTO_APPROVE, message)


def record_grant_run(
    call: ToolCall, grant: Grant, config: RunnableConfig, deps: AgentDeps
) -> str | None:
    """Log that `grant` is why `call` runs, and return its label; None without a log, or
    when a person approved this very call (the grant came with that approval)."""
    if deps.decisions is None:
        return None
    thread_id = thread_of(config)
    if any(
        r.question == "review" and r.runs for r in deps.decisions.approvals(thread_id, id_of(call))
    ):
        return None
    label = grant_label(grant.tool, grant.pattern)
    # The grant's own record says who gave it; this one, which run it let through.
    message = f"ran without asking: always allowed in this thread by the grant {label}"
    _enter(call, config, deps, STANDING_QUESTION, ALWAYS_ALLOWED, message)
    return label


def _enter(
    call: ToolCall,
    config: RunnableConfig,
    deps: AgentDeps,
    question: str,
    decision: str,
    message: str,
) -> None:
    who = decided_by(config)
    record = DecisionRecord(
        thread_id=thread_of(config),
        question=question,
        tool_call_id=id_of(call),
        tool=call["name"],
        decision=decision,
        args=call["args"],
        message=message,
        source=who["source"],
        actor=who["actor"],
        decided_at=time.time(),
    )
    enter(deps.decisions, deps.policy, [record])

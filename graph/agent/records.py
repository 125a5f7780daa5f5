"""What the agent writes to the decision log, and in which words: a person's answer
to a review or an outcome question, an auto-approval, and a run a standing grant let
through. The gate (graph/agent/gate.py) reads these rows back: a gated call runs only
on its recorded approval.

Standing permissions made visible: a call the policy would gate that runs because an
"always allow" grant of the thread covers it gets the same trail as one a person
approved. Its entry (question "standing", decision "always_allowed", naming the
grant) is written before the call runs, and its result and `tool_started` event name
the grant, so every front end can show why nobody was asked. The grant is the one
the gate found in the decision log, never one taken from a task (a client's forged
`Send` cannot put a grant on a call's record).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig

from graph.agent.call_ids import id_of
from graph.agent.deps import AgentDeps
from graph.agent.emit import decided_by, thread_of
from graph.agent.policy import Grant
from graph.agent.state import ToolTask
from graph.protocol.answers import Approve, Edit
from graph.protocol.decisions import (
    ALWAYS_ALLOWED,
    AUTO_APPROVE,
    STANDING_QUESTION,
    DecisionRecord,
    grant_label,
)


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
    """The decision log's row for one answered call."""
    edited = isinstance(decision, Edit)
    always = (
        getattr(decision, "always_allow", None) if isinstance(decision, Approve | Edit) else None
    )
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


def record_auto_approvals(
    tasks: Sequence[ToolTask], deps: AgentDeps, thread_id: str, config: RunnableConfig
) -> None:
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
                tool_call_id=id_of(t["call"]),
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


def record_grant_run(
    call: ToolCall, grant: Grant, config: RunnableConfig, deps: AgentDeps
) -> str | None:
    """`grant` (found by the gate in the decision log) is why `call` runs: log it (once
    per call) and return the grant's label ("write_file:*.md"); None without a decision
    log, or when a person approved this very call (the grant came with that approval)."""
    if deps.decisions is None:
        return None
    thread_id = thread_of(config)
    if any(
        r.question == "review" and r.runs for r in deps.decisions.for_call(thread_id, id_of(call))
    ):
        return None
    label = grant_label(grant.tool, grant.pattern)
    who = decided_by(config)
    # The grant's own record says who gave it; this one, which run it let through.
    deps.decisions.record(
        [
            DecisionRecord(
                thread_id=thread_id,
                question=STANDING_QUESTION,
                tool_call_id=id_of(call),
                tool=call["name"],
                decision=ALWAYS_ALLOWED,
                args=call["args"],
                message=f"ran without asking: always allowed in this thread by the grant {label}",
                decided_at=time.time(),
                source=who["source"],
                actor=who["actor"],
            )
        ]
    )
    return label

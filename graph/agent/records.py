"""What the agent writes to the decision log besides a person's answer, and in which
words: an auto-approval, and a run a standing grant let through; through the one door
(graph/agent/authority.py), like every record. The gate (graph/agent/gate.py) reads
these rows back: a gated call runs only on its recorded approval.

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

from langchain_core.messages import ToolCall
from langchain_core.runnables import RunnableConfig

from graph.agent.authority import enter
from graph.agent.call_ids import id_of
from graph.agent.deps import AgentDeps
from graph.agent.emit import decided_by, thread_of
from graph.agent.policy import Grant
from graph.agent.state import ToolTask
from graph.protocol.decisions import (
    ALWAYS_ALLOWED,
    AUTO_APPROVE,
    STANDING_QUESTION,
    DecisionRecord,
    grant_label,
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
    enter(
        deps.decisions,
        deps.policy,
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
        ],
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
        r.question == "review" and r.runs for r in deps.decisions.approvals(thread_id, id_of(call))
    ):
        return None
    label = grant_label(grant.tool, grant.pattern)
    who = decided_by(config)
    # The grant's own record says who gave it; this one, which run it let through.
    enter(
        deps.decisions,
        deps.policy,
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
        ],
    )
    return label

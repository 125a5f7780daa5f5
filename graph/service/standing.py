"""A thread's standing permissions, for people: the "always allow" grants in force
(who gave each, when, from where) and withdrawing one. Read from and written to the
decision log, the one place the graph reads grants from (graph/agent/gate.py): a
revoke is a later record for the same tool and pattern, so the log stays append-only
and the next model turn of any run, in any process, asks again.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from graph.protocol.decisions import (
    ALL_TOOLS,
    GRANT_QUESTION,
    REVOKE,
    DecisionRecord,
    StandingGrant,
    grant_label,
)


def grants_in_force(decisions: Any, thread_id: str) -> list[StandingGrant]:
    """The thread's grants in force, oldest first; the auto-approve switch is the grant "*"."""
    if decisions is None:
        return []
    latest: dict[tuple[str, str], DecisionRecord] = {}
    for record in decisions.for_thread(thread_id):  # oldest first: the latest record per grant wins
        if record.always_allow is not None:
            latest.pop((record.tool, record.always_allow), None)
            latest[(record.tool, record.always_allow)] = record
    return [
        StandingGrant(thread_id=thread_id, tool=tool, pattern=None if always == "*" else always,
                      granted_at=r.decided_at, source=r.source, actor=r.actor)
        for (tool, always), r in latest.items() if r.decision != REVOKE
    ]


def revoke_record(decisions: Any, grant: StandingGrant, *, source: str | None, actor: str | None) -> DecisionRecord:
    """The record that withdraws `grant`, dated after every earlier record of the
    thread (the latest record decides)."""
    latest = max((r.decided_at for r in decisions.for_thread(grant.thread_id)), default=0.0)
    return DecisionRecord(
        thread_id=grant.thread_id,
        question=GRANT_QUESTION,
        tool_call_id=f"revoke-{uuid.uuid4().hex}",
        tool=grant.tool,
        decision=REVOKE,
        args={},
        message="auto-approve off" if grant.tool == ALL_TOOLS else f"revoked: {grant.label}",
        always_allow=grant.pattern or "*",
        source=source,
        actor=actor,
        decided_at=max(time.time(), latest + 1e-3),
    )


def find_grant(grants: list[StandingGrant], wanted: str) -> StandingGrant:
    """The grant named `wanted` (its label: "write_file", "write_file:*.md", "*")."""
    for grant in grants:
        if grant.label == wanted or grant_label(grant.tool, grant.pattern) == wanted.strip():
            return grant
    listed = ", ".join(g.label for g in grants) or "none"
    raise ValueError(f"no grant {wanted!r} in force in this thread (in force: {listed})")

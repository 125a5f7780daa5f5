"""A thread's standing permissions, for people: the "always allow" grants in force
(who gave each, when, from where) and withdrawing one. Read from and written to the
decision log, the one place the graph reads grants from (graph/agent/gate.py): a
revoke is a later record for the same tool and pattern, so the log stays append-only
and the next model turn of any run, in any process, asks again.

`StandingPermissions` is a part of `Session` (graph/service/session.py): the grants,
the thread's auto-approve switch (the grant "*"), and the session's own auto-approve
mode.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from graph.agent.authority import enter
from graph.agent.compiled import parts_of
from graph.agent.policy import Policy
from graph.protocol.decisions import (
    ALL_TOOLS,
    GRANT_QUESTION,
    REVOKE,
    DecisionRecord,
    StandingGrant,
    grant_label,
)
from graph.protocol.threads import check_thread_id
from graph.store.decisions import switch_record
from graph.store.storage import Storage


def revoke_record(
    decisions: Any, grant: StandingGrant, *, source: str | None, actor: str | None
) -> DecisionRecord:
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


class StandingPermissions:
    """What runs without a click: a thread's grants and auto-approve switch (stored),
    and this session's auto-approve mode (not stored)."""

    storage: Storage
    agent: Any
    source: str
    actor: str | None
    # This session's auto-approve mode, handed to each run it starts in a private
    # field of the run context: no client of the graph can set it.
    _auto_approve: threading.Event

    @property
    def auto_approve(self) -> bool:
        """Whether this session's auto-approve mode is on: every run it starts (and
        each run under way, from its next model turn) runs calls that would ask for
        approval without asking. `deny` still refuses; each such call is journaled and
        recorded in the decision log as "auto_approve"."""
        return self._auto_approve.is_set()

    def set_auto_approve(self, on: bool) -> None:
        """Turn this session's auto-approve mode on or off (not stored: it ends with the
        session). One run can also have it on or off whatever the session's mode:
        `send(..., auto_approve=True)` (and `resume`, `retry`, `fork`), e.g. for a web
        app whose one Session serves many browser sessions."""
        if on:
            self._auto_approve.set()
        else:
            self._auto_approve.clear()

    def thread_auto_approve(self, thread_id: str) -> bool:
        """Whether the thread's own auto-approve switch is on (kept in the database)."""
        check_thread_id(thread_id)
        decisions = self.storage.decisions
        return decisions is not None and any(
            g.tool == ALL_TOOLS for g in decisions.grants(thread_id)
        )

    def set_thread_auto_approve(
        self, thread_id: str, on: bool, *, actor: str | None = None, source: str | None = None
    ) -> None:
        """Turn the thread's auto-approve switch on or off. Stored in the decision log
        (who, when, from where: this session's `actor` / `source` unless given), so it
        holds for every client of the thread, LangGraph Server included, until it is
        turned off; only this API writes it."""
        check_thread_id(thread_id)
        decisions = self.storage.decisions
        if decisions is None:
            raise ValueError("a thread's auto-approve switch needs storage with a decision log")
        if self.thread_auto_approve(thread_id) == on:
            return
        # After every earlier record of the thread: the latest one decides.
        latest = max((r.decided_at for r in decisions.for_thread(thread_id)), default=0.0)
        decided_at = max(time.time(), latest + 1e-3)
        self._enter(
            switch_record(
                thread_id,
                on,
                source=source or self.source,
                actor=actor or self.actor,
                decided_at=decided_at,
            )
        )

    def auto_approving(self, thread_id: str) -> str | None:
        """Why calls of this thread would be auto-approved now: "thread" (its switch),
        "session" (this session's mode), or None. What a front end shows while it is on."""
        if self.thread_auto_approve(thread_id):
            return "thread"
        return "session" if self.auto_approve else None

    def grants(self, thread_id: str) -> list[StandingGrant]:
        """The thread's standing "always allow" grants in force, oldest first, each with
        who gave it, when and from where; the auto-approve switch is the grant "*"."""
        check_thread_id(thread_id)
        decisions = self.storage.decisions
        return [] if decisions is None else decisions.grants(thread_id)

    def revoke_grant(
        self, thread_id: str, grant: str, *, actor: str | None = None, source: str | None = None
    ) -> StandingGrant:
        """Withdraw a standing grant by its label ("write_file", "write_file:*.md", "*"),
        recorded in the decision log (who, when, from where); the thread's next model
        turn asks again. Raises ValueError, changing nothing, when no such grant is in force."""
        found = find_grant(self.grants(thread_id), grant)
        decisions = self.storage.decisions
        assert decisions is not None  # the grant in force was read from it
        self._enter(
            revoke_record(decisions, found, source=source or self.source, actor=actor or self.actor)
        )
        return found

    def _enter(self, record: DecisionRecord) -> None:
        """Through the door (graph/agent/authority.py): a switch or a revoke is decided by
        someone who may decide its tool; `PermissionError` (`NotAllowed`) otherwise."""
        parts = parts_of(self.agent)
        enter(self.storage.decisions, parts.policy if parts is not None else Policy(), [record])

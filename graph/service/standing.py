"""What runs without a click: a thread's standing grants and auto-approve switch (the
grant "*"), kept in the decision log (append-only: a later record for the same tool
and pattern withdraws one), and a session's own auto-approve mode (not stored).
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from typing import Any

from gatehouse.graph.agent.authority import enter
from gatehouse.graph.agent.compiled import parts_of
from gatehouse.graph.agent.policy import Policy
from gatehouse.graph.protocol.answers import Approve
from gatehouse.graph.protocol.decisions import ALL_TOOLS, DecisionRecord, StandingGrant, grant_label
from gatehouse.graph.protocol.threads import check_thread_id
from gatehouse.graph.store.decisions import Decisions, switch_record
from gatehouse.graph.store.storage import Storage


def standing_record(
    decisions: Decisions,
    thread_id: str,
    tool: str,
    pattern: str | None,
    on: bool,
    *,
    source: str | None,
    actor: str | None,
) -> DecisionRecord:
    """The record that gives (`on`) or withdraws a grant, dated after the thread's last."""
    latest = max((r.decided_at for r in decisions.for_thread(thread_id)), default=0.0)
    switch = switch_record(
        thread_id, on, source=source, actor=actor, decided_at=max(time.time(), latest + 1e-3)
    )
    if tool == ALL_TOOLS and pattern is None:
        return switch
    return dataclasses.replace(
        switch,
        tool_call_id=f"{'grant' if on else 'revoke'}-{uuid.uuid4().hex}",
        tool=tool,
        message=f"{'granted' if on else 'revoked'}: {grant_label(tool, pattern)}",
        always_allow=pattern or "*",
    )


def find_grant(grants: list[StandingGrant], wanted: str) -> StandingGrant:
    """The grant named `wanted` (its label: "write_file", "write_file:*.md", "*")."""
    for grant in grants:
        if grant.label == wanted or grant_label(grant.tool, grant.pattern) == wanted.strip():
            return grant
    listed = ", ".join(g.label for g in grants) or "none"
    raise ValueError(f"no grant {wanted!r} in force in this thread (in force: {listed})")


class StandingPermissions:
    """A thread's grants and switch (stored), and the session's auto-approve `switch`."""

    def __init__(self, agent: Any, storage: Storage, auto_approve: bool) -> None:
        self.agent = agent
        self.storage = storage
        self.switch = threading.Event()
        self.set_auto_approve(auto_approve)

    @property
    def auto_approve(self) -> bool:
        """Whether this session's runs skip asking (`deny` still refuses)."""
        return self.switch.is_set()

    def set_auto_approve(self, on: bool) -> None:
        # Not stored; one run can have its own: `RunOptions(auto_approve=...)`.
        (self.switch.set if on else self.switch.clear)()

    def thread_auto_approve(self, thread_id: str) -> bool:
        return any(g.tool == ALL_TOOLS for g in self.grants(thread_id))

    def set_thread_auto_approve(
        self, thread_id: str, on: bool, *, source: str | None, actor: str | None
    ) -> bool:
        """Turn the thread's switch on or off for every client; False when it already was."""
        self._log(thread_id, "a thread's auto-approve switch")
        if self.thread_auto_approve(thread_id) == on:
            return False
        self._enter(thread_id, ALL_TOOLS, None, on, source=source, actor=actor)
        return True

    def grants(self, thread_id: str) -> list[StandingGrant]:
        """The grants in force, oldest first; the auto-approve switch is the grant "*"."""
        check_thread_id(thread_id)
        decisions = self.storage.decisions
        return [] if decisions is None else decisions.grants(thread_id)

    def grant(
        self,
        thread_id: str,
        tool: str,
        pattern: str | None,
        *,
        source: str | None,
        actor: str | None,
    ) -> StandingGrant:
        """Give a standing grant, its pattern checked as an approval's `always_allow`."""
        self._log(thread_id, "a standing grant")
        if pattern is not None:
            pattern = str(Approve(type="approve", always_allow=pattern).always_allow)
        self._enter(thread_id, tool, pattern, True, source=source, actor=actor)
        return find_grant(self.grants(thread_id), grant_label(tool, pattern))

    def revoke(
        self, thread_id: str, label: str, *, source: str | None, actor: str | None
    ) -> StandingGrant:
        """Withdraw a grant by its label; ValueError when none such is in force."""
        found = find_grant(self.grants(thread_id), label)
        self._enter(thread_id, found.tool, found.pattern, False, source=source, actor=actor)
        return found

    def _log(self, thread_id: str, what: str) -> Decisions:
        check_thread_id(thread_id)
        if self.storage.decisions is None:
            raise ValueError(f"{what} needs storage with a decision log")
        return self.storage.decisions

    def _enter(self, thread_id: str, tool: str, pattern: str | None, on: bool, **who: Any) -> None:
        """Through the door (authority.py): `NotAllowed` for who may not decide the tool."""
        log = self._log(thread_id, "a standing grant")
        parts = parts_of(self.agent)
        policy = parts.policy if parts is not None else Policy()
        enter(log, policy, [standing_record(log, thread_id, tool, pattern, on, **who)])

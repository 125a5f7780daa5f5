"""The answer's pending check (graph/agent/compiled.py `_waits`) reads the checkpoint's
pending writes instead of building the state: it must say what
`get_state(...).interrupts` says, at the head (live) and at every older checkpoint
(a config with a checkpoint id), or a late answer would slip through as a no-op run."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from graph import StaleDecision, ai, tool_call
from graph.agent.compiled import GatehouseGraph
from tests.support.core_fixtures import make_session

CFG: RunnableConfig = {"configurable": {"thread_id": "t1"}}


def test_the_pending_check_agrees_with_get_state_at_every_checkpoint(tmp_path: Path) -> None:
    turn = ai("", tool_call("send_email", {"to": "a@x", "body": "1"}, "c1"))
    session, _, _ = make_session(tmp_path, [turn, "sent"])
    session.send("t1", "go").collect()
    agent = session.agent
    assert isinstance(agent, GatehouseGraph)

    assert agent.get_state(CFG).interrupts and agent._waits(CFG)  # paused at the head
    session.resume("t1", {"decisions": [{"type": "approve"}]}).collect()
    assert not agent.get_state(CFG).interrupts and not agent._waits(CFG)  # decided

    history = list(agent.get_state_history(CFG))
    assert any(s.interrupts for s in history), "the thread paused once"
    for snapshot in history:
        # An older checkpoint's snapshot lists the interrupts raised there, answered or not.
        assert agent._waits(snapshot.config) == bool(snapshot.interrupts), snapshot.config


def test_a_raw_late_answer_is_still_refused_and_changes_nothing(tmp_path: Path) -> None:
    turn = ai("", tool_call("send_email", {"to": "a@x", "body": "1"}, "c1"))
    session, ledger, _ = make_session(tmp_path, [turn, "sent"])
    session.send("t1", "go").collect()
    session.resume("t1", {"decisions": [{"type": "approve"}]}).collect()
    before = session.agent.get_state(CFG)

    with pytest.raises(StaleDecision, match="already decided"):
        session.agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CFG)
    after = session.agent.get_state(CFG)
    assert after.config == before.config and ledger.count("send_email") == 1

"""The answer's pending check (graph/agent/compiled.py `_read_waiting`) reads the checkpoint's
pending writes instead of building the state: it must say what
`get_state(...).interrupts` says, at the head (live) and at every older checkpoint
(a config with a checkpoint id), or a late answer would slip through as a no-op run."""

from __future__ import annotations

import contextvars
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from gatehouse.graph import StaleDecision, ai, tool_call
from gatehouse.graph.agent.compiled import GatehouseGraph
from tests.support.core_fixtures import make_session

CFG: RunnableConfig = {"configurable": {"thread_id": "t1"}}


def test_the_pending_check_agrees_with_get_state_at_every_checkpoint(tmp_path: Path) -> None:
    turn = ai("", tool_call("send_email", {"to": "a@x", "body": "1"}, "c1"))
    session, _, _ = make_session(tmp_path, [turn, "sent"])
    session.send("t1", "go").collect()
    agent = session.agent
    assert isinstance(agent, GatehouseGraph)

    assert agent.get_state(CFG).interrupts and agent._read_waiting(CFG)[0]  # paused at the head
    session.resume("t1", {"decisions": [{"type": "approve"}]}).collect()
    assert not agent.get_state(CFG).interrupts and not agent._read_waiting(CFG)[0]  # decided

    history = list(agent.get_state_history(CFG))
    assert any(s.interrupts for s in history), "the thread paused once"
    for snapshot in history:
        # An older checkpoint's snapshot lists the interrupts raised there, answered or not.
        assert agent._read_waiting(snapshot.config)[0] == bool(snapshot.interrupts), snapshot.config


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


def _latest_reads(monkeypatch: pytest.MonkeyPatch) -> list[RunnableConfig]:
    """Every read of a thread's latest checkpoint from the database (the stock saver's
    `get_tuple` without a checkpoint id), as they happen."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    reads: list[RunnableConfig] = []
    stock = SqliteSaver.get_tuple

    def counted(self: SqliteSaver, config: RunnableConfig) -> object:
        if not (config.get("configurable") or {}).get("checkpoint_id"):
            reads.append(config)
        return stock(self, config)

    monkeypatch.setattr(SqliteSaver, "get_tuple", counted)
    return reads


def test_an_answer_reads_the_paused_checkpoint_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer's check reads the checkpoint; LangGraph's own first read of it, when
    the run starts, is given that read (one database read less per answer). Through
    the raw compiled graph, as any LangGraph client answers."""
    turn = ai("", tool_call("send_email", {"to": "a@x", "body": "1"}, "c1"))
    session, ledger, _ = make_session(tmp_path, [turn, "sent"])
    session.send("t1", "go").collect()
    reads = _latest_reads(monkeypatch)

    session.agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), CFG)

    assert ledger.count("send_email") == 1
    assert not session.agent.get_state(CFG).interrupts
    # The check's read, then (after the run) get_state's: LangGraph's start read none.
    assert len(reads) == 2, reads


def test_a_handed_read_serves_only_the_same_checkpoint_once(tmp_path: Path) -> None:
    turn = ai("", tool_call("send_email", {"to": "a@x", "body": "1"}, "c1"))
    session, _, _ = make_session(tmp_path, [turn, "sent"])
    session.send("t1", "go").collect()
    saver = session.agent.checkpointer
    saved = saver.get_tuple(CFG)
    assert saved is not None
    other: RunnableConfig = {"configurable": {"thread_id": "t2"}}
    older = saved.parent_config  # the same thread, an older checkpoint
    assert older is not None

    with saver.handing_over(CFG, None):  # a marker no database read returns for t1
        assert saver.get_tuple(other) is None  # another thread: read from the database
        assert saver.get_tuple(older).config != saved.config  # another checkpoint: read
        assert saver.get_tuple(CFG) is None  # the handed read, once
        assert saver.get_tuple(CFG).config == saved.config  # then the database again
    with saver.handing_over(CFG, None):
        # Served in a copy of the context (LangGraph runs tasks in copies): not again here.
        assert contextvars.copy_context().run(saver.get_tuple, CFG) is None
        assert saver.get_tuple(CFG).config == saved.config
    assert saver.get_tuple(CFG).config == saved.config  # nothing left over after the block

"""Who decided, and who may: the decision log names the caller the Session trusts or the
server authenticated (never a client's `gatehouse_actor`), and a tool's `approvers`
are enforced by the graph on every path (Session, raw `graph.invoke`), with the
thread left paused exactly as it was when someone else answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.types import Command
from pydantic import ValidationError

from gatehouse.graph import DecisionError, PolicyError, ai, tool_call
from gatehouse.graph.agent.emit import decided_by
from gatehouse.graph.agent.policy import Policy
from gatehouse.graph.protocol.operations import RunOptions, SetAutoApprove
from tests.support.core_fixtures import make_session

CFG = {"configurable": {"thread_id": "t1"}}
POLICY = {"deploy": {"mode": "ask", "approvers": ["ana@example.com", "Bo"]}}


def _paused(tmp_path: Path):
    turn = ai("", tool_call("deploy", {"service": "api"}, "c1"))
    session, ledger, _ = make_session(tmp_path, [turn, "finished"], policy=POLICY)
    session.send("t1", "go").collect()
    return session, ledger


def _snapshot(session):
    state = session.agent.get_state(CFG)
    return [i.id for i in state.interrupts], len(state.values["messages"]), state.next


def test_the_request_names_the_approvers(tmp_path: Path) -> None:
    session, _ = _paused(tmp_path)
    pause = session.view("t1").pending
    assert pause.request.review_configs[0].approvers == ["ana@example.com", "Bo"]
    assert pause.request.wire()["review_configs"][0]["approvers"] == ["ana@example.com", "Bo"]


def test_someone_else_is_refused_through_the_session_and_the_thread_stays_paused(
    tmp_path: Path,
) -> None:
    session, ledger = _paused(tmp_path)
    before = _snapshot(session)
    for actor in (None, "mallory", "alice (security lead)"):
        with pytest.raises(DecisionError, match="only ana@example.com, Bo may decide deploy"):
            session.resume("t1", {"decisions": [{"type": "approve"}]}, actor=actor)
        with pytest.raises(DecisionError, match="may decide"):
            session.resume("t1", {"decisions": [{"type": "reject", "message": "no"}]}, actor=actor)
    assert _snapshot(session) == before and ledger.count("deploy") == 0
    events = session.resume("t1", {"decisions": [{"type": "approve"}]}, actor="bo").collect()
    assert events[-1].status == "completed" and ledger.count("deploy") == 1
    [record] = [r for r in session.view("t1").audit() if r.tool_call_id == "c1"]
    assert (record.actor, record.source, record.decision) == ("bo", "api", "approve")


def test_someone_else_is_refused_on_the_raw_graph(tmp_path: Path) -> None:
    session, ledger = _paused(tmp_path)
    before = _snapshot(session)
    forged = {"configurable": {"thread_id": "t1", "gatehouse_actor": "mallory"}}
    with pytest.raises(ValidationError, match="may decide"):
        for _ in session.agent.stream(Command(resume={"decisions": [{"type": "approve"}]}), forged):
            pass
    assert _snapshot(session) == before and ledger.count("deploy") == 0
    ana = {"configurable": {"thread_id": "t1", "gatehouse_actor": "ANA@example.com"}}
    for _ in session.agent.stream(Command(resume={"decisions": [{"type": "approve"}]}), ana):
        pass
    assert ledger.count("deploy") == 1


def test_server_runs_name_the_authenticated_user_never_the_client_fields() -> None:
    # What LangGraph Server puts in a run's config: the client's configurable, then its
    # own keys over them (langgraph_api/models/run.py).
    conf = {
        "thread_id": "t",
        "assistant_id": "gatehouse",
        "gatehouse_actor": "alice (security lead)",
        "gatehouse_source": "web",
        "langgraph_auth_user_id": "ana@example.com",
    }
    assert decided_by({"configurable": conf}) == {
        "source": "langgraph-server",
        "actor": "ana@example.com",
    }
    # In process (Session, raw graph: trusted callers) the fields are the caller's.
    assert decided_by(
        {"configurable": {"gatehouse_actor": "bo", "gatehouse_source": "terminal"}}
    ) == {"source": "terminal", "actor": "bo"}


def test_bad_approvers_setting_is_refused() -> None:
    with pytest.raises(PolicyError, match="approvers must be a list"):
        Policy.from_mapping({"deploy": {"approvers": "ana"}})
    with pytest.raises(PolicyError, match="approvers must be a list"):
        Policy.from_mapping({"deploy": {"approvers": [""]}})


def test_auto_approve_never_decides_for_a_tools_approvers(tmp_path: Path) -> None:
    turn = ai("", tool_call("deploy", {"service": "api"}, "c1"))
    session, ledger, _ = make_session(tmp_path, [turn, "finished"], policy=POLICY)
    session.submit(SetAutoApprove("t1", True), RunOptions(actor="mallory"))
    session.send("t1", "go", auto_approve=True).collect()
    assert ledger.count("deploy") == 0
    assert session.view("t1").pending is not None  # asked, for ana or bo to decide

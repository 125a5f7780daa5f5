"""Agent Inbox's answers and its "Mark as resolved" (issue 33, item 3), on the raw graph.

The requests are exactly what Agent Inbox sends (langchain-ai/agent-inbox,
src/components/agent-inbox/contexts/ThreadContext.tsx): `sendHumanResponse` resumes
with `command: {resume: [one HumanResponse]}`, and "Mark as resolved" calls
`threads.updateState(id, {values: null, asNode: "__end__"})`. The same requests through
langgraph-sdk against `langgraph dev` are in tests/test_langgraph_server.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.constants import END
from langgraph.types import Command
from pydantic import ValidationError

from gatehouse.graph import DecisionError, ai, tool_call
from tests.support.core_fixtures import make_session

CFG = {"configurable": {"thread_id": "t1"}}
EMAIL = {"to": "a@x", "body": "1"}


def _one_call(tmp_path: Path, **kwargs: Any):
    session, ledger, _ = make_session(
        tmp_path, [ai("", tool_call("send_email", EMAIL, "c1")), "done", "again"], **kwargs
    )
    session.send("t1", "go").collect()
    return session, ledger


def _resume(session, value: Any) -> None:
    for _ in session.agent.stream(Command(resume=value), CFG):
        pass


def _result(session) -> ToolMessage:
    [msg] = [m for m in session.view("t1").messages if isinstance(m, ToolMessage)]
    return msg


def test_accept_runs_the_call_as_shown(tmp_path: Path) -> None:
    session, ledger = _one_call(tmp_path)
    # Agent Inbox echoes the action request with an accept.
    _resume(session, [{"type": "accept", "args": {"action": "send_email", "args": EMAIL}}])
    assert ledger.count("send_email") == 1 and _result(session).content == "sent to a@x"
    [record] = session.storage.decisions.for_thread("t1")
    assert record.decision == "approve"


def test_edit_runs_the_edited_arguments(tmp_path: Path) -> None:
    session, ledger = _one_call(tmp_path)
    _resume(
        session,
        [{"type": "edit", "args": {"action": "send_email", "args": {"to": "b@x", "body": "2"}}}],
    )
    assert ledger.entries() == [{"name": "send_email", "args": {"to": "b@x", "body": "2"}}]
    assert "changed the arguments" in str(_result(session).content)


def test_response_becomes_the_tool_result(tmp_path: Path) -> None:
    session, ledger = _one_call(tmp_path)
    _resume(session, [{"type": "response", "args": "I mailed them myself"}])
    assert ledger.count("send_email") == 0 and _result(session).content == "I mailed them myself"


def test_ignore_rejects_with_a_note(tmp_path: Path) -> None:
    session, ledger = _one_call(tmp_path)
    _resume(session, [{"type": "ignore", "args": None}])
    result = _result(session)
    assert ledger.count("send_email") == 0 and result.status == "error"
    assert "declined" in str(result.content) and "ignored" in str(result.content)
    assert session.view("t1").messages[-1].content == "done"


def _snapshot(session) -> tuple[Any, ...]:
    state = session.agent.get_state(CFG)
    return [i.id for i in state.interrupts], len(state.values["messages"]), state.next


TWO_CALLS = ai(
    "", tool_call("send_email", EMAIL, "c1"), tool_call("deploy", {"service": "api"}, "c2")
)


def _two_calls(tmp_path: Path, **kwargs: Any):
    session, ledger, _ = make_session(tmp_path, [TWO_CALLS, "done"], **kwargs)
    session.send("t1", "go").collect()
    return session, ledger


def _request(session) -> dict[str, Any]:
    [pending] = session.agent.get_state(CFG).interrupts
    return pending.value


def test_what_agent_inbox_reads_is_every_call_in_full(tmp_path: Path) -> None:
    # Agent Inbox reads action_requests[0]: name (row title), `arguments` (its edit form),
    # description (the row's first 65 characters; the thread view shows all of it).
    session, _ = _two_calls(
        tmp_path, policy={"send_email": {"description": "Mail leaves the building."}}
    )
    request = _request(session)
    first, second = request["action_requests"]
    assert first["arguments"] == first["args"] == EMAIL
    assert second["arguments"] == second["args"] == {"service": "api"}
    # The row says what it is about, and that there is more.
    assert first["description"][:65].startswith("send_email a@x (call 1 of 2)")
    assert "Mail leaves the building." in first["description"]
    # Both calls in full, so an Accept approves only what was shown.
    assert '"to": "a@x"' in first["description"] and '"body": "1"' in first["description"]
    assert '"service": "api"' in first["description"]
    assert "Accept approves all 2" in first["description"]
    assert second["description"].startswith("deploy api")


def test_a_multi_call_turn_is_accepted_whole_when_every_call_was_shown(tmp_path: Path) -> None:
    session, ledger = _two_calls(tmp_path)
    first = _request(session)["action_requests"][0]
    # Exactly what Agent Inbox sends: the first request echoed as it read it.
    _resume(
        session, [{"type": "accept", "args": {"action": first["name"], "args": first["arguments"]}}]
    )
    assert ledger.count("send_email") == 1 and ledger.count("deploy") == 1
    assert [r.decision for r in session.storage.decisions.for_thread("t1")] == ["approve"] * 2


@pytest.mark.parametrize(
    "answer, message",
    [
        ({"type": "ignore", "args": None}, "ignored"),
        ({"type": "response", "args": "not today"}, "not today"),
    ],
)
def test_a_multi_call_turn_ignored_or_answered_rejects_every_call(
    tmp_path: Path, answer: dict[str, Any], message: str
) -> None:
    session, ledger = _two_calls(tmp_path)
    _resume(session, [answer])
    assert ledger.entries() == []
    results = [m for m in session.view("t1").messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results] == ["c1", "c2"]
    assert all(m.status == "error" and message in str(m.content) for m in results)
    assert [r.decision for r in session.storage.decisions.for_thread("t1")] == ["reject"] * 2


def test_an_edit_of_a_multi_call_turn_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    session, ledger = _two_calls(tmp_path)
    before = _snapshot(session)
    edit = {"type": "edit", "args": {"action": "send_email", "args": {"to": "b@x", "body": "2"}}}
    with pytest.raises(ValidationError, match="edit form holds only the first"):
        _resume(session, [edit])
    assert _snapshot(session) == before and ledger.entries() == []
    with pytest.raises(DecisionError, match="edit one call in the web app"):
        session.resume("t1", [edit])
    assert _snapshot(session) == before
    session.resume("t1", {"decisions": [{"type": "approve"}, {"type": "reject"}]}).collect()
    assert ledger.count("send_email") == 1 and ledger.count("deploy") == 0


def test_an_accept_where_one_call_may_not_be_approved_is_refused(tmp_path: Path) -> None:
    session, ledger = _two_calls(tmp_path, policy={"deploy": {"allowed_decisions": ["reject"]}})
    before = _snapshot(session)
    with pytest.raises(ValidationError, match="not allowed"):
        _resume(session, [{"type": "accept", "args": None}])
    assert _snapshot(session) == before and ledger.entries() == []


@pytest.mark.parametrize(
    "answer, why",
    [
        (
            [
                {
                    "type": "accept",
                    "args": {"action": "send_email", "args": {"to": "evil@x", "body": "1"}},
                }
            ],
            "unchanged",
        ),
        (
            [{"type": "accept", "args": None}, {"type": "ignore", "args": None}],
            "one response for the request",
        ),
        ([{"type": "response", "args": None}], "needs its text"),
        (
            [{"type": "edit", "args": {"action": "deploy", "args": {"service": "x"}}}],
            "not the tool",
        ),
        ([{"type": "edit", "args": "x"}], "needs args"),
    ],
)
def test_bad_inbox_answers_are_refused(tmp_path: Path, answer: Any, why: str) -> None:
    session, ledger = _one_call(tmp_path)
    before = _snapshot(session)
    with pytest.raises(ValidationError, match=why):
        _resume(session, answer)
    assert _snapshot(session) == before and ledger.entries() == []


def test_a_response_where_only_reject_is_allowed_is_a_rejection_with_that_reason(
    tmp_path: Path,
) -> None:
    # Agent Inbox offers its "respond" where a HITL request allows `reject`.
    session, ledger = _one_call(
        tmp_path, policy={"send_email": {"allowed_decisions": ["approve", "reject"]}}
    )
    _resume(session, [{"type": "response", "args": "not to that address"}])
    result = _result(session)
    assert ledger.entries() == [] and result.status == "error"
    assert "declined" in str(result.content) and "not to that address" in str(result.content)
    [record] = session.storage.decisions.for_thread("t1")
    assert record.decision == "reject" and record.message == "not to that address"


def test_a_response_the_policy_does_not_allow_at_all_is_refused(tmp_path: Path) -> None:
    session, ledger = _one_call(tmp_path, policy={"send_email": {"allowed_decisions": ["approve"]}})
    with pytest.raises(ValidationError, match="'respond' is not allowed"):
        _resume(session, [{"type": "response", "args": "no"}])
    assert ledger.entries() == []


def test_agent_inbox_accept_echoes_empty_args_and_approves_the_call_as_shown(
    tmp_path: Path,
) -> None:
    # Agent Inbox reads a HITL request's arguments from `arguments`: its accept echoes {}.
    session, ledger = _one_call(tmp_path)
    _resume(session, [{"type": "accept", "args": {"action": "send_email", "args": {}}}])
    assert ledger.entries() == [{"name": "send_email", "args": EMAIL}]


def test_mark_as_resolved_rejects_the_open_calls_and_the_next_message_moves_on(
    tmp_path: Path,
) -> None:
    turn = ai(
        "", tool_call("send_email", EMAIL, "c1"), tool_call("deploy", {"service": "api"}, "c2")
    )
    session, ledger, _ = make_session(tmp_path, [turn, "ok, something else then"])
    session.send("t1", "go").collect()
    # Exactly Agent Inbox's "Mark as resolved": updateState(id, {values: null, asNode: END}).
    session.agent.update_state(CFG, None, as_node=END)
    state = session.agent.get_state(CFG)
    assert not state.next and not state.interrupts
    results = {m.tool_call_id: m for m in state.values["messages"] if isinstance(m, ToolMessage)}
    assert set(results) == {"c1", "c2"}
    assert all(
        m.status == "error" and "marked this request as resolved" in str(m.content)
        for m in results.values()
    )
    assert [r.decision for r in session.storage.decisions.for_thread("t1")] == ["reject", "reject"]
    assert session.view("t1").pending is None
    # The next message is answered, not met with the same question.
    final = session.send("t1", "never mind").collect()[-1]
    assert (
        final.status == "completed"
        and session.view("t1").messages[-1].content == "ok, something else then"
    )
    assert ledger.entries() == []


def test_agent_chat_ui_mark_as_resolved_run_rejects_the_open_calls(tmp_path: Path) -> None:
    # Agent Chat UI's "Mark as Resolved" is a run of `command: {goto: "__end__"}` (input {}):
    # LangGraph alone ran it as a "success" that left the question pending.
    turn = ai(
        "", tool_call("send_email", EMAIL, "c1"), tool_call("deploy", {"service": "api"}, "c2")
    )
    session, ledger, _ = make_session(tmp_path, [turn, "ok, something else then"])
    session.send("t1", "go").collect()
    assert list(session.agent.stream(Command(goto=[END]), CFG)) == []
    state = session.agent.get_state(CFG)
    assert not state.next and not state.interrupts
    results = {m.tool_call_id: m for m in state.values["messages"] if isinstance(m, ToolMessage)}
    assert set(results) == {"c1", "c2"}
    assert all(
        m.status == "error" and "marked this request as resolved" in str(m.content)
        for m in results.values()
    )
    assert [r.decision for r in session.storage.decisions.for_thread("t1")] == ["reject", "reject"]
    final = session.send("t1", "never mind").collect()[-1]
    assert (
        final.status == "completed"
        and session.view("t1").messages[-1].content == "ok, something else then"
    )
    assert ledger.entries() == []


def test_clearing_a_thread_that_is_not_paused_is_left_to_langgraph(tmp_path: Path) -> None:
    session, ledger, _ = make_session(tmp_path, ["hello"])
    session.send("t1", "hi").collect()
    session.agent.update_state(CFG, None, as_node=END)
    assert session.view("t1").messages[-1].content == "hello"
    assert session.storage.decisions.for_thread("t1") == []


def test_a_late_answer_after_another_front_end_decided_is_refused_with_who_decided(
    tmp_path: Path,
) -> None:
    session, ledger = _one_call(tmp_path)
    # The terminal decides first (the Session records source and actor).
    session.resume(
        "t1", {"decisions": [{"type": "approve"}]}, source="terminal", actor="ana"
    ).collect()
    before = len(session.view("t1").messages)
    # A raw client that read the same pause answers it afterwards.
    from gatehouse.graph import StaleDecision

    with pytest.raises(
        StaleDecision, match=r"already decided — `send_email` approved by ana via terminal"
    ):
        _resume(session, {"decisions": [{"type": "reject", "message": "too late"}]})
    assert len(session.view("t1").messages) == before and ledger.count("send_email") == 1


def test_mark_as_resolved_respects_a_tools_approvers(tmp_path: Path) -> None:
    policy = {"deploy": {"mode": "ask", "approvers": ["ana@example.com"]}}
    session, ledger, _ = make_session(
        tmp_path, [ai("", tool_call("deploy", {"service": "api"}, "c2")), "ok"], policy=policy
    )
    session.send("t1", "go").collect()
    before = _snapshot(session)
    mallory = {"configurable": {"thread_id": "t1", "gatehouse_actor": "mallory"}}
    with pytest.raises(PermissionError, match="only ana@example.com may decide deploy"):
        session.agent.update_state(mallory, None, as_node=END)
    assert _snapshot(session) == before and session.storage.decisions.for_thread("t1") == []
    ana = {"configurable": {"thread_id": "t1", "gatehouse_actor": "ana@example.com"}}
    session.agent.update_state(ana, None, as_node=END)
    [record] = session.storage.decisions.for_thread("t1")
    assert record.decision == "reject" and record.actor == "ana@example.com"
    assert ledger.entries() == []

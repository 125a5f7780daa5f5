"""The approval contract of the core graph (issue 2), through Session and raw Command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.types import Command
from pydantic import ValidationError

from gatehouse.graph import (
    AwaitingDecision,
    DecisionError,
    NothingPending,
    StaleDecision,
    ai,
    tool_call,
)
from gatehouse.graph.protocol.operations import Delete, Rename, SwitchBranch, Undo
from tests.support.core_fixtures import make_session

CFG = {"configurable": {"thread_id": "t1"}}


def tool_messages(session, thread_id: str = "t1") -> dict[str, ToolMessage]:
    return {
        m.tool_call_id: m for m in session.view(thread_id).messages if isinstance(m, ToolMessage)
    }


def four_calls_turn() -> AIMessage:
    return ai(
        "Checking, then acting.",
        tool_call("lookup", {"key": "a"}, "free1"),
        tool_call("send_email", {"to": "bob@example.com", "body": "hi"}, "gated1"),
        tool_call("clock", {}, "free2"),
        tool_call("deploy", {"service": "web"}, "gated2"),
    )


def test_free_calls_run_first_then_one_request_lists_only_gated_calls(tmp_path: Path) -> None:
    session, ledger, model = make_session(tmp_path, [four_calls_turn(), "All handled."])
    events = session.send("t1", "do the things").collect()

    # Both free tools ran before the person was asked; the gated ones did not.
    assert ledger.count("lookup") == 1 and ledger.count("clock") == 1
    assert ledger.count("send_email") == 0 and ledger.count("deploy") == 0
    approvals = [e for e in events if e.type == "approval_required"]
    assert len(approvals) == 1, "one interrupt per model turn"
    request = approvals[0].request
    assert [a["name"] for a in request["action_requests"]] == ["send_email", "deploy"]
    assert [a["tool_call_id"] for a in request["action_requests"]] == ["gated1", "gated2"]
    assert [c["action_name"] for c in request["review_configs"]] == ["send_email", "deploy"]
    assert events[-1].type == "run_finished" and events[-1].status == "awaiting_approval"
    finished_before = [e.call_id for e in events if e.type == "tool_finished"]
    assert finished_before.index("free1") < events.index(approvals[0])

    answer = {
        "decisions": [
            {
                "type": "edit",
                "edited_action": {
                    "name": "send_email",
                    "args": {"to": "alice@example.com", "body": "hello"},
                },
            },
            {"type": "reject", "message": "not on a Friday"},
        ]
    }
    events = session.resume("t1", answer).collect()
    assert events[-1].status == "completed"

    # The edited call ran once with the edited args; the rejected one never ran;
    # the free tools were not run again.
    assert (
        ledger.entries().count(
            {"name": "send_email", "args": {"to": "alice@example.com", "body": "hello"}}
        )
        == 1
    )
    assert ledger.count("send_email") == 1
    assert ledger.count("deploy") == 0
    assert ledger.count("lookup") == 1 and ledger.count("clock") == 1

    results = tool_messages(session)
    assert set(results) == {"free1", "free2", "gated1", "gated2"}
    assert (
        "changed the arguments" in results["gated1"].content
        and "sent to alice@example.com" in results["gated1"].content
    )
    assert results["gated2"].status == "error" and "not on a Friday" in results["gated2"].content
    # ... and the reason reached the model on its next call.
    last_input = model.inputs[-1]
    assert any(isinstance(m, ToolMessage) and "not on a Friday" in m.content for m in last_input)
    assert session.view("t1").messages[-1].content == "All handled."


def test_langchain_middleware_decisions_accepted_unchanged(tmp_path: Path) -> None:
    turn = ai(
        "",
        tool_call("send_email", {"to": "a@x", "body": "1"}, "c1"),
        tool_call("deploy", {"service": "api"}, "c2"),
        tool_call("send_email", {"to": "b@x", "body": "2"}, "c3"),
    )
    session, ledger, _ = make_session(tmp_path, [turn, "ok"])
    session.send("t1", "go").collect()
    # Exactly what HumanInTheLoopMiddleware takes: a list, in request order.
    decisions = [
        {"type": "approve"},
        {"type": "respond", "message": "api is frozen, I deployed it by hand"},
        {"type": "reject"},
    ]
    for _ in session.agent.stream(Command(resume={"decisions": decisions}), CFG):
        pass
    results = tool_messages(session)
    assert results["c1"].content == "sent to a@x"
    assert (
        results["c2"].content == "api is frozen, I deployed it by hand"
        and results["c2"].status != "error"
    )
    assert results["c3"].status == "error" and "declined" in results["c3"].content
    assert ledger.count("send_email") == 1 and ledger.count("deploy") == 0


def test_decisions_keyed_by_tool_call_id(tmp_path: Path) -> None:
    turn = ai(
        "",
        tool_call("send_email", {"to": "a@x", "body": "1"}, "c1"),
        tool_call("deploy", {"service": "api"}, "c2"),
    )
    session, ledger, _ = make_session(tmp_path, [turn, "ok"])
    session.send("t1", "go").collect()
    run = session.resume(
        "t1", {"decisions": {"c2": {"type": "approve"}, "c1": {"type": "reject", "message": "no"}}}
    )
    assert run.collect()[-1].status == "completed"
    assert ledger.count("deploy") == 1 and ledger.count("send_email") == 0


BAD_ANSWERS = {
    "wrong count": {"decisions": [{"type": "approve"}]},
    "unknown type": {"decisions": [{"type": "maybe"}, {"type": "approve"}]},
    "not allowed for this tool": {
        "decisions": [
            {"type": "approve"},
            {"type": "edit", "edited_action": {"name": "deploy", "args": {"service": "x"}}},
        ]
    },
    "edit switches tools": {
        "decisions": [
            {"type": "edit", "edited_action": {"name": "deploy", "args": {"service": "x"}}},
            {"type": "approve"},
        ]
    },
    "edited args fail the schema": {
        "decisions": [
            {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": "a@x"}}},
            {"type": "approve"},
        ]
    },
    "respond without a message": {
        "decisions": [{"type": "respond", "message": "  "}, {"type": "approve"}]
    },
    "not a decisions object": "yes please",
    "unknown tool call id": {"decisions": {"nope": {"type": "approve"}, "c2": {"type": "approve"}}},
}


def _paused(tmp_path: Path):
    turn = ai(
        "",
        tool_call("send_email", {"to": "a@x", "body": "1"}, "c1"),
        tool_call("deploy", {"service": "api"}, "c2"),
    )
    # deploy may only be approved or rejected
    policy = {"deploy": {"allowed_decisions": ["approve", "reject"]}}
    session, ledger, _ = make_session(tmp_path, [turn, "finished"], policy=policy)
    session.send("t1", "go").collect()
    return session, ledger


def _snapshot(session):
    state = session.agent.get_state(CFG)
    return [i.id for i in state.interrupts], len(state.values["messages"]), state.next


@pytest.mark.parametrize("case", list(BAD_ANSWERS))
def test_bad_answer_through_raw_command_changes_nothing(tmp_path: Path, case: str) -> None:
    session, ledger = _paused(tmp_path)
    before = _snapshot(session)
    with pytest.raises(ValidationError):
        for _ in session.agent.stream(Command(resume=BAD_ANSWERS[case]), CFG):
            pass
    assert _snapshot(session) == before, "the thread must stay paused exactly as it was"
    assert ledger.count("send_email") == 0 and ledger.count("deploy") == 0
    # A correct answer afterwards still works.
    for _ in session.agent.stream(
        Command(resume={"decisions": [{"type": "approve"}, {"type": "reject"}]}), CFG
    ):
        pass
    assert session.view("t1").messages[-1].content == "finished"
    assert ledger.count("send_email") == 1 and ledger.count("deploy") == 0


@pytest.mark.parametrize("case", list(BAD_ANSWERS))
def test_bad_answer_through_session_is_refused_with_a_clear_message(
    tmp_path: Path, case: str
) -> None:
    session, ledger = _paused(tmp_path)
    before = _snapshot(session)
    with pytest.raises(DecisionError) as err:
        session.resume("t1", BAD_ANSWERS[case])
    assert str(err.value) and "Traceback" not in str(err.value)
    assert _snapshot(session) == before
    assert (
        session.resume("t1", {"decisions": [{"type": "approve"}, {"type": "approve"}]})
        .collect()[-1]
        .status
        == "completed"
    )


def test_refusal_messages_say_what_is_wrong(tmp_path: Path) -> None:
    session, _ = _paused(tmp_path)
    cases = {
        "wrong count": "expected 2 decision(s)",
        "not allowed for this tool": "'edit' is not allowed",
        "edit switches tools": "not the tool",
        "edited args fail the schema": "body",
    }
    for case, phrase in cases.items():
        with pytest.raises(DecisionError, match=re.escape(phrase)):
            session.resume("t1", BAD_ANSWERS[case])


def test_the_pause_tells_raw_clients_the_shape_of_an_answer(tmp_path: Path) -> None:
    """Studio and SDK clients read the expected answer from the interrupt itself."""
    session, _ = _paused(tmp_path)
    updates = [
        c for c in session.agent.stream(None, CFG, stream_mode="updates") if "__interrupt__" in c
    ]
    schema = updates[-1]["__interrupt__"][0].response_schema
    assert schema["required"] == ["decisions"]
    kinds = {
        variant["properties"]["type"]["const"]
        for variant in schema["properties"]["decisions"]["items"]["oneOf"]
    }
    assert kinds == {"approve", "edit", "reject", "respond"}


def test_resume_when_nothing_is_pending_is_refused(tmp_path: Path) -> None:
    session, ledger, _ = make_session(tmp_path, ["just text"])
    with pytest.raises(NothingPending):
        session.resume("t1", {"decisions": [{"type": "approve"}]})
    session.send("t1", "hello").collect()
    with pytest.raises(NothingPending):
        session.resume("t1", {"decisions": [{"type": "approve"}]})
    assert len(session.view("t1").messages) == 2


def test_stale_interrupt_id_is_refused(tmp_path: Path) -> None:
    session, _ = _paused(tmp_path)
    with pytest.raises(StaleDecision):
        session.resume(
            "t1", {"decisions": [{"type": "approve"}, {"type": "approve"}]}, interrupt_id="old"
        )
    pending = session.view("t1").pending
    assert pending is not None
    run = session.resume(
        "t1",
        {"decisions": [{"type": "approve"}, {"type": "approve"}]},
        interrupt_id=pending.interrupt_id,
    )
    assert run.collect()[-1].status == "completed"


def test_new_message_while_awaiting_approval_is_refused(tmp_path: Path) -> None:
    session, _ = _paused(tmp_path)
    with pytest.raises(DecisionError, match="waiting for a decision"):
        session.send("t1", "something else")


def test_bad_model_output_becomes_error_results_and_the_run_goes_on(tmp_path: Path) -> None:
    turn = ai(
        "",
        tool_call("no_such_tool", {}, "u1"),
        tool_call("lookup", {"wrong": 1}, "u2"),
        tool_call("explode", {"reason": "disk"}, "u3"),
    )
    turn.invalid_tool_calls = [
        {
            "name": "lookup",
            "args": "{not json",
            "id": "u4",
            "error": "bad",
            "type": "invalid_tool_call",
        }
    ]
    session, _, model = make_session(tmp_path, [turn, "recovered"])
    events = session.send("t1", "go").collect()
    assert events[-1].status == "completed"
    results = tool_messages(session)
    assert (
        "unknown tool 'no_such_tool'" in results["u1"].content and results["u1"].status == "error"
    )
    assert "invalid arguments for lookup" in results["u2"].content
    assert "boom: disk" in results["u3"].content
    assert "not a valid JSON object" in results["u4"].content
    assert session.view("t1").messages[-1].content == "recovered"
    # The model saw every error.
    seen = {m.tool_call_id for m in model.inputs[-1] if isinstance(m, ToolMessage)}
    assert seen == {"u1", "u2", "u3", "u4"}


def test_model_call_limit_ends_a_runaway_loop(tmp_path: Path) -> None:
    # Different arguments each time: the doom-loop guard (repeats) does not apply.
    loop = [ai("", tool_call("lookup", {"key": f"k{i}"}, f"c{i}")) for i in range(10)]
    session, ledger, _ = make_session(tmp_path, loop, max_model_calls=3)
    events = session.send("t1", "loop forever").collect()
    assert events[-1].status == "stopped" and "limit of 3 model calls" in events[-1].reason
    assert ledger.count("lookup") == 3
    last = session.view("t1").messages[-1]
    assert isinstance(last, AIMessage) and "limit of 3 model calls" in last.content
    # Every tool call on every AIMessage has exactly one answer.
    calls = [
        c["id"]
        for m in session.view("t1").messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    ]
    assert sorted(calls) == sorted(tool_messages(session))
    # "Send a message to continue": a new message starts a run with a fresh count.
    again = session.send("t1", "go on").collect()
    assert again[-1].status == "stopped" and ledger.count("lookup") == 6


def test_deny_blocks_without_asking(tmp_path: Path) -> None:
    turn = ai("", tool_call("deploy", {"service": "prod"}, "d1"))
    session, ledger, _ = make_session(tmp_path, [turn, "understood"], policy={"deploy": "deny"})
    events = session.send("t1", "deploy prod").collect()
    assert not [e for e in events if e.type == "approval_required"]
    assert events[-1].status == "completed"
    assert ledger.count("deploy") == 0
    assert "policy does not allow deploy" in tool_messages(session)["d1"].content


def test_policy_rules_on_arguments(tmp_path: Path) -> None:
    policy = {
        "send_email": {
            "mode": "ask",
            "rules": [{"arg": "to", "glob": "*@example.com", "mode": "allow"}],
        }
    }
    turn = ai(
        "",
        tool_call("send_email", {"to": "me@example.com", "body": "x"}, "s1"),
        tool_call("send_email", {"to": "me@evil.com", "body": "x"}, "s2"),
    )
    session, ledger, _ = make_session(tmp_path, [turn, "ok"], policy=policy)
    events = session.send("t1", "mail").collect()
    request = next(e for e in events if e.type == "approval_required").request
    assert [a["tool_call_id"] for a in request["action_requests"]] == ["s2"]
    assert ledger.count("send_email") == 1


def test_hitl_middleware_interrupt_on_mapping(tmp_path: Path) -> None:
    # True asks, False runs freely (even a tool that asks by default).
    turn = ai(
        "", tool_call("deploy", {"service": "a"}, "x1"), tool_call("lookup", {"key": "k"}, "x2")
    )
    session, ledger, _ = make_session(
        tmp_path, [turn, "ok"], policy={"deploy": False, "lookup": True}
    )
    events = session.send("t1", "go").collect()
    request = next(e for e in events if e.type == "approval_required").request
    assert [a["name"] for a in request["action_requests"]] == ["lookup"]
    assert ledger.count("deploy") == 1


def test_always_allow_grant_covers_later_turns_of_this_thread_only(tmp_path: Path) -> None:
    def script_for(n: int):
        return [
            ai("", tool_call("send_email", {"to": "a@x", "body": str(i)}, f"m{i}"))
            if i % 2 == 0
            else "sent"
            for i in range(n)
        ]

    session, ledger, _ = make_session(tmp_path, script_for(6))
    session.send("t1", "first").collect()
    session.resume("t1", {"decisions": [{"type": "approve", "always_allow": True}]}).collect()
    events = session.send("t1", "second").collect()
    assert events[-1].status == "completed", "the grant covers the next turn"
    assert ledger.count("send_email") == 2
    # Another thread still asks.
    events = session.send("t2", "elsewhere").collect()
    assert events[-1].status == "awaiting_approval"


def test_events_are_typed_and_in_order(tmp_path: Path) -> None:
    session, _, _ = make_session(
        tmp_path, [ai("Look", tool_call("lookup", {"key": "a"}, "l1")), "The answer is 42."]
    )
    events = session.send("t1", "q").collect()
    types = [e.type for e in events]
    assert types[0] == "run_started" and types[-1] == "run_finished"
    assert types.index("tool_started") < types.index("tool_finished")
    finished = next(e for e in events if e.type == "tool_finished")
    assert finished.status == "ok" and finished.output == "value of a" and finished.duration_ms >= 0
    text = "".join(e.text for e in events if e.type == "text_delta")
    assert text == "LookThe answer is 42."
    assert sum(1 for t in types if t == "text_delta") > 2, "tokens stream, not one blob"
    assert "usage" in types


def test_cancel_mid_run_leaves_every_call_answered(tmp_path: Path) -> None:
    turns = [ai("", tool_call("lookup", {"key": str(i)}, f"k{i}")) for i in range(5)]
    session, ledger, _ = make_session(tmp_path, turns)
    run = session.send("t1", "go")
    statuses = []
    for event in run:
        if event.type == "tool_finished" and event.call_id == "k1":
            run.cancel()
        statuses.append(event)
    assert run.status == "cancelled"
    assert ledger.count("lookup") == 2
    calls = [
        c["id"]
        for m in session.view("t1").messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
    ]
    assert sorted(calls) == sorted(tool_messages(session))
    assert session.view("t1").info.status == "cancelled"
    # The thread continues normally afterwards.
    assert session.send("t1", "again").collect()[-1].type == "run_finished"


def test_thread_index_tracks_title_status_and_pending(tmp_path: Path) -> None:
    session, _ = _paused(tmp_path)
    info = session.view("t1").info
    assert info.title == "go" and info.status == "awaiting_approval" and info.pending_since
    assert [t.thread_id for t in session.thread_list().awaiting_approval] == ["t1"]
    session.resume("t1", {"decisions": [{"type": "approve"}, {"type": "approve"}]}).collect()
    assert (
        session.view("t1").info.status == "completed"
        and session.thread_list().awaiting_approval == []
    )
    session.submit(Rename("t1", "Mail and deploy"))
    assert session.thread_list().threads[0].title == "Mail and deploy"
    session.submit(Delete("t1"))
    assert session.thread_list().threads == [] and session.view("t1").messages == []


def test_undo_fork_and_export(tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path, ["one", "two", "three"])
    session.send("t1", "first").collect()
    session.send("t1", "second").collect()
    assert [m.content for m in session.view("t1").messages] == ["first", "one", "second", "two"]
    assert session.submit(Undo("t1")).result().removed == 2
    assert [m.content for m in session.view("t1").messages] == ["first", "one"]
    session.fork("t1", 0, "FIRST, edited").collect()
    assert [m.content for m in session.view("t1").messages] == ["FIRST, edited", "one"]
    md = session.view("t1").export("md")
    assert "FIRST, edited" in md and md.startswith("# ")
    import json

    data = json.loads(session.view("t1").export("json"))
    assert [m["role"] for m in data["messages"]] == ["user", "assistant"]
    # The old branch is still in the checkpoint history (time travel keeps working).
    history = [len(s.values.get("messages", [])) for s in session.agent.get_state_history(CFG)]
    assert 4 in history


def _said(session, thread_id: str = "t1") -> list[str]:
    return [m.content for m in session.view(thread_id).transcript]


def _echo(messages) -> str:
    return "re: " + next(m.content for m in reversed(messages) if isinstance(m, HumanMessage))


ECHO = [_echo] * 8


def test_versions_of_a_message_after_forks_and_switching_between_them(tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path, ECHO)
    session.send("t1", "first").collect()
    session.send("t1", "second").collect()
    assert session.view("t1").branches == []  # never forked: nothing to switch
    session.fork("t1", 0, "FIRST, edited").collect()
    [at_first] = session.view("t1").branches
    assert (at_first.index, at_first.label, at_first.previews) == (
        0,
        "2/2",
        ("first", "FIRST, edited"),
    )
    assert (
        session.view("t1").info.title == "FIRST, edited"
    )  # the title was the first message's: it follows
    # Version 1 comes back whole, the second turn included.
    session.submit(SwitchBranch("t1", at_first.message_ids[0]))
    assert _said(session) == ["first", "re: first", "second", "re: second"]
    assert session.view("t1").info.title == "first"
    assert [b.label for b in session.view("t1").branches] == ["1/2"]
    # A fork further on, on version 1: versions at both messages, each relative to this branch.
    session.fork("t1", 2, "second, edited").collect()
    assert _said(session) == ["first", "re: first", "second, edited", "re: second, edited"]
    assert [(b.index, b.label) for b in session.view("t1").branches] == [(0, "1/2"), (2, "2/2")]
    session.submit(SwitchBranch("t1", at_first.message_ids[1]))
    assert _said(session) == ["FIRST, edited", "re: FIRST, edited"]
    assert [(b.index, b.label) for b in session.view("t1").branches] == [(0, "2/2")]
    # Back to version 1: where it was last, on its newest branch.
    session.submit(SwitchBranch("t1", at_first.message_ids[0]))
    assert _said(session) == ["first", "re: first", "second, edited", "re: second, edited"]
    # Undo stays on the branch the thread is on (it used to rewind into the newest branch).
    assert session.submit(Undo("t1")).result().removed == 2
    assert _said(session) == ["first", "re: first"]
    session.send("t1", "third").collect()
    assert _said(session) == ["first", "re: first", "third", "re: third"]
    assert [(b.index, b.label) for b in session.view("t1").branches] == [(0, "1/2"), (2, "3/3")]
    with pytest.raises(ValueError, match="not a version"):
        session.submit(SwitchBranch("t1", "no-such-message"))


def test_a_title_the_person_gave_stays_through_forks(tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path, ECHO)
    session.send("t1", "first").collect()
    session.submit(Rename("t1", "My thread"))
    session.fork("t1", 0, "other").collect()
    assert session.view("t1").info.title == "My thread"
    session.submit(SwitchBranch("t1", session.view("t1").branches[0].message_ids[0]))
    assert session.view("t1").info.title == "My thread"


def test_switching_branches_while_paused_is_refused_unless_forced(tmp_path: Path) -> None:
    def reply(messages):
        if any(isinstance(m, HumanMessage) and m.content == "mail a@x" for m in messages):
            return ai("", tool_call("send_email", {"to": "a@x", "body": "1"}, "c1"))
        return _echo(messages)

    session, ledger, _ = make_session(tmp_path, [reply] * 4)
    session.send("t1", "hello").collect()
    session.fork("t1", 0, "mail a@x").collect()
    assert session.view("t1").pending is not None
    [versions] = session.view("t1").branches
    assert versions.label == "2/2"
    with pytest.raises(AwaitingDecision, match="switching branches would drop that request"):
        session.submit(SwitchBranch("t1", versions.message_ids[0]))
    assert session.view("t1").pending is not None
    session.submit(SwitchBranch("t1", versions.message_ids[0], force=True))
    assert _said(session) == ["hello", "re: hello"] and session.view("t1").pending is None
    # The branch left waiting comes back at its message, unanswered: nothing of it ran.
    session.submit(SwitchBranch("t1", versions.message_ids[1]))
    assert _said(session) == ["mail a@x"] and session.view("t1").pending is None
    assert ledger.entries() == []


def test_a_fork_made_on_the_raw_graph_shows_as_a_version(tmp_path: Path) -> None:
    """Studio and the SDK fork by running from an earlier checkpoint: the same tree."""
    session, _, _ = make_session(tmp_path, ECHO)
    session.send("t1", "first").collect()
    session.send("t1", "second").collect()
    after_first = next(
        s.config
        for s in session.agent.get_state_history(CFG)
        if len(s.values.get("messages", [])) == 2 and not s.next
    )
    session.agent.invoke({"messages": [HumanMessage("another second")]}, after_first)
    assert _said(session) == ["first", "re: first", "another second", "re: another second"]
    [versions] = session.view("t1").branches
    assert (versions.index, versions.label, versions.previews) == (
        2,
        "2/2",
        ("second", "another second"),
    )
    session.submit(SwitchBranch("t1", versions.message_ids[0]))
    assert _said(session) == ["first", "re: first", "second", "re: second"]


def test_model_error_fails_the_run_and_retry_continues(tmp_path: Path) -> None:
    state = {"fail": True}

    def flaky(messages):
        if state["fail"]:
            raise ConnectionError("model API unreachable")
        return "back online"

    session, _, _ = make_session(tmp_path, [flaky])
    events = session.send("t1", "hello").collect()
    assert events[-1].status == "failed"
    error = next(e for e in events if e.type == "error")
    assert "model API unreachable" in error.message and error.retryable
    assert session.view("t1").info.status == "failed"
    state["fail"] = False
    assert session.retry("t1").collect()[-1].status == "completed"
    assert [m.content for m in session.view("t1").messages] == ["hello", "back online"]


def test_a_run_whose_process_died_shows_as_interrupted_not_running(tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path, ["hi"])
    session.send("t1", "hello").collect()
    # What a process killed mid-run leaves behind: "running" in the index, no lease.
    session.storage.index.touch("t1", status="running")
    assert session.view("t1").info.status == "interrupted"
    assert session.thread_list().threads[0].status == "interrupted"
    # While a run really holds the thread, it shows as running.
    lease = session.storage.leases.acquire("t1")
    try:
        assert session.view("t1").info.status == "running"
    finally:
        lease.release()


def test_history_keeps_how_each_call_ended(tmp_path: Path) -> None:
    from gatehouse.graph.service.transcript import message_view

    turn = ai(
        "",
        tool_call("lookup", {"key": "a"}, "h1"),
        tool_call("send_email", {"to": "a@x", "body": "1"}, "h2"),
        tool_call("deploy", {"service": "x"}, "h3"),
    )
    session, _, _ = make_session(tmp_path, [turn, "ok"])
    session.send("t1", "go").collect()
    session.resume(
        "t1",
        {
            "decisions": [
                {"type": "reject", "message": "no"},
                {"type": "respond", "message": "done by hand"},
            ]
        },
    ).collect()
    ended = {
        d["tool_call_id"]: d
        for d in (message_view(m).to_dict() for m in session.view("t1").messages)
        if d["role"] == "tool"
    }
    assert {k: v["tool_status"] for k, v in ended.items()} == {
        "h1": "ok",
        "h2": "rejected",
        "h3": "responded",
    }
    assert ended["h1"]["duration_ms"] >= 0

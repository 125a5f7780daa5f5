"""The pause types and message views are plain dataclasses (issue 36: `gatehouse
pending` and `show` load no pydantic). What pydantic did for them is done by hand, so
it is checked here: a stored request comes back whole (extras and `approvers`
included) and goes out on the wire unchanged; a value that claims to be a request but
is not one is refused, saying where; a view drops only its defaults."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gatehouse.graph.protocol.messages import MessageView, ToolCallView
from gatehouse.graph.protocol.pauses import (
    Approval,
    MalformedPause,
    OutcomeUnknown,
    pause_from,
)

APPROVAL: dict[str, Any] = {
    "action_requests": [
        {
            "name": "write_file",
            "args": {"path": "a.md", "content": None},
            "description": "sandboxed\n\nwrite a.md",
            "tool_call_id": "call-1",
            "risk": "write",
            "preview": "new file a.md",
            "shown_by": "another client",  # a key of someone else's: kept
        },
        {"name": "search", "args": {}, "description": ""},
    ],
    "review_configs": [
        {
            "action_name": "write_file",
            "allowed_decisions": ["approve", "edit", "reject", "respond"],
            "approvers": ["alice@example.com"],
        },
        {"action_name": "search", "allowed_decisions": ["approve", "reject"]},
    ],
}

OUTCOME: dict[str, Any] = {
    "outcome_unknown": {
        "tool_call_id": "call-9",
        "name": "deploy",
        "args": {"service": "web"},
        "started_at": 1764300000.5,
        "attempts": 2,
    },
    "allowed": ["run_again", "mark_failed", "respond"],
    "description": "deploy started but its end was never saved",
}


def test_a_stored_approval_request_comes_back_whole_and_goes_out_unchanged() -> None:
    pause = pause_from("t1", "i1", json.loads(json.dumps(APPROVAL)))
    assert isinstance(pause, Approval) and pause.kind == "approval"
    first, second = pause.actions
    assert (first.name, first.args, first.tool_call_id, first.risk) == (
        "write_file",
        {"path": "a.md", "content": None},
        "call-1",
        "write",
    )
    assert first.extra == {"shown_by": "another client"}
    assert second.tool_call_id is None and second.description == ""
    assert pause.allowed(1) == ["approve", "reject"]
    assert pause.request.review_configs[0].approvers == ["alice@example.com"]
    assert pause.request.review_configs[1].approvers is None
    # None-valued fields are left out of the wire form, as they were (not None args); the
    # arguments go out under Agent Inbox's name too (`arguments`), always equal to `args`.
    wired = {
        **APPROVAL,
        "action_requests": [{**a, "arguments": a["args"]} for a in APPROVAL["action_requests"]],
    }
    assert pause.request.wire() == wired
    assert pause.to_dict() == {
        "thread_id": "t1",
        "interrupt_id": "i1",
        "kind": "approval",
        "request": wired,
    }
    # A stored `arguments` that disagrees is never what goes out: `args` is the call.
    forged = json.loads(json.dumps(wired))
    forged["action_requests"][0]["arguments"] = {"path": ".git/config"}
    again = pause_from("t1", "i1", forged)
    assert again is not None and again.request.wire() == wired
    assert pause == pause_from("t1", "i1", pause.request.wire())
    assert pause != pause_from("t1", "i2", APPROVAL)


def test_a_stored_outcome_request_comes_back_whole() -> None:
    pause = pause_from("t1", "i9", {**OUTCOME, "outcome_unknown": {**OUTCOME["outcome_unknown"]}})
    assert isinstance(pause, OutcomeUnknown) and pause.kind == "outcome_unknown"
    assert pause.call.name == "deploy" and pause.call.attempts == 2
    assert pause.allowed == ["run_again", "mark_failed", "respond"]
    assert pause.request.wire() == OUTCOME
    # A whole-second start time is a float, as the wire form has always said.
    again = pause_from(
        "t1", "i9", {"outcome_unknown": {**OUTCOME["outcome_unknown"], "started_at": 5}}
    )
    assert isinstance(again, OutcomeUnknown)
    assert again.call.started_at == 5.0 and isinstance(again.call.started_at, float)
    assert again.allowed == ["run_again", "mark_failed", "respond"]  # the default


def test_an_interrupt_gatehouse_did_not_raise_is_no_pause() -> None:
    assert pause_from("t", "i", "what is your name?") is None
    assert pause_from("t", "i", {"question": "which branch?"}) is None


def _broken(path: list[Any], value: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(APPROVAL))
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("value", "where"),
    [
        (
            _broken(["action_requests", 0, "name"], KeyError),
            r"action_requests\[0\]\.name: required",
        ),
        (
            _broken(["action_requests", 0, "name"], 7),
            r"action_requests\[0\]\.name: expected a string",
        ),
        (
            _broken(["action_requests", 1, "args"], "ls"),
            r"action_requests\[1\]\.args: expected an object",
        ),
        (_broken(["action_requests", 0, "risk"], ["write"]), r"\[0\]\.risk: expected a string"),
        (_broken(["action_requests", 1], "search"), r"action_requests\[1\]: expected an object"),
        (_broken(["review_configs"], {}), r"request\.review_configs: expected a list"),
        (
            _broken(["review_configs", 1, "allowed_decisions"], ["approve", "sudo"]),
            r"review_configs\[1\]\.allowed_decisions: expected a list of approve, edit",
        ),
        (_broken(["review_configs", 0, "approvers"], "alice"), r"approvers: expected a list"),
        (
            {"outcome_unknown": {**OUTCOME["outcome_unknown"], "started_at": "noon"}},
            r"outcome_unknown\.started_at: expected a number",
        ),
        (
            {"outcome_unknown": {**OUTCOME["outcome_unknown"], "attempts": True}},
            r"outcome_unknown\.attempts: expected an integer",
        ),
        ({"outcome_unknown": None}, r"request\.outcome_unknown: expected an object"),
        ({**OUTCOME, "allowed": ["ignore"]}, r"request\.allowed: expected a list of run_again"),
    ],
)
def test_a_value_that_claims_to_be_a_request_but_is_not_is_refused_saying_where(
    value: dict[str, Any], where: str
) -> None:
    with pytest.raises(MalformedPause, match=where):
        pause_from("t", "i", value)
    assert issubclass(MalformedPause, ValueError)


def test_a_message_view_drops_only_its_defaults() -> None:
    user = MessageView(role="user", content="hi")
    assert user.to_dict() == {"role": "user", "content": "hi", "id": None}
    call = MessageView(
        role="assistant",
        content="",
        id="m2",
        tool_calls=[ToolCallView(id="c1", name="search", args={"q": "x"})],
        reasoning="look it up",
    )
    assert call.to_dict() == {
        "role": "assistant",
        "content": "",
        "id": "m2",
        "tool_calls": [{"id": "c1", "name": "search", "args": {"q": "x"}}],
        "reasoning": "look it up",
    }
    result = MessageView(
        role="tool", content="", tool_call_id="c1", tool_status="ok", duration_ms=3.0, notice=False
    )
    assert result.to_dict() == {
        "role": "tool",
        "content": "",
        "tool_call_id": "c1",
        "tool_status": "ok",
        "duration_ms": 3.0,
        "id": None,
    }
    with pytest.raises(AttributeError):
        user.content = "changed"  # type: ignore[misc]  # frozen, as the pydantic model was


def test_threads_counts_a_malformed_request_and_pending_says_what_is_wrong(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's own `interrupt()` whose value looks like a request but is not one: the
    thread list still shows that something waits, and reading it says where it is wrong."""
    from gatehouse.graph import open_reader
    from gatehouse.graph.store.reader import ThreadReader

    stored = [("i1", {"action_requests": "approve everything"})]
    monkeypatch.setattr(ThreadReader, "_interrupts", lambda self, ids: dict.fromkeys(ids, stored))
    reader = open_reader(str(tmp_path / "gh.db"))
    try:
        assert reader.pending_count("t") == 1
        with pytest.raises(MalformedPause, match=r"request\.action_requests: expected a list"):
            reader.pending("t")
        stored[:] = [("i1", APPROVAL)]
        assert reader.pending_count("t") == 2
        stored[:] = [("i1", "which branch?")]
        assert reader.pending_count("t") == 0
    finally:
        reader.close()

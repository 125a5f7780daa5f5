"""One door for changes (issue 56): every operation a front end can ask for has a wire
form that round-trips, a malformed one is refused like a malformed event, and the
operations that start no run answer through `Session.submit` in a run's shape (one
`Done` event) and change what a person sees, with the old refusals kept."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from gatehouse.graph import (
    AsyncSession,
    AwaitingDecision,
    Compaction,
    RunInProgress,
    ScriptedModel,
    ai,
)
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.operations import (
    Cancel,
    Compact,
    Decide,
    Delete,
    Fork,
    Grant,
    ImportThread,
    Operation,
    Rename,
    Retry,
    Revoke,
    RunOptions,
    SendMessage,
    SetAutoApprove,
    SwitchBranch,
    Undo,
    approve,
    operation_to_wire,
    outcome,
    parse_operation,
    review,
)
from gatehouse.graph.service.run import Run
from gatehouse.graph.service.testing import tool_call
from tests.support.core_fixtures import make_session

pytestmark = pytest.mark.timeout(120)

ANA, BOB = "ana@example.com", "bob@example.com"
EXAMPLES: list[Operation] = [
    SendMessage(None, "list files"),
    SendMessage("t", [{"type": "text", "text": "hi"}], owner="ann"),
    Decide("t", review([approve(always_allow="*.md")], reject_missing="late"), "i1"),
    Decide("t", outcome("respond", "it ran")),
    Retry("t"),
    Fork("t", 2, "again", force=True),
    Cancel("t"),
    Undo("t", force=True),
    Compact("t"),
    Rename("t", "New title"),
    Delete("t"),
    SwitchBranch("t", "m1", force=True),
    Grant("t", "write_file", "notes/*.md"),
    Revoke("t", "write_file:notes/*.md"),
    SetAutoApprove("t", True),
    SetAutoApprove(None, False),
    ImportThread('{"thread_id": "t"}', thread_id="copy"),
]


def test_every_operation_has_an_example() -> None:
    assert {type(op) for op in EXAMPLES} == set(get_args(Operation))


@pytest.mark.parametrize("op", EXAMPLES, ids=lambda op: op.type)
def test_every_operation_round_trips_through_its_wire_form(op: Operation) -> None:
    wire = operation_to_wire(op)
    assert wire["type"] == op.type
    assert parse_operation(wire) == op
    assert parse_operation(json.dumps(wire)) == op  # as JSON text, as it travels


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"type": "reboot", "thread_id": "t"}, "Input tag 'reboot'"),
        ({"thread_id": "t"}, "Unable to extract tag"),
        ({"type": "undo", "thread_id": 3}, "undo.thread_id"),
        ({"type": "undo", "thread_id": "t", "forse": True}, "undo.forse"),
        ({"type": "rename", "thread_id": "t"}, "rename.title"),
    ],
)
def test_an_unknown_type_or_a_bad_field_is_refused_like_a_bad_event(
    data: dict[str, Any], says: str
) -> None:
    with pytest.raises(ValidationError, match=says.replace(".", r"\.")):
        parse_operation(data)
    with pytest.raises(ValidationError):  # the same family parse_event raises
        ev.parse_event(data)


def done(run: Run, operation: str) -> ev.Done:
    assert isinstance(run, Run)
    [event] = run.collect()
    assert isinstance(event, ev.Done) and event.operation == operation
    return event


def test_changes_answer_in_a_runs_shape_and_show(tmp_path: Path) -> None:
    compaction = Compaction(ScriptedModel(script=["SUMMARY"]), max_tokens=10**9, keep_turns=1)
    session, _, _ = make_session(
        tmp_path, ["one", "two", "three", "four"], hooks={"before_llm": [compaction]}
    )
    try:
        for text in ("a", "b", "c"):
            session.send("t", text).collect()
        done(session.submit(Rename("t", "  Plans  ")), "rename")
        assert [(i.thread_id, i.title) for i in session.thread_list().threads] == [("t", "Plans")]

        assert done(session.submit(Undo("t")), "undo").removed == 2
        assert [m.content for m in session.view("t").messages] == ["a", "one", "b", "two"]

        compacted = done(session.submit(Compact("t")), "compact").compacted
        assert compacted is not None and compacted.messages_removed == 2

        assert done(session.submit(SetAutoApprove("t", True)), "set_auto_approve").changed
        assert session.view("t").auto_approve and session.view("t").auto_approving == "thread"
        assert not done(session.submit(SetAutoApprove("t", True)), "set_auto_approve").changed
        done(session.submit(SetAutoApprove(None, True)), "set_auto_approve")
        assert session.auto_approve

        given = done(session.submit(Grant("t", "deploy", "web*")), "grant").grant
        assert given is not None and given.label == "deploy:web*"
        assert {g.label for g in session.view("t").grants} == {"*", "deploy:web*"}
        taken = done(session.submit(Revoke("t", "deploy:web*")), "revoke").grant
        assert taken == given and [g.label for g in session.view("t").grants] == ["*"]

        exported = session.view("t").export("json")
        imported = done(session.submit(ImportThread(exported, "t-copy")), "import_thread")
        assert imported.thread_id == "t-copy" and imported.dropped  # the switch stayed behind
        assert session.view("t-copy").transcript == session.view("t").transcript

        done(session.submit(Delete("t")), "delete")
        assert [i.thread_id for i in session.thread_list().threads] == ["t-copy"]
        assert not session.view("t").exists
    finally:
        session.close()


def test_switch_branch_moves_between_versions(tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path, ["one", "two"])
    try:
        session.send("t", "first").collect()
        session.fork("t", 0, "second").collect()
        [versions] = session.view("t").branches
        moved = done(session.submit(SwitchBranch("t", versions.message_ids[0])), "switch_branch")
        assert moved.changed and session.view("t").transcript[0].content == "first"
        again = session.submit(SwitchBranch("t", versions.message_ids[0]))
        assert not done(again, "switch_branch").changed  # already on it
    finally:
        session.close()


def test_cancel_stops_the_live_run_and_a_live_run_refuses_delete(tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path, ["one"] * 3)
    try:
        assert not done(session.submit(Cancel("t")), "cancel").changed  # nothing running
        run = iter(session.send("t", "hello"))
        assert isinstance(next(run), ev.RunStarted)  # the run holds the thread now
        with pytest.raises(RunInProgress):
            session.submit(Delete("t"))
        assert done(session.submit(Cancel("t")), "cancel").changed
        assert [e for e in run if isinstance(e, ev.RunFinished)][0].status == "cancelled"
        assert session.view("t").exists
    finally:
        session.close()


def test_changes_refused_as_before(tmp_path: Path) -> None:
    deploy = ai("", tool_call("deploy", {"service": "web"}, "d1"))
    policy = {"deploy": {"mode": "ask", "approvers": [ANA]}}
    session, _, _ = make_session(tmp_path, [deploy, "ok"], policy=policy)
    try:
        session.send("t", "deploy", actor=BOB).collect()
        with pytest.raises(AwaitingDecision, match="undo would drop"):
            session.submit(Undo("t"))
        with pytest.raises(PermissionError, match=f"only {ANA} may decide deploy"):
            session.submit(Grant("t", "deploy"), RunOptions(actor=BOB))
        with pytest.raises(ValueError, match="a pattern must not be empty"):
            session.submit(Grant("t", "deploy", " "), RunOptions(actor=ANA))
        session.submit(Grant("t", "deploy"), RunOptions(actor=ANA))
        with pytest.raises(PermissionError, match=f"only {ANA} may decide deploy"):
            session.submit(Revoke("t", "deploy"), RunOptions(actor=BOB))
        with pytest.raises(ValueError, match="no grant 'shell'"):
            session.submit(Revoke("t", "shell"))
        assert [(g.label, g.actor) for g in session.view("t").grants] == [("deploy", ANA)]
        assert session.view("t").pending is not None  # nothing above touched the request
    finally:
        session.close()


def test_changes_through_the_async_session(tmp_path: Path) -> None:
    session, _, _ = make_session(tmp_path, ["one"])
    session.send("t", "hello").collect()

    async def main() -> tuple[str, str | None]:
        async with AsyncSession(session) as asession:
            run = await asession.submit(Rename("t", "Async"))
            info = await asession.view("t").info
            return (await run.result()).operation, info.title if info else None

    assert asyncio.run(main()) == ("rename", "Async")

"""The one typed way in (graph/protocol/operations.py): every operation a front end can
ask for goes through `Session.submit` / `Runner.submit` and acts like its method."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.messages import ToolMessage

from gatehouse.graph import AsyncSession, DecisionError, Runner, StaleDecision, ai, tool_call
from gatehouse.graph.protocol.operations import (
    Decide,
    Fork,
    Retry,
    RunOptions,
    SendMessage,
    approve,
    edit,
    reject,
    review,
)
from tests.support.core_fixtures import make_session


def gated_turn() -> object:
    return ai(
        "Sending.",
        tool_call("send_email", {"to": "bob@example.com", "body": "hi"}, "g1"),
        tool_call("deploy", {"service": "web"}, "g2"),
    )


def test_send_then_a_typed_decision_runs_exactly_what_it_says(tmp_path: Path) -> None:
    session, ledger, _ = make_session(tmp_path, [gated_turn(), "Done."])
    events = session.submit(
        SendMessage("t1", "mail bob"), RunOptions(source="web", actor="ann")
    ).collect()
    assert events[-1].status == "awaiting_approval"
    pause = session.view("t1").pending
    answer = review(
        [edit("send_email", {"to": "carol@example.com", "body": "hi"}), reject("not today")]
    )
    events = session.submit(
        Decide("t1", answer, pause.interrupt_id), RunOptions(source="web", actor="ann")
    ).collect()
    assert events[-1].status == "completed"
    assert ledger.count("send_email") == 1 and ledger.count("deploy") == 0
    results = {m.tool_call_id: m for m in session.view("t1").messages if isinstance(m, ToolMessage)}
    assert "not today" in str(results["g2"].content)
    record = session.view("t1").audit()[0]
    assert (record.source, record.actor) == ("web", "ann")


def test_a_decision_that_does_not_fit_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    session, ledger, _ = make_session(tmp_path, [gated_turn(), "Done."])
    session.submit(SendMessage("t1", "mail bob")).collect()
    with pytest.raises(DecisionError):
        session.submit(Decide("t1", review([approve()]))).collect()
    assert ledger.count("send_email") == 0
    assert session.view("t1").pending is not None


def test_runner_submit_runs_in_the_background_and_fork_and_retry_go_the_same_way(
    tmp_path: Path,
) -> None:
    session, _, _ = make_session(tmp_path, ["First answer.", "Second answer.", "Third answer."])
    runner = Runner(session)
    run = runner.submit(SendMessage(None, "hello"))
    assert run.join(30) and run.status == "completed"
    thread_id = run.thread_id
    assert runner.submit(Fork(thread_id, 0, "hello again")).join(30)
    contents = [m.content for m in session.view(thread_id).messages]
    assert contents[0] == "hello again" and len(contents) == 2, contents
    assert runner.submit(Retry(thread_id)).join(30)


def test_async_submit_and_its_reads_act_like_the_sync_session(tmp_path: Path) -> None:
    session, ledger, _ = make_session(tmp_path, [gated_turn(), "Done."])

    async def main() -> tuple[list[object], list[object]]:
        async with AsyncSession(session) as asession:
            paused = await (await asession.submit(SendMessage("t1", "mail bob"))).collect()
            pause = await asession.view("t1").pending
            assert pause is not None and pause == session.view("t1").pending
            with pytest.raises(StaleDecision):  # validation raises from the await, nothing runs
                await asession.submit(
                    Decide("t1", review([approve(), approve()]), "not-the-pending-one")
                )
            answer = review([approve(), reject("no deploys on Fridays")])
            done = await (
                await asession.submit(
                    Decide("t1", answer, pause.interrupt_id), RunOptions(actor="ann")
                )
            ).collect()
            assert [m.content for m in await asession.view("t1").messages] == [
                m.content for m in session.view("t1").messages
            ]
            assert (await asession.view("t1").audit())[0].actor == "ann"
            return paused, done

    paused, done = asyncio.run(main())
    assert paused[-1].status == "awaiting_approval" and done[-1].status == "completed"
    assert ledger.count("send_email") == 1 and ledger.count("deploy") == 0


def test_resume_takes_a_typed_answer_or_the_wire_form_with_the_same_checks(tmp_path: Path) -> None:
    again = ai(
        "Sending.",
        tool_call("send_email", {"to": "bob@example.com", "body": "hi"}, "h1"),
        tool_call("deploy", {"service": "web"}, "h2"),
    )
    session, ledger, _ = make_session(tmp_path, [gated_turn(), "Done.", again, "Done again."])
    session.send("t1", "mail bob").collect()
    # One decision for two calls: refused in either form, and nothing changes.
    with pytest.raises(DecisionError, match="expected 2 decision"):
        session.resume("t1", review([approve()]))
    with pytest.raises(DecisionError, match="expected 2 decision"):
        session.resume("t1", {"decisions": [{"type": "approve"}]})
    assert session.view("t1").pending is not None and ledger.count("send_email") == 0
    events = session.resume("t1", review([approve(), reject("no deploys")])).collect()
    assert events[-1].status == "completed"
    assert ledger.count("send_email") == 1 and ledger.count("deploy") == 0

    # A raw client's wire form, keyed by call id; reject_missing decides the call left out.
    session.send("t1", "again").collect()
    events = session.resume(
        "t1", {"decisions": {"h1": {"type": "reject"}}}, reject_missing="not decided"
    ).collect()
    assert (
        events[-1].status == "completed"
        and ledger.count("send_email") == 1
        and ledger.count("deploy") == 0
    )
    results = {
        m.tool_call_id: str(m.content)
        for m in session.view("t1").messages
        if isinstance(m, ToolMessage)
    }
    assert "not decided" in results["h2"]


def test_an_unknown_run_option_is_refused_before_anything_runs(tmp_path: Path) -> None:
    session, _, model = make_session(tmp_path, ["Hello."])
    with pytest.raises(TypeError):
        session.send("t1", "hi", sorce="web")  # type: ignore[call-arg]  # the typo under test
    assert not session.view("t1").exists and model.inputs == []

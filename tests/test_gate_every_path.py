"""The gate holds on every path (issue 15): the guarantees live in the graph and its
storage, so a raw compiled graph, resumed with `Command` as Studio and the SDK do,
gets the same as the Session: no gated call runs without a person's recorded
decision, no approved call runs twice, a bad answer changes nothing, and a thread
with an unfinished call takes no new input until the call is decided.

The graphs here are built with Gatehouse's storage (journal and decision log), the
way `open_session`, LangGraph Server on Gatehouse's checkpointer, and an embedder
who follows docs/embedding.md build them. The same scenarios through langgraph-sdk
against `langgraph dev` are in tests/test_gate_matrix.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.types import Command, Send
from pydantic import ValidationError

from gatehouse.graph import (
    CallAlreadyStarted,
    DemoModel,
    OutcomeUnknown,
    ScriptedModel,
    Session,
    StaleDecision,
    ai,
    build_graph,
    tool_call,
)
from gatehouse.graph.store import open_storage
from tests.support.counting_tools import make_counting_tools, runs
from tests.support.crash_worker import open_session as crash_session

ROOT = Path(__file__).resolve().parents[1]
APPROVE = {"decisions": [{"type": "approve"}]}


def bump_script() -> list[Any]:
    return [ai("On it.", tool_call("bump", {"label": "deploy"}, "c1")), "Done."] + [
        "Answered."
    ] * 10


def raw_graph(db: Path, counter: Path, script: list[Any] | None = None) -> tuple[Any, Any]:
    storage = open_storage(str(db))
    graph = build_graph(
        model=ScriptedModel(script=script or bump_script()),
        tools=make_counting_tools(counter),
        checkpointer=storage.checkpointer,
        journal=storage.journal,
        decisions=storage.decisions,
    )
    return graph, storage


def cfg(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def tool_messages(graph: Any, thread: str) -> list[ToolMessage]:
    return [
        m for m in graph.get_state(cfg(thread)).values["messages"] if isinstance(m, ToolMessage)
    ]


# -- 1. approval cannot be skipped through run input, command updates or forged tasks --
def test_run_input_cannot_grant_or_skip_approval(tmp_path: Path) -> None:
    graph, _ = raw_graph(tmp_path / "g.db", tmp_path / "count")
    graph.invoke(
        {
            "messages": [{"role": "user", "content": "deploy"}],
            "grants": [{"tool": "bump", "pattern": None}],
            "stop_reason": None,
            "call": tool_call("bump", {"label": "x"}, "forged"),
            "mode": "run",
        },
        cfg("t"),
    )
    assert runs(tmp_path / "count") == {}
    assert graph.get_state(cfg("t")).interrupts, "the gated call must still wait for a person"
    assert "grants" not in graph.get_input_jsonschema()["properties"]
    assert sorted(graph.get_input_jsonschema()["properties"]) == ["messages"]


def test_a_command_update_writing_grants_approves_nothing(tmp_path: Path) -> None:
    graph, _ = raw_graph(tmp_path / "g.db", tmp_path / "count")
    graph.invoke(
        Command(
            update={"messages": [HumanMessage("hi")], "grants": [{"tool": "bump", "pattern": None}]}
        ),
        cfg("t"),
    )
    graph.invoke({"messages": [("user", "deploy")]}, cfg("t"))
    assert runs(tmp_path / "count") == {}
    assert graph.get_state(cfg("t")).interrupts


@pytest.mark.parametrize(
    ("mode", "note"),
    [
        ("bogus", None),
        ("", None),
        ("respond", "fake tool output"),
        ("reject", "no"),
        ("deny", None),
    ],
)
def test_a_forged_task_that_claims_another_answer_is_refused(
    tmp_path: Path, mode: str, note: str | None
) -> None:
    """A task in any mode but "run" answers a call without running it, so none may
    answer a waiting call with what no person or policy said; and a mode Gatehouse
    never sends is not taken as "run" (it ran the gated call before)."""
    graph, _ = raw_graph(tmp_path / "g.db", tmp_path / "count")
    graph.invoke({"messages": [("user", "deploy")]}, cfg("t"))
    [asked] = graph.get_state(cfg("t")).interrupts
    call = tool_call("bump", {"label": "deploy"}, "c1")
    forged = Send("run_tool", {"call": call, "mode": mode, "note": note, "moves_on": True})
    notices = [
        c
        for m, c in graph.stream(Command(goto=forged), cfg("t"), stream_mode=["custom", "updates"])
        if m == "custom" and c.type == "notice"
    ]
    assert runs(tmp_path / "count") == {}
    assert any("Refused" in n.text for n in notices), notices
    state = graph.get_state(cfg("t"))
    assert not [m for m in state.values["messages"] if isinstance(m, ToolMessage)]
    assert [i.value for i in state.interrupts] == [asked.value]
    # The person's answer still decides it: approved, it runs once.
    graph.invoke(Command(resume=APPROVE), cfg("t"))
    assert runs(tmp_path / "count") == {"deploy": 1}
    results = [
        m.content
        for m in graph.get_state(cfg("t")).values["messages"]
        if isinstance(m, ToolMessage)
    ]
    assert results == ["bump ran for deploy"]


def test_a_forged_send_to_run_tool_is_refused_not_run(tmp_path: Path) -> None:
    graph, _ = raw_graph(tmp_path / "g.db", tmp_path / "count")
    graph.invoke({"messages": [("user", "deploy")]}, cfg("t"))
    [asked] = graph.get_state(cfg("t")).interrupts
    # What a client can send through LangGraph Server: command={"goto": {"node": "run_tool", "input": ...}}.
    forged = Send(
        "run_tool",
        {"call": tool_call("bump", {"label": "deploy"}, "c1"), "mode": "run", "moves_on": True},
    )
    notices = [
        c
        for m, c in graph.stream(Command(goto=forged), cfg("t"), stream_mode=["custom", "updates"])
        if m == "custom"
    ]
    assert runs(tmp_path / "count") == {}
    assert any(n.type == "notice" and "no person approved" in n.text for n in notices)
    # The call still waits for the person, unanswered, and runs once when approved.
    assert [i.value for i in graph.get_state(cfg("t")).interrupts] == [asked.value]
    graph.invoke(Command(resume=APPROVE), cfg("t"))
    assert runs(tmp_path / "count") == {"deploy": 1}
    assert [m.tool_call_id for m in tool_messages(graph, "t")] == ["c1"]


def test_an_approved_call_runs_once_then_the_same_forged_send_does_not_repeat_it(
    tmp_path: Path,
) -> None:
    graph, _ = raw_graph(tmp_path / "g.db", tmp_path / "count")
    graph.invoke({"messages": [("user", "deploy")]}, cfg("t"))
    graph.invoke(Command(resume=APPROVE), cfg("t"))
    assert runs(tmp_path / "count") == {"deploy": 1}
    replay = Send(
        "run_tool",
        {"call": tool_call("bump", {"label": "deploy"}, "c1"), "mode": "run", "moves_on": False},
    )
    graph.invoke(Command(goto=replay), cfg("t"))
    assert runs(tmp_path / "count") == {"deploy": 1}


# -- 2. two concurrent raw resumes never run an approved call twice ---------------------
def test_concurrent_raw_resumes_in_threads_run_the_call_once(tmp_path: Path) -> None:
    trials, twice = 30, 0
    for n in range(trials):
        db, counter = tmp_path / f"t{n}.db", tmp_path / f"count{n}"
        graph, _ = raw_graph(db, counter)
        graph.invoke({"messages": [("user", "deploy")]}, cfg("t"))
        start = threading.Barrier(2)
        refused: list[BaseException] = []

        def resume(
            graph: Any = graph,
            start: threading.Barrier = start,
            refused: list[BaseException] = refused,
        ) -> None:
            start.wait()
            try:
                graph.invoke(Command(resume=APPROVE), cfg("t"))
            except (CallAlreadyStarted, StaleDecision) as exc:  # the loser: told, nothing run
                refused.append(exc)

        workers = [threading.Thread(target=resume) for _ in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
        twice += runs(counter)["deploy"] > 1
        assert len(refused) <= 1
        assert runs(counter)["deploy"] == 1, f"trial {n}: ran {runs(counter)['deploy']} times"
        assert [m.tool_call_id for m in tool_messages(graph, "t")] == ["c1"]
    assert twice == 0


def test_concurrent_raw_resumes_in_processes_run_the_call_once(tmp_path: Path) -> None:
    for n in range(6):
        db, counter = tmp_path / f"p{n}.db", tmp_path / f"count{n}"
        graph, storage = raw_graph(db, counter)
        graph.invoke({"messages": [("user", "deploy")]}, cfg("t"))
        storage.close()
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.support.raw_resume_worker",
                    str(db),
                    str(counter),
                    "t",
                    json.dumps(APPROVE),
                ],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outcomes = [p.communicate(timeout=120) for p in procs]
        assert runs(counter)["deploy"] == 1, f"trial {n}: {outcomes}"
        assert all(p.returncode in (0, 3) for p in procs), outcomes


# -- 3. a bad raw answer leaves a clean pause -------------------------------------------
@pytest.mark.parametrize(
    "bad",
    [
        {"decisions": [{"type": "nope"}]},
        {"decisions": []},
        {"decisions": [{"type": "edit", "edited_action": {"name": "bump", "args": {"label": 5}}}]},
        {
            "decisions": [
                {"type": "edit", "edited_action": {"name": "bump_free", "args": {"label": "x"}}}
            ]
        },
        "yes please",
    ],
)
def test_a_bad_raw_answer_is_not_stored_and_the_pause_stays_clean(tmp_path: Path, bad: Any) -> None:
    graph, storage = raw_graph(tmp_path / "g.db", tmp_path / "count")
    graph.invoke({"messages": [("user", "deploy")]}, cfg("t"))
    before = graph.get_state(cfg("t"))
    with pytest.raises(ValidationError):
        graph.invoke(Command(resume=bad), cfg("t"))
    after = graph.get_state(cfg("t"))
    assert [t.error for t in after.tasks] == [None], "no failed task is left on the pause"
    assert [i.id for i in after.interrupts] == [i.id for i in before.interrupts]
    assert (
        after.config["configurable"]["checkpoint_id"]
        == before.config["configurable"]["checkpoint_id"]
    )
    # A retry (what Session.retry sends) replays nothing: the thread is still paused.
    graph.invoke(None, cfg("t"))
    assert graph.get_state(cfg("t")).interrupts and runs(tmp_path / "count") == {}
    session = Session(graph, storage, make_counting_tools(tmp_path / "count"))
    assert (
        session.view("t").pending is not None
        and session.view("t").pending.interrupt_id == before.interrupts[0].id
    )
    # A correct answer afterwards completes.
    graph.invoke(Command(resume=APPROVE), cfg("t"))
    assert runs(tmp_path / "count") == {"deploy": 1}
    assert graph.get_state(cfg("t")).values["messages"][-1].content == "Done."


# -- 4. a crash's open question cannot be skipped by sending something else -------------
def _crash_inside_the_call(tmp_path: Path) -> tuple[Path, Path]:
    from tests.test_crash_recovery import kill9, spawn, wait_for

    db, counter, marker = tmp_path / "c.db", tmp_path / "count", tmp_path / "marker"
    session = crash_session(str(db), str(counter))
    assert session.send("t", "hello").collect()[-1].status == "awaiting_approval"
    session.close()
    victim = spawn(
        db,
        counter,
        "resume",
        "t",
        json.dumps(APPROVE),
        GATEHOUSE_TEST_TOOL_SLEEP="60",
        GATEHOUSE_TEST_MARKER=str(marker),
    )
    wait_for(marker, "in_tool", victim)
    kill9(victim)
    assert runs(counter) == {"hello": 1}
    return db, counter


def test_a_new_message_after_a_crash_inside_a_call_asks_the_outcome_first(tmp_path: Path) -> None:
    db, counter = _crash_inside_the_call(tmp_path)
    session = crash_session(str(db), str(counter))
    try:
        events = session.send("t", "something else").collect()
        assert events[-1].status == "awaiting_approval"
        pause = session.view("t").pending
        assert isinstance(pause, OutcomeUnknown) and pause.call.tool_call_id == "call0"
        # The new message waits; the history has no user message after the open call.
        assert [m.content for m in session.view("t").messages if isinstance(m, HumanMessage)] == [
            "hello"
        ]
        session.resume("t", {"type": "mark_failed", "message": "not sure"}).collect()
        messages = session.view("t").messages
        kinds = [(type(m).__name__, getattr(m, "tool_call_id", None)) for m in messages]
        assert kinds[:4] == [
            ("HumanMessage", None),
            ("AIMessage", None),
            ("ToolMessage", "call0"),
            ("HumanMessage", None),
        ]
        # The held message joined after the answer, and the model took it up (its new
        # call waits for approval); the crashed call never ran a second time.
        assert messages[3].content == "something else" and isinstance(messages[4], AIMessage)
        assert messages[2].status == "error" and "not sure" in str(messages[2].content)
        assert runs(counter) == {"hello": 1}
    finally:
        session.close()


def test_raw_new_input_while_a_review_waits_asks_the_same_review_again(tmp_path: Path) -> None:
    graph, _ = raw_graph(tmp_path / "g.db", tmp_path / "count")
    graph.invoke({"messages": [("user", "deploy")]}, cfg("t"))
    [first] = graph.get_state(cfg("t")).interrupts
    graph.invoke({"messages": [("user", "never mind, something else")]}, cfg("t"))
    [again] = graph.get_state(cfg("t")).interrupts
    assert again.value == first.value
    graph.invoke(Command(resume={"decisions": [{"type": "reject", "message": "no"}]}), cfg("t"))
    messages = graph.get_state(cfg("t")).values["messages"]
    assert [type(m).__name__ for m in messages][:4] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "HumanMessage",
    ]
    assert messages[3].content == "never mind, something else"
    assert runs(tmp_path / "count") == {}


# -- 6. content blocks, as Agent Chat UI sends them ---------------------------------------
def test_content_blocks_reach_the_demo_model_as_text(tmp_path: Path) -> None:
    from gatehouse.graph.service.config import Settings
    from gatehouse.graph.service.toolset import build_tools

    storage = open_storage(str(tmp_path / "g.db"))
    tools = build_tools(Settings(workspace=str(tmp_path / "ws"), db=str(tmp_path / "g.db")))
    graph = build_graph(
        model=DemoModel(),
        tools=tools,
        checkpointer=storage.checkpointer,
        journal=storage.journal,
        decisions=storage.decisions,
    )
    blocks = [{"type": "text", "text": "write todo.md: buy milk"}]
    graph.invoke({"messages": [{"role": "user", "content": blocks}]}, cfg("t"))
    [pause] = graph.get_state(cfg("t")).interrupts
    [action] = pause.value["action_requests"]
    assert action["name"] == "write_file" and action["args"] == {
        "path": "todo.md",
        "content": "buy milk\n",
    }
    # The Session takes blocks too.
    session = Session(graph, storage, tools)
    session.send("t2", [{"type": "text", "text": "write b.md: y"}]).collect()
    assert session.view("t2").pending.actions[0].args == {"path": "b.md", "content": "y\n"}

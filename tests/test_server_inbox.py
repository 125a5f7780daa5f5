"""Agent Inbox's exact requests through langgraph-sdk against `langgraph dev` (issue 33).

What Agent Inbox sends (langchain-ai/agent-inbox, ThreadContext.tsx): a resume with a
list holding one HumanResponse, streamed with `streamMode: "events"`; "Mark as
resolved" is `threads.updateState(id, {values: null, asNode: "__end__"})`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.langgraph_dev import GRAPH, DevServer, langgraph_dev


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DevServer, Path]]:
    home = tmp_path_factory.mktemp("inbox-dev")
    workspace = home / "workspace"
    workspace.mkdir()
    with langgraph_dev(home, db=home / "gatehouse.db", workspace=workspace) as server:
        yield server, workspace


def _paused(client: Any, text: str) -> str:
    tid = client.threads.create()["thread_id"]
    client.runs.wait(tid, GRAPH, input={"messages": [{"role": "user", "content": text}]})
    assert client.threads.get(tid)["status"] == "interrupted"
    return tid


def _inbox_resume(client: Any, tid: str, response: dict[str, Any]) -> list[Any]:
    # sendHumanResponse(threadId, [input], {stream: true})
    return list(
        client.runs.stream(tid, GRAPH, command={"resume": [response]}, stream_mode="events")
    )


def test_inbox_accept_and_ignore_through_the_sdk(dev: tuple[DevServer, Path]) -> None:
    server, workspace = dev
    client = server.client()
    tid = _paused(client, "write inbox.md: from the inbox")
    [interrupt] = client.threads.get_state(tid)["interrupts"]
    [action] = interrupt["value"]["action_requests"]
    # Agent Inbox normalises a HITL request reading the arguments from `arguments`
    # (HITL names them `args`), so the accept it sends echoes {}.
    parts = _inbox_resume(
        client, tid, {"type": "accept", "args": {"action": action["name"], "args": {}}}
    )
    assert not [p for p in parts if p.event == "error"]
    assert (workspace / "inbox.md").read_text().strip() == "from the inbox"
    assert client.threads.get(tid)["status"] == "idle"

    tid = _paused(client, "write ignored.md: no")
    parts = _inbox_resume(client, tid, {"type": "ignore", "args": None})
    assert not [p for p in parts if p.event == "error"]
    assert not (workspace / "ignored.md").exists()
    tools = [m for m in client.threads.get_state(tid)["values"]["messages"] if m["type"] == "tool"]
    assert tools[-1]["status"] == "error" and "ignored" in tools[-1]["content"]


def test_ambiguous_inbox_answer_is_refused_with_the_reason_and_stays_answerable(
    dev: tuple[DevServer, Path],
) -> None:
    server, workspace = dev
    client = server.client()
    tid = _paused(client, "write a.md: x then write b.md: y")
    before = client.threads.get_state(tid)["interrupts"][0]["id"]
    # Its edit form holds the first call only: an edit cannot say what the other gets.
    edit = {
        "type": "edit",
        "args": {"action": "write_file", "args": {"path": "a.md", "content": "z"}},
    }
    parts = _inbox_resume(client, tid, edit)
    errors = [p.data for p in parts if p.event == "error"]
    assert errors and "edit form holds only the first" in str(errors[0])
    # LangGraph Server marks a failed run's thread "error" (langgraph_api worker); the
    # pause itself is untouched, Gatehouse's sync (server_sync.py) sets the thread back to
    # "interrupted" (Agent Inbox lists it as waiting again), and a proper answer goes through.
    state = client.threads.get_state(tid)
    assert state["interrupts"][0]["id"] == before and state["next"] == ["review"]
    assert not (workspace / "a.md").exists()
    deadline = time.monotonic() + 20
    while client.threads.get(tid)["status"] != "interrupted":
        assert time.monotonic() < deadline, client.threads.get(tid)["status"]
        time.sleep(0.1)
    client.runs.wait(
        tid, GRAPH, command={"resume": {"decisions": [{"type": "approve"}, {"type": "reject"}]}}
    )
    assert (workspace / "a.md").exists() and not (workspace / "b.md").exists()
    assert client.threads.get(tid)["status"] == "idle"


def test_mark_as_resolved_rejects_the_open_call(dev: tuple[DevServer, Path]) -> None:
    server, workspace = dev
    client = server.client()
    tid = _paused(client, "write resolved.md: never")
    client.threads.update_state(tid, None, as_node="__end__")
    state = client.threads.get_state(tid)
    assert not state["next"] and not state["interrupts"]
    tools = [m for m in state["values"]["messages"] if m["type"] == "tool"]
    assert tools and "marked this request as resolved" in tools[-1]["content"]
    from gatehouse.graph.store import open_storage

    storage = open_storage(str(server.home / "gatehouse.db"))
    try:
        [record] = storage.decisions.for_thread(tid) if storage.decisions else []
    finally:
        storage.close()
    assert record.decision == "reject" and record.source == "langgraph-server" and record.actor
    # The next message is answered, not met with the same question again.
    client.runs.wait(tid, GRAPH, input={"messages": [{"role": "user", "content": "hello"}]})
    after = client.threads.get_state(tid)
    assert not after["interrupts"] and after["values"]["messages"][-1]["type"] == "ai"
    assert client.threads.get(tid)["status"] == "idle"
    assert not (workspace / "resolved.md").exists()


def test_agent_chat_ui_mark_as_resolved_rejects_the_open_call(dev: tuple[DevServer, Path]) -> None:
    # Agent Chat UI's "Mark as Resolved" (use-interrupted-actions.tsx handleResolve):
    # thread.submit({}, {command: {goto: END}}), streamed with its usual modes.
    server, workspace = dev
    client = server.client()
    tid = _paused(client, "write chatui.md: never")
    parts = list(
        client.runs.stream(
            tid,
            GRAPH,
            input={},
            command={"goto": "__end__"},
            stream_mode=["messages-tuple", "values", "custom"],
            on_disconnect="cancel",
        )
    )
    assert not [p for p in parts if p.event == "error"], parts
    state = client.threads.get_state(tid)
    assert not state["next"] and not state["interrupts"]
    tools = [m for m in state["values"]["messages"] if m["type"] == "tool"]
    assert tools and "marked this request as resolved" in tools[-1]["content"]
    assert client.threads.get(tid)["status"] == "idle"
    from gatehouse.graph.store import open_storage

    storage = open_storage(str(server.home / "gatehouse.db"))
    try:
        [record] = storage.decisions.for_thread(tid) if storage.decisions else []
    finally:
        storage.close()
    # Recorded like any rejection, with the signed-in user the server names.
    assert record.decision == "reject" and record.source == "langgraph-server" and record.actor
    client.runs.wait(tid, GRAPH, input={"messages": [{"role": "user", "content": "hello"}]})
    after = client.threads.get_state(tid)
    assert not after["interrupts"] and after["values"]["messages"][-1]["type"] == "ai"
    assert not (workspace / "chatui.md").exists()


def test_sdk_cancel_stops_a_running_command_within_about_a_second(
    dev: tuple[DevServer, Path],
) -> None:
    from gatehouse.graph.store import open_storage

    server, workspace = dev
    client = server.client()
    tid = _paused(client, "run: touch started.txt && sleep 30 && touch finished.txt")
    [action] = client.threads.get_state(tid)["interrupts"][0]["value"]["action_requests"]
    run = client.runs.create(tid, GRAPH, command={"resume": {"decisions": [{"type": "approve"}]}})
    deadline = time.monotonic() + 60
    while not (workspace / "started.txt").exists():  # the command is running
        assert time.monotonic() < deadline
        time.sleep(0.05)
    began = time.monotonic()
    client.runs.cancel(tid, run["run_id"])
    storage = open_storage(str(server.home / "gatehouse.db"))
    try:
        while True:  # the call's journal entry says how it ended
            entry = storage.journal.get(tid, action["tool_call_id"]) if storage.journal else None
            if entry is not None and entry.finished:
                break
            assert time.monotonic() - began < 10, (
                "the command kept running after the SDK cancelled the run"
            )
            time.sleep(0.05)
        stopped_after = time.monotonic() - began
    finally:
        storage.close()
    print(f"SDK cancel: command stopped and journaled {stopped_after:.2f} s after runs.cancel")
    assert stopped_after < 3, stopped_after
    assert entry.result is not None and "Stopped by the person" in str(entry.result.content)
    assert not (workspace / "finished.txt").exists()
    # The thread is not wedged: the next message goes on, and the call's result says it was stopped.
    client.runs.join(tid, run["run_id"])
    client.runs.wait(
        tid, GRAPH, input={"messages": [{"role": "user", "content": "what happened?"}]}
    )
    messages = client.threads.get_state(tid)["values"]["messages"]
    [result] = [
        m for m in messages if m["type"] == "tool" and m["tool_call_id"] == action["tool_call_id"]
    ]
    assert "Stopped by the person" in result["content"] and messages[-1]["type"] == "ai"
    assert not (workspace / "finished.txt").exists()


def test_a_late_sdk_approve_is_refused_with_who_decided(dev: tuple[DevServer, Path]) -> None:
    from gatehouse.graph import open_session
    from gatehouse.graph.service.config import Settings

    server, workspace = dev
    client = server.client()
    tid = _paused(client, "write late.md: first")
    # The terminal decides first.
    session = open_session(
        Settings(db=str(server.home / "gatehouse.db"), workspace=str(workspace)),
        source="terminal",
        actor="ana",
    )
    try:
        session.resume(tid, {"decisions": [{"type": "reject", "message": "not today"}]}).collect()
    finally:
        session.close()
    parts = list(
        client.runs.stream(tid, GRAPH, command={"resume": {"decisions": [{"type": "approve"}]}})
    )
    errors = [p.data for p in parts if p.event == "error"]
    assert errors and "already decided — `write_file` rejected by ana via terminal" in str(
        errors[0]
    )
    assert not (workspace / "late.md").exists()

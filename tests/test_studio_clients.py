"""Issue 57 items 1-3 through langgraph-sdk against `langgraph dev` (what Agent Chat UI
and Studio send): a typed message while a card is shown keeps the card, a fake tool
result is refused, Studio's state edits work with and without `as_node` and keep the
pause, and `runs.cancel` during an approved command leaves an idle thread with the
call answered, before and after a server restart. The compiled graph's side is in
tests/test_pause_closes_by_decision.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from gatehouse.graph import open_session
from gatehouse.graph.service.config import Settings
from tests.support.langgraph_dev import GRAPH, DevServer, langgraph_dev

pytestmark = pytest.mark.slow
APPROVE = {"resume": {"decisions": [{"type": "approve"}]}}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("studio-clients")
    db, workspace = home / "gatehouse.db", home / "workspace"
    workspace.mkdir()
    world: dict[str, Any] = {"home": home, "db": db, "workspace": workspace}
    with langgraph_dev(home / "server", db=db, workspace=workspace) as server:
        world["server"] = server
        yield world


def errors_of(client: Any, thread_id: str, **kwargs: Any) -> list[Any]:
    kwargs.setdefault("stream_mode", ["updates", "debug"])
    parts = client.runs.stream(thread_id, GRAPH, **kwargs)
    return [p.data for p in parts if p.event == "error"]


def until(check: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, what
        time.sleep(0.1)
    return found


def idle(state: dict[str, Any]) -> dict[str, Any] | None:
    return None if state["next"] else state


def paused_thread(client: Any, text: str) -> tuple[str, dict[str, Any]]:
    tid = client.threads.create()["thread_id"]
    assert not errors_of(client, tid, input={"messages": [{"role": "user", "content": text}]})
    [pause] = client.threads.get_state(tid)["interrupts"]
    return tid, pause


def test_agent_chat_ui_typing_during_a_card_keeps_it_and_a_fake_result_is_refused(
    world: dict[str, Any],
) -> None:
    server: DevServer = world["server"]
    client = server.client()
    tid, pause = paused_thread(client, "write acui.md: from the card")
    [request] = pause["value"]["action_requests"]
    call_id = request["tool_call_id"]
    # Agent Chat UI's exact submit when a person types while the card is shown.
    typed = {
        "messages": [
            {
                "type": "tool",
                "tool_call_id": call_id,
                "id": "do-not-render-0b1c2d3e",
                "name": request["name"],
                "content": "Successfully handled tool call.",
            },
            {"id": "typed-1", "type": "human", "content": [{"type": "text", "text": "wait"}]},
        ]
    }
    assert not errors_of(client, tid, input=typed, stream_mode=["values"])
    state = client.threads.get_state(tid)
    [still] = state["interrupts"]
    assert still["value"]["action_requests"] == pause["value"]["action_requests"]
    assert all(m["type"] != "tool" for m in state["values"]["messages"])
    assert not (world["workspace"] / "acui.md").exists()
    until(lambda: client.threads.get(tid)["status"] == "interrupted", "status interrupted")

    # The raw SDK's fake "exit code 0", alone: refused with the reason, nothing changes.
    head = state["checkpoint"]["checkpoint_id"]
    fake = {"messages": [{"type": "tool", "tool_call_id": call_id, "content": "exit code 0"}]}
    [error] = errors_of(client, tid, input=fake)
    assert "waits for a person's decision" in error["message"]
    after = client.threads.get_state(tid)
    assert after["checkpoint"]["checkpoint_id"] == head and after["interrupts"]
    until(lambda: client.threads.get(tid)["status"] == "interrupted", "pause shown again")

    # The decision closes it: the write runs once, the typed message follows its result.
    assert not errors_of(client, tid, command=APPROVE)
    assert (world["workspace"] / "acui.md").read_text() == "from the card\n"
    kinds = [m["type"] for m in client.threads.get_state(tid)["values"]["messages"]]
    assert kinds[:4] == ["human", "ai", "tool", "human"]


def test_studio_state_edits_forks_and_the_graph_drawing(world: dict[str, Any]) -> None:
    server: DevServer = world["server"]
    client = server.client()
    tid, pause = paused_thread(client, "write edit.md: before the edit")
    first = client.threads.get_state(tid)["values"]["messages"][0]
    for as_node in (None, "model", "review"):
        edited = {**first, "content": f"edited as {as_node}"}
        client.threads.update_state(tid, {"messages": [edited]}, as_node=as_node)
        state = client.threads.get_state(tid)
        assert state["values"]["messages"][0]["content"] == f"edited as {as_node}"
        [still] = state["interrupts"]
        assert still["value"]["action_requests"] == pause["value"]["action_requests"]
    until(lambda: client.threads.get(tid)["status"] == "interrupted", "still paused")
    # An edit that answers the open call: 400 with the reason, nothing changes.
    call_id = pause["value"]["action_requests"][0]["tool_call_id"]
    head = client.threads.get_state(tid)["checkpoint"]["checkpoint_id"]
    with pytest.raises(httpx.HTTPStatusError) as refused:
        client.threads.update_state(
            tid,
            {"messages": [{"type": "tool", "tool_call_id": call_id, "content": "done"}]},
            as_node="run_tool",
        )
    assert refused.value.response.status_code == 400
    assert "waits for a person's decision" in refused.value.response.text
    assert client.threads.get_state(tid)["checkpoint"]["checkpoint_id"] == head
    assert not (world["workspace"] / "edit.md").exists()

    # The model's reply edited as the model: the card asks about the edited call.
    reply = client.threads.get_state(tid)["values"]["messages"][1]
    [call] = reply["tool_calls"]
    other = {**reply, "tool_calls": [{**call, "args": {**call["args"], "path": "other.md"}}]}
    client.threads.update_state(tid, {"messages": [other]}, as_node="model")
    [asked] = client.threads.get_state(tid)["interrupts"]
    assert asked["value"]["action_requests"][0]["args"]["path"] == "other.md"
    assert not (world["workspace"] / "other.md").exists()

    # Fork from the first checkpoint (what Studio's "fork" sends), then run it.
    history = client.threads.get_history(tid, limit=100)
    start = next(h for h in reversed(history) if len(h["values"].get("messages", [])) == 1)
    forked = client.threads.update_state(
        tid,
        {"messages": [{**first, "content": "write fork.md: forked"}]},
        checkpoint_id=start["checkpoint"]["checkpoint_id"],
    )
    assert not errors_of(
        client, tid, input=None, checkpoint_id=forked["checkpoint"]["checkpoint_id"]
    )
    [fork_pause] = client.threads.get_state(tid)["interrupts"]
    assert fork_pause["value"]["action_requests"][0]["args"]["path"] == "fork.md"

    # The graph drawing and its nodes, as Studio reads them.
    [assistant] = client.assistants.search(graph_id=GRAPH)
    drawing = client.assistants.get_graph(assistant["assistant_id"])
    assert {"model", "review", "run_tool"} <= {n["id"] for n in drawing["nodes"]}


def test_runs_cancel_during_an_approved_command_leaves_an_idle_answered_thread(
    world: dict[str, Any],
) -> None:
    server: DevServer = world["server"]
    client = server.client()
    tid, _ = paused_thread(client, "run: echo started && sleep 30")
    seen: list[Any] = []
    # The approval's run, streamed in the background: cancelled once the command printed.
    approving = threading.Thread(
        target=lambda: seen.extend(
            client.runs.stream(tid, GRAPH, command=APPROVE, stream_mode=["custom"])
        ),
        daemon=True,
    )
    approving.start()
    session = open_session(Settings(db=str(world["db"]), workspace=str(world["workspace"])))
    try:
        until(
            # The command's own output, not an event that names the command.
            lambda: any(
                p.event == "custom"
                and isinstance(p.data, dict)
                and p.data.get("type") == "tool_output"
                and "started" in p.data.get("text", "")
                for p in list(seen)
            ),
            "output",
        )
        [run_id] = [p.data["run_id"] for p in seen if p.event == "metadata"]
        client.runs.cancel(tid, run_id, wait=True)
        approving.join(30)
        state = until(lambda: idle(client.threads.get_state(tid)), "the thread is idle")
        answer = state["values"]["messages"][-1]
        assert answer["type"] == "tool" and "Stopped by the person after" in answer["content"]
        assert "started" in answer["content"] and not state["interrupts"]
        until(lambda: client.threads.get(tid)["status"] == "idle", "the SDK says idle")
        info = session.view(tid).info
        assert info is not None and info.status == "cancelled" and session.view(tid).pending is None

        # A new message works without `gatehouse resume`.
        client.runs.wait(tid, GRAPH, input={"messages": [{"role": "user", "content": "and now?"}]})
        final = client.threads.get_state(tid)
        assert not final["next"] and final["values"]["messages"][-1]["type"] == "ai"
        assert session.view(tid).info.status == "completed"
    finally:
        session.close()

    # After a restart both sides still agree.
    server.proc.terminate()
    server.proc.wait(30)
    with langgraph_dev(
        world["home"] / "again", db=world["db"], workspace=world["workspace"]
    ) as again:
        fresh = again.client()
        fresh.threads.create(thread_id=tid, graph_id=GRAPH, if_exists="do_nothing")
        until(lambda: fresh.threads.get(tid)["status"] == "idle", "idle after a restart")
        assert not fresh.threads.get_state(tid)["next"]

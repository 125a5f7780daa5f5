"""Gatehouse on LangGraph Server (issue 9): `langgraph dev` loads the agent through
langgraph.json and the official langgraph-sdk client drives the approval flow.

The server is the in-memory runtime (langgraph-cli[inmem]) on a free local port,
offline: no OpenAI settings (the demo model answers), no tracing, no CLI analytics.
It runs in a temp folder (its `.langgraph_api/` state lands there) on the
project's langgraph.json with its relative paths resolved against the project root.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from tests.support.langgraph_dev import GRAPH, langgraph_dev

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("langgraph-dev")
    workspace = home / "workspace"
    workspace.mkdir()
    with langgraph_dev(home, db=home / "gatehouse.db", workspace=workspace) as dev:
        yield {
            "url": dev.url,
            "workspace": workspace,
            "log": dev.log,
            "db": home / "gatehouse.db",
            "headers": dev.headers,
        }


def stream(client: Any, thread_id: str, **kwargs: Any) -> list[tuple[str, Any]]:
    parts = client.runs.stream(thread_id, GRAPH, stream_mode=["updates", "values"], **kwargs)
    out = [(p.event, p.data) for p in parts]
    errors = [data for event, data in out if event == "error"]
    assert not errors, errors
    return out


def interrupts_of(parts: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for event, data in parts:
        if event == "updates" and isinstance(data, dict) and "__interrupt__" in data:
            found += data["__interrupt__"]
    return found


def messages(client: Any, thread_id: str) -> list[dict[str, Any]]:
    return client.threads.get_state(thread_id)["values"]["messages"]


def test_approve_a_write_through_the_sdk(server: dict[str, Any]) -> None:
    client = get_sync_client(url=server["url"], headers=server["headers"])
    thread = client.threads.create()
    tid = thread["thread_id"]

    parts = stream(
        client, tid, input={"messages": [{"role": "user", "content": "write todo.md: buy milk"}]}
    )
    [interrupt] = interrupts_of(parts)
    request = interrupt["value"]
    # The HITLRequest the LangChain ecosystem speaks (Agent Chat UI, HumanInTheLoopMiddleware).
    [action] = request["action_requests"]
    assert action["name"] == "write_file" and action["args"]["path"] == "todo.md"
    assert request["review_configs"][0]["action_name"] == "write_file"
    assert "approve" in request["review_configs"][0]["allowed_decisions"]
    assert not (server["workspace"] / "todo.md").exists(), "nothing runs before the yes"

    state = client.threads.get_state(tid)
    assert state["next"] and state["interrupts"][0]["id"] == interrupt["id"]
    assert client.threads.get(tid)["status"] == "interrupted"

    # Exactly what Agent Chat UI sends back: {"decisions": [one]}.
    stream(client, tid, command={"resume": {"decisions": [{"type": "approve"}]}})
    final = client.threads.get_state(tid)
    assert not final["next"] and not final["interrupts"]
    msgs = final["values"]["messages"]
    tool_results = [m for m in msgs if m["type"] == "tool"]
    assert len(tool_results) == 1 and tool_results[0]["status"] != "error"
    assert msgs[-1]["type"] == "ai" and msgs[-1]["content"]
    # Token usage is where LangChain puts it, also when read back through the server.
    usage = msgs[-1]["usage_metadata"]
    assert (
        usage
        and usage["total_tokens"] > 0
        and "usage_metadata" not in msgs[-1]["additional_kwargs"]
    )
    assert (server["workspace"] / "todo.md").read_text().strip() == "buy milk"
    assert client.threads.get(tid)["status"] == "idle"
    # The server kept the thread in Gatehouse's own database (its checkpointer).
    from gatehouse.graph.store import open_storage

    storage = open_storage(str(server["db"]))
    try:
        saved = storage.checkpointer.get_tuple(
            {"configurable": {"thread_id": tid, "checkpoint_ns": ""}}
        )
        assert (
            saved is not None
            and saved.config["configurable"]["checkpoint_id"]
            == final["checkpoint"]["checkpoint_id"]
        )
    finally:
        storage.close()


def test_edit_and_reject_two_gated_calls(server: dict[str, Any]) -> None:
    client = get_sync_client(url=server["url"], headers=server["headers"])
    tid = client.threads.create()["thread_id"]
    parts = stream(
        client,
        tid,
        input={"messages": [{"role": "user", "content": "write a.md: x then write b.md: y"}]},
    )
    [interrupt] = interrupts_of(parts)  # one interrupt for the whole model turn
    actions = interrupt["value"]["action_requests"]
    assert [(a["name"], a["args"]["path"]) for a in actions] == [
        ("write_file", "a.md"),
        ("write_file", "b.md"),
    ]

    # A wrong answer (one decision for two calls) is refused and changes nothing.
    bad = client.runs.stream(
        tid,
        GRAPH,
        command={"resume": {"decisions": [{"type": "approve"}]}},
        stream_mode=["updates"],
    )
    assert any(p.event == "error" for p in bad)
    assert client.threads.get_state(tid)["interrupts"][0]["id"] == interrupt["id"]
    assert not (server["workspace"] / "a.md").exists()

    answer = {
        "decisions": [
            {
                "type": "edit",
                "edited_action": {
                    "name": "write_file",
                    "args": {"path": "a.md", "content": "edited"},
                },
            },
            {"type": "reject", "message": "no b today"},
        ]
    }
    stream(client, tid, command={"resume": answer})
    final = client.threads.get_state(tid)
    assert not final["next"] and not final["interrupts"]
    results = {m["tool_call_id"]: m for m in final["values"]["messages"] if m["type"] == "tool"}
    assert len(results) == 2
    by_path = {}
    calls = [
        c
        for m in final["values"]["messages"]
        if m["type"] == "ai"
        for c in m.get("tool_calls") or []
    ]
    for call in calls:
        by_path[call["args"]["path"]] = results[call["id"]]
    assert "changed the arguments" in by_path["a.md"]["content"]
    assert by_path["b.md"]["status"] == "error" and "no b today" in by_path["b.md"]["content"]
    assert (server["workspace"] / "a.md").read_text() == "edited"
    assert not (server["workspace"] / "b.md").exists()


def test_langgraph_json_loads_dot_env_when_present_not_the_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["env"] == ".env"
    assert config["checkpointer"]["path"] == "gatehouse.graph.service.server.checkpointer"
    from gatehouse.graph.service.config import load_env_file

    monkeypatch.delenv("GATEHOUSE_TEST_FROM_DOTENV", raising=False)
    monkeypatch.setenv("GATEHOUSE_TEST_ALREADY_SET", "from the environment")
    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "# a comment\nexport GATEHOUSE_TEST_FROM_DOTENV='quoted value'\nGATEHOUSE_TEST_ALREADY_SET=from the file\n"
    )
    load_env_file(dotenv)
    load_env_file(tmp_path / "missing.env")  # no file: nothing happens
    assert os.environ["GATEHOUSE_TEST_FROM_DOTENV"] == "quoted value"
    assert os.environ["GATEHOUSE_TEST_ALREADY_SET"] == "from the environment"


def test_a_thread_deleted_through_the_server_is_gone_everywhere(server: dict[str, Any]) -> None:
    """DELETE /threads/<id> (Studio's delete) removes the thread from Gatehouse's own
    list too, so the web app and `gatehouse threads` do not show it (and the thread
    sync does not bring it back into the server's list)."""
    from gatehouse import graph

    client = get_sync_client(url=server["url"], headers=server["headers"])
    tid = client.threads.create()["thread_id"]
    stream(client, tid, input={"messages": [{"role": "user", "content": "list files"}]})
    reader = graph.open_reader(str(server["db"]))
    try:
        assert reader.thread(tid) is not None
        client.threads.delete(tid)
        assert reader.thread(tid) is None and not reader.exists(tid)
    finally:
        reader.close()
    listed = [t["thread_id"] for t in client.threads.search(limit=100)]
    assert tid not in listed
    log = server["log"].read_text()
    assert "missing aprune" not in log  # the server knows what pruning does here


def test_prune_deletes_threads_and_refuses_keep_latest(tmp_path: Path) -> None:
    """LangGraph Server expires threads with the checkpointer's `aprune`."""
    import asyncio

    from gatehouse.graph import Settings, open_session
    from gatehouse.graph.store.threaded import ThreadedSaver

    session = open_session(Settings(db=str(tmp_path / "gh.db"), workspace=str(tmp_path)))
    try:
        kept, pruned = (session.send(None, "list files") for _ in range(2))
        kept.collect()
        pruned.collect()
        # As graph/service/server.py builds it: deleting a thread is Storage's.
        storage = session.storage
        saver = ThreadedSaver(storage.checkpointer, delete_thread=storage.delete_thread)
        config = {"configurable": {"thread_id": kept.thread_id, "checkpoint_ns": ""}}
        before = len(list(saver.list(config)))
        with pytest.raises(NotImplementedError, match="DeltaChannel"):
            asyncio.run(saver.aprune([kept.thread_id], strategy="keep_latest"))
        assert len(list(saver.list(config))) == before  # nothing pruned
        asyncio.run(saver.aprune([pruned.thread_id], strategy="delete"))
        assert not session.view(pruned.thread_id).exists
        assert session.view(kept.thread_id).exists and session.view(kept.thread_id).messages
        with pytest.raises(ValueError, match="Unknown prune strategy"):
            saver.prune([kept.thread_id], strategy="everything")
    finally:
        session.close()

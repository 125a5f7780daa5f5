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
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from tests.support.postgres import free_port

ROOT = Path(__file__).resolve().parents[1]
GRAPH = "gatehouse"


def _langgraph_cli() -> str:
    beside = Path(sys.executable).parent / "langgraph"
    found = str(beside) if beside.exists() else shutil.which("langgraph")
    if not found:
        pytest.fail("the langgraph CLI is missing: install langgraph-cli[inmem] (uv sync)")
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("langgraph-dev")
    workspace = home / "workspace"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GATEHOUSE_", "LANGSMITH_", "LANGCHAIN_"))}
    env.update(
        GATEHOUSE_WORKSPACE=str(workspace),
        GATEHOUSE_DB=str(home / "unused.db"),  # the server keeps the threads, not Gatehouse
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        PYTHONUNBUFFERED="1",
    )
    # The project's langgraph.json with its paths made absolute, so the server can run
    # in the temp folder (it keeps its state in `.langgraph_api/` under the cwd).
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["dependencies"] = [str((ROOT / d).resolve()) for d in config["dependencies"]]
    config["graphs"] = {name: str((ROOT / spec).resolve()) for name, spec in config["graphs"].items()}
    if isinstance(config.get("env"), str):
        config["env"] = str((ROOT / config["env"]).resolve())
    (home / "langgraph.json").write_text(json.dumps(config))
    port = free_port()
    log = (home / "server.log").open("w")
    proc = subprocess.Popen(
        [
            _langgraph_cli(), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port),
            "--config", str(home / "langgraph.json"),
        ],
        cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited ({proc.returncode}):\n{(home / 'server.log').read_text()[-4000:]}")
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"langgraph dev never answered /ok:\n{(home / 'server.log').read_text()[-4000:]}")
            time.sleep(0.5)
        yield {"url": url, "workspace": workspace, "log": home / "server.log"}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


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
    client = get_sync_client(url=server["url"])
    thread = client.threads.create()
    tid = thread["thread_id"]

    parts = stream(client, tid, input={"messages": [{"role": "user", "content": "write todo.md: buy milk"}]})
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
    assert usage and usage["total_tokens"] > 0 and "usage_metadata" not in msgs[-1]["additional_kwargs"]
    assert (server["workspace"] / "todo.md").read_text().strip() == "buy milk"
    assert client.threads.get(tid)["status"] == "idle"


def test_edit_and_reject_two_gated_calls(server: dict[str, Any]) -> None:
    client = get_sync_client(url=server["url"])
    tid = client.threads.create()["thread_id"]
    parts = stream(client, tid, input={"messages": [{"role": "user", "content": "write a.md: x then write b.md: y"}]})
    [interrupt] = interrupts_of(parts)  # one interrupt for the whole model turn
    actions = interrupt["value"]["action_requests"]
    assert [(a["name"], a["args"]["path"]) for a in actions] == [("write_file", "a.md"), ("write_file", "b.md")]

    # A wrong answer (one decision for two calls) is refused and changes nothing.
    bad = client.runs.stream(tid, GRAPH, command={"resume": {"decisions": [{"type": "approve"}]}}, stream_mode=["updates"])
    assert any(p.event == "error" for p in bad)
    assert client.threads.get_state(tid)["interrupts"][0]["id"] == interrupt["id"]
    assert not (server["workspace"] / "a.md").exists()

    answer = {
        "decisions": [
            {"type": "edit", "edited_action": {"name": "write_file", "args": {"path": "a.md", "content": "edited"}}},
            {"type": "reject", "message": "no b today"},
        ]
    }
    stream(client, tid, command={"resume": answer})
    final = client.threads.get_state(tid)
    assert not final["next"] and not final["interrupts"]
    results = {m["tool_call_id"]: m for m in final["values"]["messages"] if m["type"] == "tool"}
    assert len(results) == 2
    by_path = {}
    calls = [c for m in final["values"]["messages"] if m["type"] == "ai" for c in m.get("tool_calls") or []]
    for call in calls:
        by_path[call["args"]["path"]] = results[call["id"]]
    assert "changed the arguments" in by_path["a.md"]["content"]
    assert by_path["b.md"]["status"] == "error" and "no b today" in by_path["b.md"]["content"]
    assert (server["workspace"] / "a.md").read_text() == "edited"
    assert not (server["workspace"] / "b.md").exists()


def test_langgraph_json_loads_dot_env_when_present_not_the_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert config["env"] == ".env"
    assert config["checkpointer"]["path"] == "graph.service.server.checkpointer"
    from graph.service.config import load_env_file

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

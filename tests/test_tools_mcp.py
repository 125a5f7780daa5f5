"""MCP tools from a real server subprocess (tests/support/mcp_server.py), over stdio
and streamable HTTP: loaded through langchain-mcp-adapters, callable from the sync
graph, asking by default and obeying the same policy as built-in tools."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from gatehouse.graph import Policy, ScriptedModel, ai, build_graph, tool_call
from gatehouse.graph.protocol.tools import spec_of
from gatehouse.graph.service.config import Settings
from gatehouse.graph.service.toolset import build_tools, close_tools, mcp_errors
from gatehouse.tools.mcp import MCPError, MCPServers

SERVER = str(Path(__file__).parent / "support" / "mcp_server.py")
STDIO = {"transport": "stdio", "command": sys.executable, "args": [SERVER, "stdio"]}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


@pytest.fixture(scope="module")
def stdio_servers() -> Iterator[tuple[MCPServers, dict[str, Any]]]:
    servers = MCPServers({"toys": STDIO}, call_timeout_s=10)
    tools = servers.load(reserved_names={"read_file"})
    yield servers, {t.name: t for t in tools}
    servers.close()


@pytest.fixture(scope="module")
def http_server_url() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, SERVER, "http"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_stdio_tools_load_with_schemas_risks_and_unique_names(stdio_servers: Any) -> None:
    _, tools = stdio_servers
    assert sorted(tools) == ["add", "fail", "shout", "toys_read_file", "whoami"]
    assert tools["add"].args_schema["required"] == ["a", "b"]
    assert "Add two integers." in tools["add"].description and "'toys'" in tools["add"].description
    assert spec_of(tools["add"]).risk == "execute"
    assert spec_of(tools["whoami"]).risk == "read"  # from the server's readOnlyHint


def test_mcp_tools_ask_by_default_and_follow_the_policy(stdio_servers: Any) -> None:
    _, tools = stdio_servers
    default = Policy.from_mapping({})
    for name, t in tools.items():
        assert default.evaluate(name, {}, t, []).mode == "ask", name  # read-only hint or not
    configured = Policy.from_mapping({"whoami": "allow", "fail": "deny"})
    assert configured.evaluate("whoami", {}, tools["whoami"], []).mode == "allow"
    assert configured.evaluate("fail", {"reason": "x"}, tools["fail"], []).mode == "deny"


def test_sync_calls_reuse_one_session(stdio_servers: Any) -> None:
    _, tools = stdio_servers
    assert tools["add"].invoke({"a": 2, "b": 40}) == "42"
    assert tools["toys_read_file"].invoke({"name": "x"}) == "mcp read x"
    first, second = tools["whoami"].invoke({}), tools["whoami"].invoke({})
    assert first == second  # the same server process answered both


def test_tool_errors_are_clear(stdio_servers: Any) -> None:
    _, tools = stdio_servers
    with pytest.raises(MCPError, match="reported an error: .*no stock"):
        tools["fail"].invoke({"reason": "no stock"})


def test_gated_mcp_call_runs_in_the_graph_after_approval(stdio_servers: Any) -> None:
    _, tools = stdio_servers
    script = [
        ai("", tool_call("shout", {"text": "hello"}, "m1"), tool_call("whoami", {}, "m2")),
        "done",
    ]
    graph = build_graph(
        model=ScriptedModel(script=script),
        tools=list(tools.values()),
        checkpointer=InMemorySaver(),
        policy={"whoami": "allow"},
    )
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    for _ in graph.stream(
        {"messages": [("user", "shout")]}, config, stream_mode=["updates", "custom"]
    ):
        pass
    (pending,) = graph.get_state(config).interrupts
    (action,) = pending.value["action_requests"]
    assert (action["name"], action["risk"], action["args"]) == (
        "shout",
        "execute",
        {"text": "hello"},
    )

    for _ in graph.stream(
        Command(resume={"decisions": [{"type": "approve"}]}), config, stream_mode="updates"
    ):
        pass
    results = {
        m.tool_call_id: m
        for m in graph.get_state(config).values["messages"]
        if isinstance(m, ToolMessage)
    }
    assert results["m1"].content == "HELLO" and results["m1"].status == "success"
    assert results["m2"].content.startswith("pid ")


def test_streamable_http_server(http_server_url: str) -> None:
    servers = MCPServers({"remote": {"transport": "streamable_http", "url": http_server_url}})
    try:
        tools = {t.name: t for t in servers.load()}
        assert tools["shout"].invoke({"text": "over http"}) == "OVER HTTP"
        assert (
            Policy.from_mapping({}).evaluate("add", {"a": 1, "b": 2}, tools["add"], []).mode
            == "ask"
        )
    finally:
        servers.close()


def test_a_dead_server_is_reconnected_on_the_next_call() -> None:
    servers = MCPServers({"toys": STDIO}, call_timeout_s=10)
    try:
        tools = {t.name: t for t in servers.load()}
        pid = int(tools["whoami"].invoke({}).split()[1])
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        answers = []
        for _ in range(2):  # the call in flight when it died may fail; the next one reconnects
            try:
                answers.append(tools["whoami"].invoke({}))
            except MCPError as exc:
                answers.append(f"error: {exc}")
        assert answers[-1].startswith("pid ") and answers[-1] != f"pid {pid}"
    finally:
        servers.close()


def test_close_stops_the_stdio_server(tmp_path: Path) -> None:
    servers = MCPServers({"toys": STDIO})
    tools = {t.name: t for t in servers.load()}
    pid = int(tools["whoami"].invoke({}).split()[1])
    assert alive(pid)
    servers.close()
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)
    with pytest.raises(MCPError, match="closed"):
        tools["whoami"].invoke({})


def test_registry_adds_mcp_tools_and_skips_a_broken_server(tmp_path: Path) -> None:
    settings = Settings(
        workspace=str(tmp_path / "ws"),
        mcp_servers={
            "toys": STDIO,
            "broken": {"transport": "stdio", "command": str(tmp_path / "nope"), "args": []},
        },
    )
    try:
        names = [t.name for t in build_tools(settings)]
        assert "add" in names and "read_file" in names and "toys_read_file" in names
        assert len(names) == len(set(names))
        # A second build (a Streamlit rerun) shares the same connections.
        assert [t.name for t in build_tools(settings)] == names
        assert "No such file" in mcp_errors()["broken"]
    finally:
        close_tools()
    assert mcp_errors() == {}

"""The real `ChatOpenAI` client against a local OpenAI-compatible server, end to end.

These tests cover what `ScriptedModel` cannot: the bytes on the wire. Streamed SSE
deltas, tool-call arguments split across chunks, the usage chunk, what the graph
sends back on the next turn, and HTTP errors from the provider.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from gatehouse.graph import build_graph
from gatehouse.tools.files import make_file_tools
from gatehouse.tools.workspace import Workspace
from tests.support.openai_server import FakeOpenAI

pytestmark = pytest.mark.timeout(60)


def make_graph(server: FakeOpenAI, ws: Workspace) -> Any:
    model = ChatOpenAI(
        model="gpt-test", base_url=server.base_url, api_key="test", max_retries=0, stream_usage=True
    )
    return build_graph(model=model, tools=make_file_tools(ws), checkpointer=InMemorySaver())


def new_config() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def run(graph: Any, payload: Any, config: dict[str, Any]) -> dict[str, list[Any]]:
    """Drive one `graph.stream` call and sort what it yields the way a UI would."""
    seen: dict[str, list[Any]] = {"text": [], "call_chunks": [], "interrupts": [], "custom": []}
    for mode, data in graph.stream(payload, config, stream_mode=["messages", "updates", "custom"]):
        if mode == "messages":
            chunk, meta = data
            if meta.get("langgraph_node") == "model" and isinstance(chunk, AIMessageChunk):
                if isinstance(chunk.content, str) and chunk.content:
                    seen["text"].append(chunk.content)
                seen["call_chunks"] += chunk.tool_call_chunks
        elif mode == "updates" and "__interrupt__" in data:
            seen["interrupts"] += [i.value for i in data["__interrupt__"]]
        elif mode == "custom":
            seen["custom"].append(data)
    return seen


def final_message(graph: Any, config: dict[str, Any]) -> AIMessage:
    last = graph.get_state(config).values["messages"][-1]
    assert isinstance(last, AIMessage)
    return last


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


def test_streamed_text_arrives_in_pieces_and_keeps_usage(ws: Workspace) -> None:
    text = "The workspace is empty, so there is nothing to summarise yet."
    script = [{"content": text, "usage": {"prompt_tokens": 42, "completion_tokens": 13}}]
    with FakeOpenAI(script) as server:
        graph, config = make_graph(server, ws), new_config()
        seen = run(graph, {"messages": [("user", "Summarise my notes")]}, config)

    assert len(seen["text"]) > 1
    assert "".join(seen["text"]) == text
    final = final_message(graph, config)
    assert final.content == text
    assert final.usage_metadata is not None
    assert final.usage_metadata["input_tokens"] == 42
    assert final.usage_metadata["output_tokens"] == 13
    assert final.usage_metadata["total_tokens"] == 55
    assert any(
        e.type == "usage" and (e.input_tokens, e.output_tokens, e.total_tokens) == (42, 13, 55)
        for e in seen["custom"]
    )
    request = server.requests[0]
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}


def test_streamed_write_call_pauses_then_writes_after_approval(ws: Workspace) -> None:
    args = {
        "path": "notes/hello.txt",
        "content": 'Hello from the wire.\nSecond line: {braces} "quotes".',
    }
    script = [
        {
            "content": "I'll write it.",
            "tool_calls": [{"id": "call_w1", "name": "write_file", "arguments": args}],
        },
        "Wrote notes/hello.txt for you.",
    ]
    with FakeOpenAI(script) as server:
        graph, config = make_graph(server, ws), new_config()
        seen = run(graph, {"messages": [("user", "Write a hello note")]}, config)

        assert (
            len([c for c in seen["call_chunks"] if c.get("args")]) >= 2
        )  # arguments came in pieces
        assert len(seen["interrupts"]) == 1
        (action,) = seen["interrupts"][0]["action_requests"]
        assert action["name"] == "write_file"
        assert action["args"] == args
        assert action["tool_call_id"] == "call_w1"
        assert not (ws.root / "notes" / "hello.txt").exists()
        assert len(server.requests) == 1

        seen = run(graph, Command(resume={"decisions": [{"type": "approve"}]}), config)

    assert seen["interrupts"] == []
    assert (ws.root / "notes" / "hello.txt").read_text() == args["content"]
    assert len(server.requests) == 2
    follow_up = server.requests[1]
    assistant = [m for m in follow_up["messages"] if m["role"] == "assistant"]
    assert [c["id"] for c in assistant[-1]["tool_calls"]] == ["call_w1"]
    (tool,) = tool_messages(follow_up)
    assert tool["tool_call_id"] == "call_w1"
    assert "wrote" in tool["content"]
    assert final_message(graph, config).content == "Wrote notes/hello.txt for you."


def test_a_big_file_streamed_token_by_token_is_merged_once_and_written_whole(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 54 KB `write_file` whose arguments arrive in ~2,200 pieces: the approval shows
    them whole and the file is written whole. The chunks are merged once per reply,
    not into the sum so far at every chunk (quadratic: ~6 s of CPU for this reply)."""
    import gatehouse.graph.agent.model_node as model_node

    merges: list[int] = []
    merge = model_node.add_ai_message_chunks

    def counting(first: Any, *rest: Any) -> Any:
        merges.append(len(rest) + 1)
        return merge(first, *rest)

    monkeypatch.setattr(model_node, "add_ai_message_chunks", counting)
    args = {"path": "big.md", "content": "lorem ipsum dolor sit amet\n" * 2000}
    script = [
        {
            "content": "Writing it.",
            "args_chars": 25,
            "tool_calls": [{"id": "call_big", "name": "write_file", "arguments": args}],
        },
        "Done.",
    ]
    with FakeOpenAI(script) as server:
        graph, config = make_graph(server, ws), new_config()
        seen = run(graph, {"messages": [("user", "Write the big file")]}, config)
        assert len([c for c in seen["call_chunks"] if c.get("args")]) > 2000
        (action,) = seen["interrupts"][0]["action_requests"]
        assert action["args"] == args
        assert len(merges) == 1 and merges[0] > 2000  # one merge of every chunk
        run(graph, Command(resume={"decisions": [{"type": "approve"}]}), config)
    assert (ws.root / "big.md").read_text() == args["content"]


def test_free_read_with_text_runs_without_pausing(ws: Workspace) -> None:
    (ws.root / "todo.txt").write_text("- buy milk\n- call Ada\n")
    script = [
        {
            "content": "Let me look at your list.",
            "tool_calls": [
                {"id": "call_r1", "name": "read_file", "arguments": {"path": "todo.txt"}}
            ],
        },
        "You have two things to do: buy milk and call Ada.",
    ]
    with FakeOpenAI(script) as server:
        graph, config = make_graph(server, ws), new_config()
        seen = run(graph, {"messages": [("user", "What's on my todo list?")]}, config)

    assert seen["interrupts"] == []
    assert graph.get_state(config).next == ()
    assert "".join(seen["text"]).startswith("Let me look at your list.")
    (tool,) = tool_messages(server.requests[1])
    assert tool["tool_call_id"] == "call_r1"
    assert "call Ada" in tool["content"]
    assert (
        final_message(graph, config).content == "You have two things to do: buy milk and call Ada."
    )


def test_unparseable_arguments_next_to_a_good_call_become_an_error_the_model_sees(
    ws: Workspace,
) -> None:
    script = [
        {
            "content": "Looking around.",
            "tool_calls": [
                {"id": "call_ok", "name": "list_files", "arguments": {}},
                {"id": "call_bad", "name": "read_file", "arguments": "not json at all"},
            ],
        },
        "Sorry, one of my tool calls was malformed.",
    ]
    with FakeOpenAI(script) as server:
        graph, config = make_graph(server, ws), new_config()
        seen = run(graph, {"messages": [("user", "Read my notes")]}, config)

    assert seen["interrupts"] == []
    assert len(server.requests) == 2  # the server also checks every call got its tool message
    answers = {m["tool_call_id"]: m["content"] for m in tool_messages(server.requests[1])}
    assert "not a valid JSON object" in answers["call_bad"]
    assert answers["call_ok"] == "(empty folder)"
    assert final_message(graph, config).content == "Sorry, one of my tool calls was malformed."


def test_unparseable_arguments_alone_become_an_error_the_model_sees(ws: Workspace) -> None:
    script = [
        {"tool_calls": [{"id": "call_bad", "name": "read_file", "arguments": "not json at all"}]},
        "Sorry, my tool call was malformed.",
    ]
    with FakeOpenAI(script) as server:
        graph, config = make_graph(server, ws), new_config()
        seen = run(graph, {"messages": [("user", "Read my notes")]}, config)

    assert seen["interrupts"] == []
    assert graph.get_state(config).next == ()
    assert len(server.requests) == 2
    (tool,) = tool_messages(server.requests[1])
    assert tool["tool_call_id"] == "call_bad"
    assert "not a valid JSON object" in tool["content"]
    assert final_message(graph, config).content == "Sorry, my tool call was malformed."


def test_lenient_partial_json_is_reported_as_invalid(ws: Workspace) -> None:
    (ws.root / "todo.txt").write_text("secret plans\n")
    script = [
        {"tool_calls": [{"id": "call_bad", "name": "read_file", "arguments": "{bad"}]},
        "Done.",
    ]
    with FakeOpenAI(script) as server:
        graph, config = make_graph(server, ws), new_config()
        run(graph, {"messages": [("user", "Read my notes")]}, config)

    (tool,) = tool_messages(server.requests[1])
    assert "not a valid JSON object" in tool["content"]


def test_arguments_that_stop_mid_object_mark_the_reply_cut_off_even_with_a_finish_reason(
    ws: Workspace,
) -> None:
    # What a proxy that closes a broken stream itself (finish_reason, [DONE]) leaves.
    (ws.root / "todo.txt").write_text("secret plans\n")
    script = [
        {
            "tool_calls": [
                {"id": "call_bad", "name": "read_file", "arguments": '{"path": "todo.txt"'}
            ]
        }
    ]
    with FakeOpenAI(script) as server:
        graph, config = make_graph(server, ws), new_config()
        seen = run(graph, {"messages": [("user", "Read my notes")]}, config)

    assert len(server.requests) == 1  # the run stops: asking again is the person's call
    values = graph.get_state(config).values
    assert values["stop_kind"] == "cut_off"
    cut = next(m for m in values["messages"] if isinstance(m, AIMessage))
    assert cut.additional_kwargs["gatehouse_cut_off"] is True and cut.tool_calls == []
    assert "secret plans" not in json.dumps(seen, default=str)


@pytest.mark.parametrize(
    ("status", "error"), [(500, openai.InternalServerError), (429, openai.RateLimitError)]
)
def test_provider_error_raises_and_the_thread_can_continue(
    ws: Workspace, status: int, error: type[Exception]
) -> None:
    failed: list[int] = []

    def flaky(request: dict[str, Any]) -> dict[str, Any] | str:
        if not failed:
            failed.append(status)
            return {"status": status, "content": "upstream is having a bad day"}
        return "Back online: here is your answer."

    with FakeOpenAI([flaky]) as server:
        graph, config = make_graph(server, ws), new_config()
        with pytest.raises(error, match="upstream is having a bad day"):
            run(graph, {"messages": [("user", "Hello?")]}, config)
        assert graph.get_state(config).next == ("model",)

        seen = run(graph, None, config)

    assert len(server.requests) == 2
    assert server.requests[1]["messages"] == server.requests[0]["messages"]
    assert "".join(seen["text"]) == "Back online: here is your answer."
    messages = graph.get_state(config).values["messages"]
    assert [type(m).__name__ for m in messages] == ["HumanMessage", "AIMessage"]
    assert final_message(graph, config).content == "Back online: here is your answer."
    assert not any(isinstance(m, ToolMessage) for m in messages)

"""LangChain's stock fake chat models (`GenericFakeChatModel`,
`FakeMessagesListChatModel`) as the agent's model: through `build_graph`, the
Session `gatehouse` opens from `model_factory`, and the terminal client with --json.

As shipped they have no `bind_tools`: a clear error naming the class and what to do
(or a graph with no tools just runs). With `bind_tools` added, `GenericFakeChatModel`
streams only the text of a message (its tool calls are lost): it is asked without
streaming, for the true reason, and no streamed attempt uses up its next message.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from gatehouse.graph import build_graph
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.errors import ConfigError
from gatehouse.graph.service.app import open_session
from gatehouse.graph.service.config import Settings

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parent.parent


def settings(tmp_path: Path, factory: str) -> Settings:
    return Settings(
        db=str(tmp_path / "gh.db"),
        workspace=str(tmp_path / "ws"),
        model_factory=f"tests.support.fake_models:{factory}",
    )


@pytest.mark.parametrize(
    ("factory", "cls"),
    [("generic_fake", "GenericFakeChatModel"), ("messages_list_fake", "FakeMessagesListChatModel")],
)
def test_a_stock_fake_without_bind_tools_gets_an_error_naming_it_and_what_to_do(
    tmp_path: Path, factory: str, cls: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        open_session(settings(tmp_path, factory))
    message = str(raised.value)
    assert cls in message and "bind_tools" in message and "write_file" in message
    assert "ScriptedModel" in message  # what to do instead


def test_a_stock_fake_runs_when_there_are_no_tools_to_bind() -> None:
    graph = build_graph(
        model=GenericFakeChatModel(messages=iter([AIMessage("Hello there.")])),
        tools=[],
        checkpointer=InMemorySaver(),
    )
    out = graph.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t1"}})
    assert out["messages"][-1].content == "Hello there."


def test_generic_fake_with_bind_tools_keeps_its_tool_calls_and_its_next_message(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="gatehouse.model"):
        session = open_session(settings(tmp_path, "tooling_fake"))
        try:
            events = session.send(None, "write my notes").collect()
            thread_id = events[0].thread_id
            assert (
                isinstance(events[-1], ev.RunFinished) and events[-1].status == "awaiting_approval"
            )
            (approval,) = [e for e in events if isinstance(e, ev.ApprovalRequired)]
            assert approval.request["action_requests"][0]["args"] == {
                "path": "notes.md",
                "content": "buy milk\n",
            }
            done = session.resume(thread_id, {"decisions": [{"type": "approve"}]}).collect()
        finally:
            session.close()
    assert isinstance(done[-1], ev.RunFinished) and done[-1].status == "completed"
    # The second message answered the second call: nothing was used up by a failed stream.
    assert "".join(e.text for e in done if isinstance(e, ev.TextDelta)) == "Written."
    assert (tmp_path / "ws" / "notes.md").read_text() == "buy milk\n"
    logged = [r.getMessage() for r in caplog.records]
    assert any("GenericFakeChatModel's stream drops tool calls" in m for m in logged)
    assert not any("answered a streaming request without streaming" in m for m in logged)


def test_the_terminal_prints_the_error_as_json_on_stdout(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GATEHOUSE_"))}
    env.update(
        GATEHOUSE_DB=str(tmp_path / "gh.db"),
        GATEHOUSE_WORKSPACE=str(tmp_path / "ws"),
        PYTHONPATH=str(ROOT),
        GATEHOUSE_MODEL_FACTORY="tests.support.fake_models:generic_fake",
    )
    script = Path(sys.executable).parent / "gatehouse"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "gatehouse.ui.term.cli"]
    result = subprocess.run(
        [*cmd, "send", "hi", "--json"],
        env=env,
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    out = json.loads(result.stdout)
    assert (
        "GenericFakeChatModel" in out["error"]
        and "bind_tools" in out["error"]
        and out["exit_code"] == 2
    )

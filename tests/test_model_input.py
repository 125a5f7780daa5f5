"""What the model is handed (graph/agent/model_call.py `chat_input`): a chat model gets
the history as a prompt value, which LangChain reads as it is (a list it converts message
by message, ~1 ms a call at 1,000 messages); anything else standing in for a model gets
the list, as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import chat_models
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableLambda

from gatehouse.graph import ScriptedModel, Session, build_graph
from gatehouse.graph.store import open_storage
from tests.test_builtin_hooks import POLICY, TOOLS


class NotAChatModel:
    """Something with `bind_tools` that is not a LangChain chat model: a Runnable that
    answers "ok" and keeps what it was given."""

    def __init__(self) -> None:
        self.given: list[Any] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        def answer(value: Any) -> AIMessage:
            self.given.append(value)
            return AIMessage("ok")

        return RunnableLambda(answer)


def session_with(model: Any, tmp_path: Path) -> Session:
    storage = open_storage(str(tmp_path / "db"))
    graph = build_graph(model=model, tools=TOOLS, checkpointer=storage.checkpointer, policy=POLICY)
    return Session(graph, storage, TOOLS)


def test_a_chat_model_gets_the_history_without_a_conversion_per_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    converted: list[int] = []
    real = chat_models.convert_to_messages

    def convert_to_messages(messages: Any) -> Any:
        converted.append(len(messages))
        return real(messages)

    monkeypatch.setattr(chat_models, "convert_to_messages", convert_to_messages)
    calls: list[list[BaseMessage]] = []

    def answer(messages: list[BaseMessage]) -> str:
        calls.append(list(messages))
        return "ok"

    session = session_with(ScriptedModel(script=[answer, answer]), tmp_path)
    for text in ("first", "second"):
        run = session.send("t", text)
        run.collect()
        assert run.status == "completed"
    assert [m.content for m in calls[-1] if m.type != "system"] == ["first", "ok", "second"]
    assert converted == []
    session.close()


def test_a_runnable_standing_in_for_a_model_still_gets_a_list(tmp_path: Path) -> None:
    model = NotAChatModel()
    session = session_with(model, tmp_path)
    run = session.send("t", "hello")
    run.collect()
    assert run.status == "completed"
    assert isinstance(model.given[-1], list)
    assert [m.content for m in model.given[-1] if isinstance(m, HumanMessage)] == ["hello"]
    session.close()

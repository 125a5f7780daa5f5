"""LangChain's stock fake chat models, as `model_factory` targets for the CLI tests
(tests/test_fake_chat_models.py): as they ship, and with a `bind_tools` added."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage

WRITE_CALL = {
    "name": "write_file",
    "args": {"path": "notes.md", "content": "buy milk\n"},
    "id": "call_w1",
}


class ToolingFake(GenericFakeChatModel):
    """`GenericFakeChatModel` with the `bind_tools` it lacks (its replies carry their calls)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolingFake:
        return self


def generic_fake() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=iter([AIMessage("Hello.")]))


def messages_list_fake() -> FakeMessagesListChatModel:
    return FakeMessagesListChatModel(responses=[AIMessage("Hello.")])


def tooling_fake() -> ToolingFake:
    return ToolingFake(
        messages=iter([AIMessage("", tool_calls=[WRITE_CALL]), AIMessage("Written.")])
    )

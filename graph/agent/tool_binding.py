"""Offering the tools to the chat model (`bind_tools`), with an error a person can
act on when the model cannot take them.

LangChain's `BaseChatModel.bind_tools` raises a bare `NotImplementedError`; its stock
fakes (`GenericFakeChatModel`, `FakeMessagesListChatModel`) and many small wrappers
never override it. A graph with no tools never asks (the model runs as it is).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.tools import BaseTool

from graph.protocol.errors import ConfigError


def bind_tools(model: Any, tools: Sequence[BaseTool]) -> Any:
    """`model.bind_tools(tools)`, or a `ConfigError` that names the model's class and
    what to do when it has none."""
    if not tools:
        return model
    try:
        return model.bind_tools(list(tools))
    except NotImplementedError:
        name = type(model).__name__
        raise ConfigError(
            f"the chat model {name} cannot be given tools: it does not implement bind_tools "
            f"(Gatehouse has {len(tools)} tools to offer it: {', '.join(t.name for t in tools)}). "
            f"Use a chat model that supports tool calling, give {name} a bind_tools method (a subclass whose "
            "bind_tools returns the model itself is enough for a scripted model whose replies carry their own "
            "tool calls; graph.service.testing.ScriptedModel does that), or build the graph with no tools."
        ) from None

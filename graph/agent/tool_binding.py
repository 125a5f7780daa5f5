"""Offering the tools to the chat model (`bind_tools`), with an error a person can
act on when the model cannot take them.

LangChain's `BaseChatModel.bind_tools` raises a bare `NotImplementedError`; its stock
fakes (`GenericFakeChatModel`, `FakeMessagesListChatModel`) and many small wrappers
never override it. A graph with no tools never asks (the model runs as it is).

`definitions` (the service passes tools/definitions.py's, made once and kept on disk)
gives the model each tool's OpenAI-format definition, which every LangChain chat model
takes as it takes the tool, instead of the tools, from which LangChain would make the
same definitions again at every open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.tools import BaseTool

from graph.protocol.errors import ConfigError

ToolDefinitions = Callable[[Sequence[BaseTool]], list[dict[str, Any]]]


def bind_tools(
    model: Any, tools: Sequence[BaseTool], definitions: ToolDefinitions | None = None
) -> Any:
    """`model.bind_tools(tools)` (or the tools' `definitions`), or a `ConfigError`
    that names the model's class and what to do when it has none."""
    if not tools:
        return model
    try:
        return model.bind_tools(definitions(tools) if definitions else list(tools))
    except NotImplementedError:
        name = type(model).__name__
        raise ConfigError(
            f"the chat model {name} cannot be given tools: it does not implement bind_tools "
            f"(Gatehouse has {len(tools)} tools to offer it: {', '.join(t.name for t in tools)}). "
            f"Use a chat model that supports tool calling, give {name} a bind_tools method (a subclass whose "
            "bind_tools returns the model itself is enough for a scripted model whose replies carry their own "
            "tool calls; graph.service.testing.ScriptedModel does that), or build the graph with no tools."
        ) from None

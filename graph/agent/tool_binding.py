"""Offering the tools to the chat model (`bind_tools`), with an error a person can act
on when it cannot take them (LangChain's bare `NotImplementedError`: its stock fakes
and many wrappers never override it). A graph with no tools never asks.
`definitions` (tools/definitions.py's, kept on disk) gives each tool's OpenAI-format
definition instead of the tool, so LangChain does not make it again at every open.
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

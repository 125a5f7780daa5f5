"""`bind_tools`, with an error a person can act on when the model cannot take tools
(LangChain's bare `NotImplementedError`); `definitions` gives the tools' stored
OpenAI-format definitions, so LangChain does not make them again at every open.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.tools import BaseTool

from gatehouse.graph.protocol.errors import ConfigError

ToolDefinitions = Callable[[Sequence[BaseTool]], list[dict[str, Any]]]


def bind_tools(
    model: Any, tools: Sequence[BaseTool], definitions: ToolDefinitions | None = None
) -> Any:
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
            "tool calls; gatehouse.graph.service.testing.ScriptedModel does that), or build the graph with no tools."
        ) from None

"""What a front end shows about a tool before a call runs: its one-line summary,
whether edited arguments would pass its schema, and its preview of a call."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph

from graph.agent.compiled import parts_of
from graph.agent.review import args_problem
from graph.protocol.tools import spec_of

__all__ = ["ToolInfo"]


class ToolInfo:
    def __init__(
        self, agent: CompiledStateGraph[Any, Any, Any, Any], tools: Sequence[BaseTool]
    ) -> None:
        parts = parts_of(agent)
        # The compiled agent's own (the built-in read_tool_output included) when known.
        self.tools: Mapping[str, BaseTool] = (
            parts.tools if parts is not None else {t.name: t for t in tools}
        )

    def check_args(self, tool_name: str, args: dict[str, Any]) -> str | None:
        """Why `args` would not pass the tool's schema, or None."""
        tool = self.tools.get(tool_name)
        if tool is None:
            return f"no tool named {tool_name!r}"
        return args_problem(tool, args)

    def tool_summary(self, tool_name: str) -> str:
        """The first line of the tool's description, or "" for an unknown tool."""
        tool = self.tools.get(tool_name)
        return (tool.description or "").strip().split("\n", 1)[0] if tool is not None else ""

    def preview(self, tool_name: str, args: dict[str, Any]) -> str | None:
        """The tool's preview of a call (e.g. a diff); None when it has none or it fails."""
        tool = self.tools.get(tool_name)
        render = spec_of(tool).preview if tool is not None else None
        if render is None:
            return None
        try:
            return render(dict(args))
        except Exception:  # noqa: BLE001 - a preview is a courtesy, never an error
            return None

"""`gatehouse_tool`: a typed, documented function as a LangChain tool that carries
Gatehouse's facts about it (a `ToolSpec`, graph/protocol/tools.py): the risk an
approval card shows, the default policy, idempotency, the argument policy
conditions match on, and an optional preview of what the call will change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, tool

from graph.protocol.tools import DefaultMode, Preview, Risk, ToolSpec, attach_spec, spec_of

__all__ = ["ToolSpec", "attach_spec", "gatehouse_tool", "spec_of"]


def gatehouse_tool(
    func: Callable[..., Any] | None = None,
    *,
    risk: Risk,
    default: DefaultMode | None = None,
    idempotent: bool | None = None,
    match_arg: str | None = None,
    preview: Preview | None = None,
    auto_allow: Callable[[dict[str, Any]], bool] | None = None,
    compound: Callable[[dict[str, Any]], bool] | None = None,
    describe: Callable[[dict[str, Any]], str] | None = None,
    name: str | None = None,
) -> Any:
    """Turn a typed, documented function into a LangChain tool with a `ToolSpec`.

    The docstring is what the model reads; the signature is the argument schema.
    `default` follows the risk when omitted: `read` runs freely, the rest asks.
    """

    def wrap(f: Callable[..., Any]) -> BaseTool:
        built = tool(name or f.__name__, parse_docstring=False)(f) if name else tool(f)
        attach_spec(
            built,
            ToolSpec(
                risk=risk,
                default=default or ("allow" if risk == "read" else "ask"),
                idempotent=(risk == "read") if idempotent is None else idempotent,
                match_arg=match_arg,
                preview=preview,
                auto_allow=auto_allow,
                compound=compound,
                describe=describe,
            ),
        )
        return built

    return wrap(func) if func is not None else wrap

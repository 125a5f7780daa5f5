"""What Gatehouse knows about a tool beyond its LangChain schema.

Every tool is an ordinary LangChain `BaseTool`; Gatehouse keeps its own facts in
`tool.metadata["gatehouse"]` as a `ToolSpec`: the risk an approval card shows, the
default policy (read-only tools run freely, everything else asks), whether running
it twice is harmless, which argument policy conditions match on, an optional
preview of what the call will change, and an optional one-line statement of what
the call may touch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.tools import BaseTool, tool

Risk = Literal["read", "write", "execute", "network"]
DefaultMode = Literal["allow", "ask"]
Preview = Callable[[dict[str, Any]], str | None]


@dataclass(frozen=True)
class ToolSpec:
    risk: Risk
    default: DefaultMode
    # Safe to run again after a crash left its outcome unknown.
    idempotent: bool = False
    # The argument that policy conditions and "always allow" patterns match on.
    match_arg: str | None = None
    # Shows the approver what the call will change (a diff, the first lines ...).
    preview: Preview | None = None
    # For tools that ask: lets a provably harmless call run freely (a read-only SQL
    # statement, an allow-listed command). Any exception counts as "not safe".
    auto_allow: Callable[[dict[str, Any]], bool] | None = None
    # True when the call does more than its `match_arg` text shows at a glance (a
    # shell line with `;` or a pipe): glob/regex "allow" rules and pattern grants
    # never cover such a call, so `ls*` cannot let `ls; rm -rf x` through.
    compound: Callable[[dict[str, Any]], bool] | None = None
    # The approval card's first line for a call: exactly what it may touch
    # ("sandboxed · workspace writable · no network", "NOT sandboxed · …").
    describe: Callable[[dict[str, Any]], str] | None = None


# Tools that come from elsewhere (MCP servers, user code) ask by default.
UNKNOWN_SPEC = ToolSpec(risk="execute", default="ask")


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


def attach_spec(t: BaseTool, spec: ToolSpec) -> BaseTool:
    t.metadata = {**(t.metadata or {}), "gatehouse": spec}
    return t


def spec_of(t: BaseTool) -> ToolSpec:
    spec = (t.metadata or {}).get("gatehouse")
    return spec if isinstance(spec, ToolSpec) else UNKNOWN_SPEC

"""What a tool tells Gatehouse about itself, and how it shows progress while it runs.

Every tool is an ordinary LangChain `BaseTool`; Gatehouse keeps its own facts in
`tool.metadata["gatehouse"]` as a `ToolSpec`: the risk an approval card shows, the
default policy (read-only tools run freely, everything else asks), whether running
it twice is harmless, which argument policy conditions match on, and an optional
preview of what the call will change.

`stream_output(text)` is how a tool shows a line of progress (shell output): the
agent points it at the run's event stream while the tool runs; elsewhere (a direct
call in a script or a test) it goes nowhere. `stop_requested()` tells a long-running
tool that the person pressed Stop: it should end its work (kill its process) at once.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

# "delete" is a write that cannot be undone by writing again (shown above "write").
Risk = Literal["read", "write", "delete", "execute", "network"]
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
    # The canonical form of the arguments rules and grants match (a workspace-relative
    # path with `..` and symlinks resolved, a normalized URL): {arg: canonical text,
    # or None for one that has none, such as a path that leaves the workspace}. Such
    # an argument matches no rule and no grant (the tool refuses it when it runs).
    canonical: Callable[[dict[str, Any]], dict[str, str | None]] | None = None
    # The approval card's first line for a call: exactly what it may touch
    # ("sandboxed · workspace writable · no network", "NOT sandboxed · …").
    describe: Callable[[dict[str, Any]], str] | None = None


# Tools that come from elsewhere (MCP servers, user code) ask by default.
UNKNOWN_SPEC = ToolSpec(risk="execute", default="ask")


def attach_spec(tool: Any, spec: ToolSpec) -> Any:
    """Record `spec` on a LangChain tool (in its metadata); returns the tool."""
    tool.metadata = {**(tool.metadata or {}), "gatehouse": spec}
    return tool


def spec_of(tool: Any) -> ToolSpec:
    spec = (getattr(tool, "metadata", None) or {}).get("gatehouse")
    return spec if isinstance(spec, ToolSpec) else UNKNOWN_SPEC


# Where a running tool's progress lines go: set by the agent around each call.
_output_sink: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "gatehouse_tool_output", default=None
)


def stream_output(text: str) -> None:
    """For tools: show a line of progress while the tool runs (e.g. shell output)."""
    sink = _output_sink.get()
    if sink is not None:
        sink(text)


# Set while a tool runs: the run's cancel signal (the person pressed Stop).
_stop: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "gatehouse_tool_stop", default=None
)


def stop_requested() -> bool:
    """For tools: whether the person asked the run to stop while this call runs."""
    event = _stop.get()
    return event is not None and event.is_set()


@contextmanager
def stop_on(event: threading.Event | None) -> Iterator[None]:
    """`stop_requested()` inside this block follows `event`."""
    token = _stop.set(event)
    try:
        yield
    finally:
        _stop.reset(token)


@contextmanager
def output_to(sink: Callable[[str], None]) -> Iterator[None]:
    """Send `stream_output` lines of the tool run inside this block to `sink`."""
    token = _output_sink.set(sink)
    try:
        yield
    finally:
        _output_sink.reset(token)

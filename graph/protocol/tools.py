"""What a tool tells Gatehouse about itself, and how it shows progress while it runs.

Every tool is a LangChain `BaseTool` whose `metadata["gatehouse"]` is a `ToolSpec`:
its risk, default policy, whether running it twice is harmless, the argument policy
matches on, and an optional preview. `stream_output(text)` shows a line of progress
(it goes nowhere outside a run); `stop_requested()` says the person pressed Stop.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
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
    # For tools that ask: a provably harmless call runs freely (read-only SQL, an
    # allow-listed command). Any exception counts as "not safe".
    auto_allow: Callable[[dict[str, Any]], bool] | None = None
    # True when the call does more than its `match_arg` shows (a shell line with `;`):
    # pattern rules and grants never cover it, so `ls*` cannot let `ls; rm -rf x` through.
    compound: Callable[[dict[str, Any]], bool] | None = None
    # The arguments' canonical form for rules and grants (a resolved workspace path, a
    # normalized URL); None for one that has none (it matches no rule and no grant).
    canonical: Callable[[dict[str, Any]], dict[str, str | None]] | None = None
    # The card's first line: what the call may touch ("sandboxed · no network").
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
def _set(var: contextvars.ContextVar[Any], value: Any) -> Iterator[None]:
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def stop_on(event: threading.Event | None) -> AbstractContextManager[None]:
    """`stop_requested()` inside this block follows `event`."""
    return _set(_stop, event)


def output_to(sink: Callable[[str], None]) -> AbstractContextManager[None]:
    """Send `stream_output` lines of the tool run inside this block to `sink`."""
    return _set(_output_sink, sink)

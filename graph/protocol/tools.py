"""What a tool tells Gatehouse about itself (`metadata["gatehouse"]`, a `ToolSpec`),
and for tools: `stream_output(text)` shows progress, `stop_requested()` says Stop.
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
    idempotent: bool = False  # safe to run again after a crash
    match_arg: str | None = None  # what policy conditions and grant patterns match
    preview: Preview | None = None  # what the call will change (a diff ...)
    # For tools that ask: a provably harmless call runs freely (read-only SQL); any
    # exception counts as "not safe".
    auto_allow: Callable[[dict[str, Any]], bool] | None = None
    # The call does more than `match_arg` shows (`ls; rm -rf x`): no pattern covers it.
    compound: Callable[[dict[str, Any]], bool] | None = None
    # Canonical arguments for rules and grants (a resolved path); None: matches none.
    canonical: Callable[[dict[str, Any]], dict[str, str | None]] | None = None
    describe: Callable[[dict[str, Any]], str] | None = None  # what it may touch


# Tools that come from elsewhere (MCP servers, user code) ask by default.
UNKNOWN_SPEC = ToolSpec(risk="execute", default="ask")


def attach_spec(tool: Any, spec: ToolSpec) -> Any:
    tool.metadata = {**(tool.metadata or {}), "gatehouse": spec}
    return tool


def spec_of(tool: Any) -> ToolSpec:
    spec = (getattr(tool, "metadata", None) or {}).get("gatehouse")
    return spec if isinstance(spec, ToolSpec) else UNKNOWN_SPEC


_output_sink: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "gatehouse_tool_output", default=None
)


def stream_output(text: str) -> None:
    """For tools: show a line of progress while the tool runs (e.g. shell output)."""
    sink = _output_sink.get()
    if sink is not None:
        sink(text)


_stop: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "gatehouse_tool_stop", default=None
)


def stop_requested() -> bool:
    """For tools: whether the person asked the run to stop while this call runs."""
    event = _stop.get()
    return event is not None and event.is_set()


@contextmanager
def scoped(var: contextvars.ContextVar[Any], value: Any) -> Iterator[None]:
    """`var` holds `value` inside this block."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


def stop_on(event: threading.Event | None) -> AbstractContextManager[None]:
    """`stop_requested()` inside this block follows `event`."""
    return scoped(_stop, event)


def output_to(sink: Callable[[str], None]) -> AbstractContextManager[None]:
    """Send `stream_output` lines of the tool run inside this block to `sink`."""
    return scoped(_output_sink, sink)

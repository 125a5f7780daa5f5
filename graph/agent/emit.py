"""How the agent's nodes, tools and hooks put events on a run's stream.

Events are the typed `graph.protocol.events` classes, written to LangGraph's
`custom` stream: the Session hands them on as they are, and LangGraph Server clients
receive them as JSON in the `custom` stream mode. Outside a run (a hook or tool
called directly in a test or a script) they go nowhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.config import get_config, get_stream_writer

from graph.protocol.events import _EventBase


def stream_writer() -> Callable[[Any], None]:
    """LangGraph's `custom` stream writer of the current run; a no-op outside a run."""
    try:
        return get_stream_writer()
    except Exception:
        return _discard


def _discard(_: Any) -> None:
    return None


def thread_of(config: Any) -> str:
    return str(((config or {}).get("configurable") or {}).get("thread_id", ""))


def current_thread() -> str:
    """The thread of the run this code is part of ("" outside a run)."""
    try:
        return thread_of(get_config())
    except Exception:
        return ""


def emit(kind: type[_EventBase], **fields: Any) -> None:
    """Put one event of class `kind` on the current run's stream."""
    writer = stream_writer()
    if writer is _discard:
        return
    writer(kind(thread_id=fields.pop("thread_id", None) or current_thread(), **fields))

"""How the agent's nodes, tools and hooks put events on a run's stream, and what a
run's config says about where it comes from (its thread, who decides).

Events are the typed `graph.protocol.events` classes, written to LangGraph's
`custom` stream: LangGraph Server clients receive them as JSON in the `custom` stream
mode. A run the Session drives has its own sink in its context instead (the Session
hands the events on as they are; graph/service/run.py says why). Outside a run
(a hook or tool called directly in a test or a script) they go nowhere.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import get_runtime

from graph.agent.context import RunContext
from graph.protocol.events import _EventBase


def stream_writer() -> Callable[[Any], None]:
    """Where the current run's events go: the Session's sink when the Session drives the
    run, else LangGraph's `custom` stream writer; a no-op outside a run."""
    try:
        runtime = get_runtime()
    except Exception:
        return _discard
    if runtime is None:
        return _discard
    context = runtime.context
    if isinstance(context, RunContext) and context.event_sink is not None:
        return context.event_sink
    return runtime.stream_writer


def _discard(_: Any) -> None:
    return None


def thread_of(config: Any) -> str:
    return str(((config or {}).get("configurable") or {}).get("thread_id", ""))


# Set when LangGraph Server loads the agent (graph/service/server.py): in that process
# every run comes from a server client, whatever its config says.
_SERVED = False


def identity_from_server() -> None:
    """Make every run in this process name LangGraph Server's authenticated user."""
    global _SERVED
    _SERVED = True


def decided_by(config: RunnableConfig) -> dict[str, str | None]:
    """Which front end and who answered. A LangGraph Server run names the server's
    authenticated user (`langgraph_auth_user_id`, which the server writes over any
    client's value) and nothing a client sent: `gatehouse_source` / `gatehouse_actor`
    in a client's `configurable` are ignored there. In-process callers (the Session,
    a raw `graph.invoke`) are trusted: the Session puts its caller in those keys."""
    conf = config.get("configurable") or {}
    if _SERVED or "langgraph_auth_user_id" in conf or "assistant_id" in conf:
        user = conf.get("langgraph_auth_user_id")
        return {"source": "langgraph-server", "actor": str(user) if user else None}
    source = conf.get("gatehouse_source") or "api"
    actor = conf.get("gatehouse_actor")
    return {"source": str(source), "actor": str(actor) if actor else None}


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
    # Unvalidated (`trusted`): the fields were typed where they were made, and a
    # validator is a per-process cost of each kind's first event.
    writer(kind.trusted(thread_id=fields.pop("thread_id", None) or current_thread(), **fields))

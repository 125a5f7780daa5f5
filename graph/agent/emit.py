"""How nodes, tools and hooks put typed events on a run's stream: LangGraph's `custom`
stream, or the sink in the run's context when a Session drives the run (run.py says
why); outside a run nowhere. Also what a run's config says about who decides."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.runtime import get_runtime

from gatehouse.graph.agent.context import context_of
from gatehouse.graph.protocol.events import _EventBase
from gatehouse.graph.protocol.tools import scoped


def stream_writer() -> Callable[[Any], None]:
    try:
        runtime = get_runtime()
    except Exception:
        runtime = None
    if (context := context_of(runtime)) is not None and context.event_sink is not None:
        return context.event_sink
    return _discard if runtime is None else runtime.stream_writer


def _discard(_: Any) -> None:
    return None


def thread_of(config: Any) -> str:
    return str(((config or {}).get("configurable") or {}).get("thread_id", ""))


# Set when LangGraph Server loads the agent: every run comes from a server client.
_SERVED = False


def identity_from_server() -> None:
    """Make every run in this process name LangGraph Server's authenticated user."""
    global _SERVED
    _SERVED = True


# The request's authenticated user, and whether they are not the thread's owner, set by
# the auth handler (an update's config is the client's; a run's VISITOR_KEY is not).
_REQUEST_USER: ContextVar[str | None] = ContextVar("gatehouse_request_user", default=None)
_REQUEST_VISITOR: ContextVar[bool] = ContextVar("gatehouse_request_visitor", default=False)
VISITOR_KEY = "gatehouse_visitor"


def speaking_for(identity: str | None, *, visitor: bool = False) -> None:
    """Name the server's user for this request (`visitor`: not the thread's owner)."""
    _REQUEST_USER.set(identity)
    _REQUEST_VISITOR.set(visitor)


@contextmanager
def as_the_run(config: RunnableConfig) -> Iterator[None]:
    """A state update a run makes itself ("mark as resolved" as a run) is the run's user's."""
    with (
        scoped(_REQUEST_USER, decided_by(config)["actor"]),
        scoped(_REQUEST_VISITOR, visiting(config)),
    ):
        yield


def updated_by(config: RunnableConfig) -> dict[str, str | None]:
    """Who makes a state update: in a server the request's user (never the config)."""
    if _SERVED:
        return {"source": "langgraph-server", "actor": _REQUEST_USER.get()}
    return decided_by(config)


def visiting(config: RunnableConfig | None = None) -> bool:
    """Whether the server user acting is not the thread's owner (a run's or update's)."""
    if not _SERVED:
        return False
    if config is None:
        return _REQUEST_VISITOR.get()
    return bool((config.get("configurable") or {}).get(VISITOR_KEY))


def decided_by(config: RunnableConfig) -> dict[str, str | None]:
    """Which front end and who answered (on LangGraph Server its user, never a client's word)."""
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
    writer = stream_writer()
    if writer is _discard:
        return
    # Unvalidated: typed where made; a validator costs each kind's first event.
    writer(kind.trusted(thread_id=fields.pop("thread_id", None) or current_thread(), **fields))

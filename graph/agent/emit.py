"""How the agent's nodes, tools and hooks put events on a run's stream, and what a
run's config says about where it comes from (its thread, who decides).

Events are the typed `graph.protocol.events` classes, written to LangGraph's
`custom` stream: LangGraph Server clients receive them as JSON in the `custom` stream
mode. A run the Session drives has its own sink in its context instead (the Session
hands the events on as they are; graph/service/run.py says why). Outside a run
(a hook or tool called directly in a test or a script) they go nowhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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


# LangGraph Server's authenticated user for the request being handled, set by the auth
# handler (graph/service/server_auth.py): a state update's config is the client's
# own, so it cannot say who the user is.
_REQUEST_USER: ContextVar[str | None] = ContextVar("gatehouse_request_user", default=None)


_REQUEST_VISITOR: ContextVar[bool] = ContextVar("gatehouse_request_visitor", default=False)
# Set by the server's auth handler on a run by someone who is not the thread's owner
# (an approver of a tool deciding its calls); written over any client's value.
VISITOR_KEY = "gatehouse_visitor"


def speaking_for(identity: str | None, *, visitor: bool = False) -> None:
    """Name the server's authenticated user for the rest of this request (`visitor`:
    not the owner of the thread the request is about)."""
    _REQUEST_USER.set(identity)
    _REQUEST_VISITOR.set(visitor)


@contextmanager
def as_the_run(config: RunnableConfig) -> Iterator[None]:
    """A state update a run makes itself ("mark as resolved" sent as a run) is made by
    the run's user: its config is the server's (written over the client's)."""
    tokens = (
        _REQUEST_USER.set(decided_by(config)["actor"]),
        _REQUEST_VISITOR.set(visiting(config)),
    )
    try:
        yield
    finally:
        _REQUEST_USER.reset(tokens[0])
        _REQUEST_VISITOR.reset(tokens[1])


def updated_by(config: RunnableConfig) -> dict[str, str | None]:
    """Who makes a state update ("mark as resolved"). In a server process: the
    authenticated user of the request, never anything in the update's config (a
    client's `checkpoint` lands there); in-process callers as `decided_by`."""
    if _SERVED:
        return {"source": "langgraph-server", "actor": _REQUEST_USER.get()}
    return decided_by(config)


def visiting(config: RunnableConfig | None = None) -> bool:
    """Whether the server user acting is not the thread's owner: they decide only the
    calls of tools that list them as approvers. A run says so in its config (the auth
    handler's value), a state update in its request."""
    if not _SERVED:
        return False
    if config is None:
        return _REQUEST_VISITOR.get()
    return bool((config.get("configurable") or {}).get(VISITOR_KEY))


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

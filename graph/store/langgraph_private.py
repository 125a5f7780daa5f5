"""LangGraph's private surface, fenced: every name Gatehouse takes from LangGraph that
LangGraph does not promise to keep is named here and nowhere else. `SURFACE` says where
LangGraph keeps each and what breaks without it; tests/test_langgraph_internals.py checks
every row against the installed LangGraph.

Values LangGraph writes into what it stores (channel names, msgpack codes) are copied as
literals, so the readers that start without LangGraph (reader.py, plain.py) can import
them; objects are imported from LangGraph on first use. Imports no Gatehouse module: the
agent and service may import this one module of the store (tests/test_architecture.py).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from langgraph._internal._runnable import RunnableCallable
    from langgraph.channels.binop import _get_overwrite as get_overwrite
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.checkpoint.postgres._internal import get_connection as pg_connection
    from langgraph.checkpoint.serde.types import _DeltaSnapshot as DeltaSnapshot
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph.message import _messages_delta_reducer as messages_delta_reducer

# The objects, imported from LangGraph on first use; the rest of `__all__` follows SURFACE.
__all__ = [
    "DeltaSnapshot",
    "RunnableCallable",
    "get_overwrite",
    "messages_delta_reducer",
    "pg_connection",
]


@dataclass(frozen=True, slots=True)
class Private:
    ours: str  # the name in this module
    theirs: str  # where LangGraph keeps it: "module:attribute" (or "module:Class.name")
    needed_by: str  # what in Gatehouse breaks when it changes


# -- channel names and ids LangGraph writes into checkpoints (langgraph/_internal/_constants.py)
INTERRUPT = "__interrupt__"
ERROR = "__error__"
ERROR_SOURCE_NODE = "__error_source_node__"
RESUME = "__resume__"
NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
TASKS = "__pregel_tasks"
PUSH = "__pregel_push"
START = "__start__"
# `branch:to:<node>`: the channel that triggers a node of a StateGraph.
BRANCH_TO = "branch:to:"
CONFIG_KEY_STRICT_RESUME = "__pregel_strict_resume"
# The saver a parent graph lends a subgraph through the run's config.
CONFIG_KEY_CHECKPOINTER = "__pregel_checkpointer"
# A run's `Runtime`; absent where LangGraph runs a node's routes outside a run (update_state).
CONFIG_KEY_RUNTIME = "__pregel_runtime"
# What Gatehouse's graph overrides (graph/agent/compiled.py): invoke and the server's runs
# go through (a)stream, update_state through (a)bulk_update_state.
ENTRY_POINTS = ("stream", "astream", "bulk_update_state", "abulk_update_state")
# Writes that say what happened to a task: a task with any other write has finished.
CONTROL_WRITES = frozenset({ERROR, ERROR_SOURCE_NODE, INTERRUPT, RESUME})

# -- LangGraph's msgpack extension codes (langgraph.checkpoint.serde.jsonplus)
EXT_CONSTRUCTOR_SINGLE_ARG = 0
EXT_CONSTRUCTOR_POS_ARGS = 1
EXT_CONSTRUCTOR_KW_ARGS = 2
EXT_METHOD_SINGLE_ARG = 3
EXT_PYDANTIC_V1 = 4
EXT_PYDANTIC_V2 = 5
EXT_NUMPY_ARRAY = 6
EXT_DELTA_SNAPSHOT = 7

_C = "langgraph._internal._constants"
_EXT = "langgraph.checkpoint.serde.jsonplus"
_SERDE = "reading threads without LangGraph (plain.py: `gatehouse threads/pending/show`)"
_PG = "langgraph.checkpoint.postgres"
SURFACE: tuple[Private, ...] = (
    *(
        Private(name, f"{_C}:{name}", needed_by)
        for name, needed_by in (
            ("INTERRUPT", "pauses: the index, notifications, ApprovalRequired, the reader"),
            ("ERROR", "the index marks a failed task; a refused answer leaves no trace"),
            ("ERROR_SOURCE_NODE", "the reader tells finished tasks from paused ones"),
            ("RESUME", "a refused answer is deleted from the writes (delta_reads.py)"),
            ("NULL_TASK_ID", "delta_reads.py; the reader applies state updates to the transcript"),
            ("TASKS", "the thread index shows a run with Send tasks due as running"),
            ("PUSH", "the reader lists a step's tasks in LangGraph's order (plain.task_order)"),
            ("CONFIG_KEY_STRICT_RESUME", "an answer to an interrupt not pending is refused"),
            ("CONFIG_KEY_CHECKPOINTER", "an answer's pending check reads get_state's saver"),
            ("CONFIG_KEY_RUNTIME", "a state edit runs the routes after a node without a run"),
        )
    ),
    Private("START", "langgraph.constants:START", "the index shows a run just started as running"),
    Private(
        "BRANCH_TO",
        "langgraph.graph.state:_CHANNEL_BRANCH_TO",
        "the thread index shows a run with a node due as running",
    ),
    Private(
        "ENTRY_POINTS",
        "langgraph.pregel.main:Pregel",
        "every client's entry into the graph (graph/agent/compiled.py): a clear of a paused review "
        "rejects its calls, a late answer is refused with who decided, a raw invoke gets a run context",
    ),
    Private(
        "rebuilt_as",
        "langgraph.pregel.main:Pregel.copy",
        "the compiled graph as Gatehouse's subclass, also in LangGraph Server's copies",
    ),
    Private(
        "CONTROL_WRITES",
        "langgraph.pregel._task_status:CONTROL_WRITES",
        "the reader's pending approvals and transcript follow get_state's task status rules",
    ),
    *(
        Private(name, f"{_EXT}:{name}", _SERDE)
        for name in (
            "EXT_CONSTRUCTOR_SINGLE_ARG",
            "EXT_CONSTRUCTOR_POS_ARGS",
            "EXT_CONSTRUCTOR_KW_ARGS",
            "EXT_METHOD_SINGLE_ARG",
            "EXT_PYDANTIC_V1",
            "EXT_PYDANTIC_V2",
            "EXT_NUMPY_ARRAY",
            "EXT_DELTA_SNAPSHOT",
        )
    ),
    Private(
        "DeltaSnapshot",
        "langgraph.checkpoint.serde.types:_DeltaSnapshot",
        "the savers' cached and materialised messages: cold and warm reads",
    ),
    Private(
        "get_overwrite",
        "langgraph.channels.binop:_get_overwrite",
        "the savers replay a DeltaChannel's writes (an Overwrite resets the messages)",
    ),
    Private(
        "messages_delta_reducer",
        "langgraph.graph.message:_messages_delta_reducer",
        "the messages reducer (graph/agent/message_merge.py) for anything but appends",
    ),
    Private(
        "RunnableCallable",
        "langgraph._internal._runnable:RunnableCallable",
        "run_tool's async form: cancelling a LangGraph Server run stops the tool call",
    ),
    Private(
        "pg_connection",
        f"{_PG}._internal:get_connection",
        "the Postgres saver writes a checkpoint, its head and index row in one transaction",
    ),
    Private(
        "pg_dump_blobs",
        f"{_PG}:PostgresSaver._dump_blobs",
        "the Postgres saver stores channel values as the stock saver does",
    ),
    Private(
        "pg_load_checkpoint_tuple",
        f"{_PG}:PostgresSaver._load_checkpoint_tuple",
        "the Postgres saver reads a checkpoint and the head in one round trip",
    ),
    Private(
        "pg_dump_writes",
        f"{_PG}:PostgresSaver._dump_writes",
        "the Postgres saver stores task writes as the stock saver does",
    ),
    Private(
        "sqlite_has_task_path",
        "langgraph.checkpoint.sqlite:SqliteSaver._has_task_path",
        "the SQLite saver orders writes as LangGraph does on files from before task_path",
    ),
)

_LAZY = {p.ours: p.theirs for p in SURFACE if p.ours in __all__}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = where.split(":")
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


G = TypeVar("G")


def rebuilt_as(compiled: Any, cls: type[G], **attributes: Any) -> G:
    """`compiled` as an instance of its subclass `cls`, with `attributes`, built as
    `Pregel.copy` builds a copy, so copies keep the class and them."""
    kept = {k: v for k, v in vars(compiled).items() if k != "__orig_class__"}
    return cls(**kept, **attributes)


# -- methods of the stock savers, called on Gatehouse's subclasses
def pg_dump_blobs(saver: PostgresSaver, *args: Any) -> list[tuple[Any, ...]]:
    """The blob rows `put` writes: (thread_id, ns, values, versions)."""
    return saver._dump_blobs(*args)


def pg_load_checkpoint_tuple(saver: PostgresSaver, value: Any) -> Any:
    """The checkpoint tuple of a row of the stock `SELECT_SQL`."""
    return saver._load_checkpoint_tuple(value)


def pg_dump_writes(saver: PostgresSaver, *args: Any) -> list[tuple[Any, ...]]:
    """The rows `put_writes` writes: (thread_id, ns, checkpoint_id, task_id, task_path, writes)."""
    return saver._dump_writes(*args)


def sqlite_has_task_path(saver: SqliteSaver) -> bool:
    return bool(saver._has_task_path)


__all__ += ["SURFACE", "Private", *(p.ours for p in SURFACE if p.ours not in __all__)]

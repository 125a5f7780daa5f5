"""The one event stream every front end reads: typed, JSON-serialisable events the
agent writes into LangGraph's `custom` stream (graph/agent/emit.py), the Session adds
the pause and the end of a run. `Event` is a union tagged by `type`:
`parse_event(event.to_json())` gives back an equal event.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from copy import copy
from functools import cache, partial
from typing import Annotated, Any, Literal, Self, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from gatehouse.graph.protocol.decisions import StandingGrant
from gatehouse.graph.protocol.pauses import Approval, OutcomeUnknown, pause_from


class _EventBase(BaseModel):
    # defer_build: a model's validator is built when it is first used, so a process
    # that sees three kinds of event (a terminal `approve`) does not build eighteen.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    thread_id: str
    ts: float = Field(default_factory=time.time)

    @classmethod
    def trusted(cls, **fields: Any) -> Self:
        """The event as the agent's own (typed) code makes it, unvalidated, names still
        checked: building a validator costs ~0.3 ms a kind per process, and
        `model_construct` ~14 µs an event (a reply streams one per chunk), so it is
        built as `model_construct` does, from the fields worked out once (`_shape`)."""
        names, required, template, made = _shape(cls)
        if not names.issuperset(fields):
            unknown = sorted(set(fields) - names)
            raise TypeError(f"{cls.__name__} has no field {', '.join(unknown)}")
        if not required.issubset(fields):
            missing = [n for n in required if n not in fields]
            raise TypeError(f"{cls.__name__} needs {', '.join(missing)}")
        values = {**template, **fields}  # in field order, as a validated event's
        values.update((name, make()) for name, make in made if name not in fields)
        event = cls.__new__(cls)
        _set(event, "__dict__", values)
        _set(event, "__pydantic_fields_set__", set(fields))
        _set(event, "__pydantic_extra__", None)
        _set(event, "__pydantic_private__", None)
        return event

    def to_json(self) -> str:
        return self.model_dump_json()

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# (field names, required names, field -> plain default, (name, maker) of the rest)
_Shape = tuple[
    frozenset[str], frozenset[str], dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...]
]
_set = object.__setattr__  # as `model_construct` sets a frozen model's parts
_PLAIN_DEFAULTS = (type(None), str, int, float, bool, tuple, frozenset)
# Default factories that take no data: asked, pydantic parses a builtin's signature
# from its text (~0.1-0.2 ms a time).
_NO_DATA_FACTORIES = (time.time, list, dict, set, tuple)


@cache
def _shape(cls: type[_EventBase]) -> _Shape:
    """What `trusted` needs of an event class, worked out once per class."""
    fields = cls.__pydantic_fields__
    template: dict[str, Any] = {}
    made: list[tuple[str, Callable[[], Any]]] = []
    required: set[str] = set()
    for name, info in fields.items():
        template[name] = None
        if info.is_required():
            required.add(name)
            continue
        factory = info.default_factory
        if factory not in _NO_DATA_FACTORIES and info.default_factory_takes_validated_data:
            raise TypeError(f"{cls.__name__}.{name}: a default made from the data")
        if factory is not None:
            made.append((name, cast(Callable[[], Any], factory)))
        elif isinstance(info.default, _PLAIN_DEFAULTS):
            template[name] = info.default
        else:  # a mutable default: each event its own copy
            made.append((name, partial(copy, info.default)))
    return frozenset(fields), frozenset(required), template, tuple(made)


class RunStarted(_EventBase):
    type: Literal["run_started"] = "run_started"
    run_id: str
    kind: Literal["message", "resume", "retry"] = "message"


class TextDelta(_EventBase):
    type: Literal["text_delta"] = "text_delta"
    text: str
    message_id: str | None = None


class ReasoningDelta(_EventBase):
    """The model's reasoning, streamed apart from its answer (never part of its text)."""

    type: Literal["reasoning_delta"] = "reasoning_delta"
    text: str
    message_id: str | None = None


class ModelRetried(_EventBase):
    """A model call failed in a way worth retrying (connection, timeout, rate limit, a
    broken stream); asked again after `delay_s`, the reply `message_id` starts over."""

    type: Literal["model_retried"] = "model_retried"
    attempt: int  # 1 for the first retry
    max_retries: int
    delay_s: float
    reason: str
    message_id: str | None = None


class ReplyRejected(_EventBase):
    """An `after_llm` hook sent the reply back (`rerun_llm`): the text streamed for
    `message_id` is discarded and the model is asked again; `reason` says why."""

    type: Literal["reply_rejected"] = "reply_rejected"
    message_id: str | None = None
    reason: str = ""


PartKind = Literal["text", "reasoning", "tool_call"]


class PartStarted(_EventBase):
    """A part of the reply `message_id` starts (its text, its reasoning, or a tool call
    once its arguments are complete); the deltas that follow belong to it. `index`
    counts parts from 0 (a retried reply starts over)."""

    type: Literal["part_started"] = "part_started"
    message_id: str | None = None
    index: int
    part_kind: PartKind
    call_id: str | None = None
    tool_name: str | None = None


class MessageReplaced(_EventBase):
    """An `after_llm` hook changed the streamed reply `message_id` (a redaction): show
    `text` instead, or nothing when `removed`. The history holds the new version."""

    type: Literal["message_replaced"] = "message_replaced"
    message_id: str
    text: str
    removed: bool = False


class AssistantMessage(_EventBase):
    """A complete model reply as the history keeps it (after the `after_llm` hooks),
    with the names of the tools it asks for."""

    type: Literal["assistant_message"] = "assistant_message"
    message_id: str
    text: str
    tool_calls: list[str] = Field(default_factory=list)


class TurnComplete(_EventBase):
    """The agent finished the person's turn (not sent on a pause or a failure);
    `history_size`: how many messages `session.view(thread_id).messages` holds."""

    type: Literal["turn_complete"] = "turn_complete"
    status: Literal["completed", "stopped", "cancelled"] = "completed"
    history_size: int


class ToolStarted(_EventBase):
    """A tool call starts (or is answered without running). `auto_approved`: a gated
    call ran by auto-approve; `grant`: the thread's standing "always allow" it ran
    under ("write_file:notes/*.md")."""

    type: Literal["tool_started"] = "tool_started"
    call_id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    auto_approved: bool = False
    grant: str | None = None


class ToolOutput(_EventBase):
    """A chunk of output a tool streams while it runs (e.g. shell lines)."""

    type: Literal["tool_output"] = "tool_output"
    call_id: str
    text: str


ToolStatus = Literal["ok", "error", "rejected", "denied", "responded", "stopped"]


class ToolFinished(_EventBase):
    """A call's result. `offloaded`: too large for the model, stored aside; `output` is
    what the model got, the whole (`total_chars`) is `view(...).tool_output(call_id)`."""

    type: Literal["tool_finished"] = "tool_finished"
    call_id: str
    name: str
    status: ToolStatus
    output: str = ""
    duration_ms: float = 0.0
    offloaded: bool = False
    total_chars: int | None = None


class ApprovalRequired(_EventBase):
    """The run paused for a person: `request` is the interrupt value, `pause()` typed."""

    type: Literal["approval_required"] = "approval_required"
    interrupt_id: str
    request: dict[str, Any]

    def pause(self) -> Approval | OutcomeUnknown | None:
        return pause_from(self.thread_id, self.interrupt_id, self.request)


class Usage(_EventBase):
    type: Literal["usage"] = "usage"
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None


class Compacted(_EventBase):
    type: Literal["compacted"] = "compacted"
    tokens_before: int
    tokens_after: int
    messages_removed: int = 0


CUT_OFF_SOURCE = "cut_off"  # Notice.source values, see `Notice`
DOOM_LOOP_SOURCE = "doom_loop"


class Notice(_EventBase):
    """Something a hook or the agent wants the person to see (not model output);
    `source` "cut_off" (a reply cut off) or "doom_loop" (the same call repeated)."""

    type: Literal["notice"] = "notice"
    text: str
    source: str = ""


RunStatus = Literal["completed", "awaiting_approval", "cancelled", "stopped", "failed"]


class RunFinished(_EventBase):
    """The end of a run; `text` and `message_id`: its last model reply (None if none)."""

    type: Literal["run_finished"] = "run_finished"
    status: RunStatus
    reason: str | None = None
    text: str | None = None
    message_id: str | None = None


class Done(_EventBase):
    """The answer of an operation that starts no run; `changed` False: nothing to do.
    What it gave: `removed` (undo), `grant`, `compacted`, `dropped` (import: the
    authority left behind; `thread_id` is the new thread's)."""

    type: Literal["done"] = "done"
    operation: str
    changed: bool = True
    removed: int = 0
    grant: StandingGrant | None = None
    compacted: Compacted | None = None
    dropped: str | None = None


class ErrorEvent(_EventBase):
    type: Literal["error"] = "error"
    message: str
    kind: str = "error"
    retryable: bool = False


Event = Annotated[
    RunStarted
    | TextDelta
    | ReasoningDelta
    | ModelRetried
    | ReplyRejected
    | PartStarted
    | MessageReplaced
    | AssistantMessage
    | TurnComplete
    | ToolStarted
    | ToolOutput
    | ToolFinished
    | ApprovalRequired
    | Usage
    | Compacted
    | Notice
    | RunFinished
    | Done
    | ErrorEvent,
    Field(discriminator="type"),
]

EVENT_TYPES: tuple[type[_EventBase], ...] = get_args(get_args(Event)[0])


@cache  # built on first use: it builds every event's validator (tens of ms at import)
def _adapter() -> TypeAdapter[Event]:
    return TypeAdapter(Event)


def parse_event(data: str | bytes | dict[str, Any]) -> Event:
    """Rebuild an event from its JSON text or dict form."""
    if isinstance(data, dict):
        return _adapter().validate_python(data)
    return _adapter().validate_json(data)


def event_json_schema() -> dict[str, Any]:
    """The JSON schema of the event stream (documented in docs/embedding.md)."""
    return _adapter().json_schema()

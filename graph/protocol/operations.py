"""What a front end can ask a session to do: typed values with a wire form (a dict
tagged by `type`, as codex's `Op`), all through `Session.submit(operation, options)`.
A change that starts no run answers in a run's shape, one `Done` event.

    session.submit(Decide(thread_id, review([approve(), reject("not now")])), RunOptions(source="web"))
    session.submit(Undo(thread_id)).result().removed
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from functools import cache
from typing import Annotated, Any, ClassVar, Literal, TypedDict, TypeVar, cast, dataclass_transform

from pydantic import ConfigDict, Field, TypeAdapter

from gatehouse.graph.protocol.answers import (
    Approve,
    Decision,
    Edit,
    EditedAction,
    OutcomeAnswer,
    Reject,
    Respond,
    ReviewAnswer,
)
from gatehouse.graph.protocol.pauses import OutcomeChoice


@dataclass(frozen=True)
class RunOptions:
    """Per-run extras: tracing (`callbacks`, `tags`, `metadata`), who acts (`source`,
    `actor`: recorded with every decision the run carries out; default: the
    session's), and `auto_approve` for this run only (None: the session's mode)."""

    callbacks: Sequence[Any] | None = None
    tags: Sequence[str] | None = None
    metadata: Mapping[str, Any] | None = None
    source: str | None = None
    actor: str | None = None
    auto_approve: bool | None = None


class RunOptionsKwargs(TypedDict, total=False):
    """`RunOptions` as keyword arguments of the shorthands (`session.send(..., source="web")`)."""

    callbacks: Sequence[Any] | None
    tags: Sequence[str] | None
    metadata: Mapping[str, Any] | None
    source: str | None
    actor: str | None
    auto_approve: bool | None


class _Op:
    __pydantic_config__ = ConfigDict(extra="forbid")  # a misspelt field is refused
    type: ClassVar[str]


_O = TypeVar("_O", bound=type[_Op])


@dataclass_transform(frozen_default=True)
def _operation(tag: str) -> Callable[[_O], _O]:
    """A frozen dataclass whose `type` tag (keyword-only, after its fields) is `tag`."""

    def declare(cls: _O) -> _O:
        cls.__annotations__.update({"_": KW_ONLY, "type": Literal[tag]})
        cls.type = tag
        return cast(_O, dataclass(frozen=True)(cls))

    return declare


@_operation("send_message")
class SendMessage(_Op):
    """A user message (a string, or content blocks): a new thread when `thread_id` is
    None. `owner`: who the thread belongs to (the web app's signed-in person)."""

    thread_id: str | None
    message: str | list[Any]
    owner: str | None = None


@_operation("decide")
class Decide(_Op):
    """The answer to the thread's pending pause. `interrupt_id`: the request the
    person saw (refused as stale when another one is pending now)."""

    thread_id: str
    answer: ReviewAnswer | OutcomeAnswer
    interrupt_id: str | None = None


@_operation("retry")
class Retry(_Op):
    """Continue a run that failed or whose process died, from its last checkpoint."""

    thread_id: str


@_operation("fork")
class Fork(_Op):
    """Replace the user message at `message_index` with `text` and go on from there.
    `force`: drop a pending approval request to do it."""

    thread_id: str
    message_index: int
    text: str
    force: bool = False


# -- operations that start no run: `submit` answers with a `Done` event


@_operation("cancel")
class Cancel(_Op):
    """Stop this session's live run on the thread at its next safe point
    (`Done.changed`: there was one)."""

    thread_id: str


@_operation("undo")
class Undo(_Op):
    """Drop the last user turn and all after it (`Done.removed` messages). `force`:
    also when that drops a pending approval request."""

    thread_id: str
    force: bool = False


@_operation("compact")
class Compact(_Op):
    """Summarise the thread's older part now (`Done.compacted`; None: nothing to)."""

    thread_id: str


@_operation("rename")
class Rename(_Op):
    thread_id: str
    title: str


@_operation("delete")
class Delete(_Op):
    """Delete the thread and its history (the decision log keeps its records); not
    while a run is going on it (`RunInProgress`)."""

    thread_id: str


@_operation("switch_branch")
class SwitchBranch(_Op):
    """Move the thread onto the branch of another version of one of its user
    messages (`branches(...)[k].message_ids`). `force`: drop a pending request."""

    thread_id: str
    message_id: str
    force: bool = False


@_operation("grant")
class Grant(_Op):
    """A standing "always allow" of `tool` in the thread (where its argument matches
    `pattern`, a glob), as an approval's `always_allow` gives one."""

    thread_id: str
    tool: str
    pattern: str | None = None


@_operation("revoke")
class Revoke(_Op):
    """Withdraw a standing grant by its label ("write_file", "write_file:*.md", "*")."""

    thread_id: str
    grant: str


@_operation("set_auto_approve")
class SetAutoApprove(_Op):
    """Auto-approve on or off: the thread's switch (stored, for every client), or
    with `thread_id` None this session's mode (not stored)."""

    thread_id: str | None
    on: bool


@_operation("import_thread")
class ImportThread(_Op):
    """Recreate a thread from `export(..., "json")` (text or parsed), under
    `thread_id` when given; `Done.thread_id` is its id."""

    data: str | bytes | dict[str, Any]
    thread_id: str | None = None


RunOperation = SendMessage | Decide | Retry | Fork
Change = (
    Cancel
    | Undo
    | Compact
    | Rename
    | Delete
    | SwitchBranch
    | Grant
    | Revoke
    | SetAutoApprove
    | ImportThread
)
Operation = RunOperation | Change


@cache  # built on first use, as the events' (pydantic builds validators)
def _adapter() -> TypeAdapter[Operation]:
    return TypeAdapter(Annotated[Operation, Field(discriminator="type")])


def operation_to_wire(operation: Operation) -> dict[str, Any]:
    """The operation as JSON-ready data, tagged by its `type`."""
    return _adapter().dump_python(operation, mode="json")


def parse_operation(data: str | bytes | Mapping[str, Any]) -> Operation:
    """Rebuild an operation from its wire form (JSON text or dict); a pydantic
    `ValidationError` (as `parse_event`'s) names an unknown `type` or a bad field."""
    if isinstance(data, Mapping):
        return _adapter().validate_python(dict(data))
    return _adapter().validate_json(data)


# -- answers, built the same way by every front end -----------------------------


def approve(*, always_allow: bool | str | None = None) -> Approve:
    return Approve(type="approve", always_allow=always_allow)


def reject(message: str | None = None) -> Reject:
    return Reject(type="reject", message=message)


def edit(name: str, args: Mapping[str, Any], *, always_allow: bool | str | None = None) -> Edit:
    return Edit(
        type="edit",
        edited_action=EditedAction(name=name, args=dict(args)),
        always_allow=always_allow,
    )


def respond(message: str) -> Respond:
    return Respond(type="respond", message=message)


def review(decisions: Sequence[Decision], *, reject_missing: bool | str = False) -> ReviewAnswer:
    """The answer to an approval request: one decision per call, in request order."""
    return ReviewAnswer(decisions=list(decisions), reject_missing=reject_missing)


def outcome(choice: OutcomeChoice, message: str | None = None) -> OutcomeAnswer:
    """The answer to an "outcome unknown" pause: run_again, mark_failed or respond."""
    return OutcomeAnswer(type=choice, message=message)

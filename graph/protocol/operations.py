"""What a front end can ask a session to do, as typed values.

Every way a run starts goes through one entry, `Session.submit(operation, options)`
(and `Runner.submit`, `AsyncSession.submit`, with the same arguments):

    session.submit(SendMessage(None, "list files"))
    session.submit(Decide(thread_id, review([approve(), reject("not now")])), RunOptions(source="web"))

An answer to a pause is built from the models in `graph.protocol.answers`
(`ReviewAnswer`, `OutcomeAnswer`), never by hand as a dict: the helpers below cover
what the front ends offer. `RunOptions` is the one options object of every run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from graph.protocol.answers import (
    Approve,
    Decision,
    Edit,
    EditedAction,
    OutcomeAnswer,
    Reject,
    Respond,
    ReviewAnswer,
)
from graph.protocol.pauses import OutcomeChoice

__all__ = [
    "Decide",
    "Fork",
    "Operation",
    "Retry",
    "RunOptions",
    "RunOptionsKwargs",
    "SendMessage",
    "approve",
    "edit",
    "outcome",
    "reject",
    "respond",
    "review",
]


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """Per-run extras: tracing (`callbacks`, `tags`, `metadata`: LangChain callback
    handlers and run tags), who is acting (`source`, `actor`: recorded with every
    decision the run carries out; default: the session's), and `auto_approve` for
    this run only (None: the session's mode)."""

    callbacks: Sequence[Any] | None = None
    tags: Sequence[str] | None = None
    metadata: Mapping[str, Any] | None = None
    source: str | None = None
    actor: str | None = None
    auto_approve: bool | None = None

    def under(self, defaults: RunOptions) -> RunOptions:
        """These options, with each field left unset (None) taken from `defaults`."""
        mine = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return dataclasses.replace(defaults, **{k: v for k, v in mine.items() if v is not None})


class RunOptionsKwargs(TypedDict, total=False):
    """`RunOptions` as keyword arguments: the options of the shorthands
    (`session.send(thread_id, text, source="web")`), typed once for all of them."""

    callbacks: Sequence[Any] | None
    tags: Sequence[str] | None
    metadata: Mapping[str, Any] | None
    source: str | None
    actor: str | None
    auto_approve: bool | None


@dataclasses.dataclass(frozen=True)
class SendMessage:
    """A user message (a string, or content blocks): a new thread when `thread_id` is
    None. `owner`: who the thread belongs to (the web app's signed-in person)."""

    thread_id: str | None
    message: str | list[Any]
    owner: str | None = None


@dataclasses.dataclass(frozen=True)
class Decide:
    """The answer to the thread's pending pause. `interrupt_id`: the request the
    person saw (refused as stale when another one is pending now)."""

    thread_id: str
    answer: ReviewAnswer | OutcomeAnswer
    interrupt_id: str | None = None


@dataclasses.dataclass(frozen=True)
class Retry:
    """Continue a run that failed or whose process died, from its last checkpoint."""

    thread_id: str


@dataclasses.dataclass(frozen=True)
class Fork:
    """Replace the user message at `message_index` with `text` and go on from there.
    `force`: drop a pending approval request to do it."""

    thread_id: str
    message_index: int
    text: str
    force: bool = False


Operation = SendMessage | Decide | Retry | Fork


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

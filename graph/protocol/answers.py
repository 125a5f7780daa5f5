"""What a person answers to a pause: LangChain's HITL answer (`{"decisions": [...]}`)
or one `OutcomeAnswer`. The shape only: whether it fits its request is review.py's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gatehouse.graph.protocol.pauses import OutcomeChoice


class EditedAction(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    args: dict[str, Any]


class _Decision(BaseModel):
    model_config = ConfigDict(extra="allow")
    # Gatehouse extra: "always allow this tool in this thread" (True), or where its
    # argument matches a glob (a string), granted with this approval.
    always_allow: bool | str | None = None

    @field_validator("always_allow")
    @classmethod
    def _pattern(cls, value: bool | str | None) -> bool | str | None:
        if not isinstance(value, str):
            return value
        pattern = value.strip()
        if not pattern:
            raise ValueError(
                "always_allow: a pattern must not be empty (true grants the whole tool)"
            )
        # The decision log stores a whole-tool grant as "*": a *pattern* of only stars
        # is kept a pattern (it still never covers a chained command or the network).
        return "**" if set(pattern) == {"*"} else pattern


class Approve(_Decision):
    type: Literal["approve"]


class Edit(_Decision):
    type: Literal["edit"]
    edited_action: EditedAction


class Reject(_Decision):
    type: Literal["reject"]
    message: str | None = None


class Respond(_Decision):
    type: Literal["respond"]
    message: str


Decision = Annotated[Approve | Edit | Reject | Respond, Field(discriminator="type")]


MISSING_REJECTED = "Not decided in the answer; rejected (reject_missing)."


class ReviewAnswer(BaseModel):
    """`decisions`: one per action request, in order, or keyed by tool call id.
    `reject_missing` (Gatehouse extra): a call left undecided is rejected (with this
    text as the reason when a string) instead of the answer being refused."""

    decisions: list[Decision]
    reject_missing: bool | str = False


class OutcomeAnswer(BaseModel):
    """`{"type": "run_again"}`, `{"type": "mark_failed", "message": "..."}` or
    `{"type": "respond", "message": "..."}`."""

    model_config = ConfigDict(extra="forbid")
    type: OutcomeChoice
    message: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _unwrap(cls, data: Any) -> Any:
        # Also take the HITL-style envelope {"decisions": [one decision]}.
        if isinstance(data, dict) and "decisions" in data:
            decisions = data["decisions"]
            if not isinstance(decisions, list) or len(decisions) != 1:
                raise ValueError("an outcome-unknown request takes exactly one answer")
            return decisions[0]
        return data

    @model_validator(mode="after")
    def _message_when_needed(self) -> OutcomeAnswer:
        if self.type == "respond" and not (self.message or "").strip():
            raise ValueError("a respond answer needs the real outcome as a non-empty message")
        return self

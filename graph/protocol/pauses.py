"""Why a thread is paused, as types: an `Approval` (tool calls a person must decide)
or an `OutcomeUnknown` (a call started before a crash and its end was never saved).

The interrupt value on the wire is the request (`ApprovalRequest` is LangChain's
`HITLRequest` plus Gatehouse extras, so Agent Chat UI and Agent Inbox read it); a
pause adds where it is (thread, interrupt id). Front ends tell the kinds apart by
type, never by dict keys.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from graph.protocol.answers import OUTCOME_CHOICES, DecisionType, OutcomeChoice


class ActionRequest(BaseModel):
    """One gated call: LangChain's action request plus Gatehouse extras."""

    model_config = ConfigDict(extra="allow")
    name: str
    args: dict[str, Any]
    description: str = ""
    tool_call_id: str | None = None
    risk: str | None = None
    # What the call will change (a diff, the new file), when the tool can tell.
    preview: str | None = None


class ReviewConfig(BaseModel):
    model_config = ConfigDict(extra="allow")
    action_name: str
    allowed_decisions: list[DecisionType]


class ApprovalRequest(BaseModel):
    """The interrupt value of a review: LangChain's `HITLRequest`."""

    model_config = ConfigDict(extra="allow")
    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class InterruptedCall(BaseModel):
    tool_call_id: str
    name: str
    args: dict[str, Any]
    started_at: float
    attempts: int = 1


class OutcomeRequest(BaseModel):
    """The interrupt value when a call's outcome is unknown; it has `outcome_unknown`,
    not `action_requests`, so HITL clients do not mistake it for an approval."""

    outcome_unknown: InterruptedCall
    allowed: list[OutcomeChoice] = Field(default_factory=lambda: list(OUTCOME_CHOICES))
    description: str = ""

    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class _Pause(BaseModel):
    model_config = ConfigDict(frozen=True)
    thread_id: str
    interrupt_id: str

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class Approval(_Pause):
    """Tool calls waiting for a person's decisions (one per action request)."""

    kind: Literal["approval"] = "approval"
    request: ApprovalRequest

    @property
    def actions(self) -> list[ActionRequest]:
        return list(self.request.action_requests)

    def allowed(self, index: int) -> list[str]:
        return list(self.request.review_configs[index].allowed_decisions)


class OutcomeUnknown(_Pause):
    """A call that started before a crash; answered with an `OutcomeAnswer`."""

    kind: Literal["outcome_unknown"] = "outcome_unknown"
    request: OutcomeRequest

    @property
    def call(self) -> InterruptedCall:
        return self.request.outcome_unknown

    @property
    def allowed(self) -> list[str]:
        return list(self.request.allowed)


Pause = Approval | OutcomeUnknown


def pause_from(thread_id: str, interrupt_id: str, value: Any) -> Pause | None:
    """The pause an interrupt value stands for, or None for an interrupt Gatehouse did
    not raise (a user's own `interrupt()` in a hook)."""
    if isinstance(value, ApprovalRequest):
        return Approval(thread_id=thread_id, interrupt_id=interrupt_id, request=value)
    if isinstance(value, OutcomeRequest):
        return OutcomeUnknown(thread_id=thread_id, interrupt_id=interrupt_id, request=value)
    if isinstance(value, dict) and "action_requests" in value:
        return Approval(
            thread_id=thread_id,
            interrupt_id=interrupt_id,
            request=ApprovalRequest.model_validate(value),
        )
    if isinstance(value, dict) and "outcome_unknown" in value:
        return OutcomeUnknown(
            thread_id=thread_id,
            interrupt_id=interrupt_id,
            request=OutcomeRequest.model_validate(value),
        )
    return None

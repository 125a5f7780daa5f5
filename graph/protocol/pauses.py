"""Why a thread is paused, as types: an `Approval` (tool calls a person must decide)
or an `OutcomeUnknown` (a call started before a crash and its end was never saved).
The interrupt value on the wire is the request (`ApprovalRequest` is LangChain's
`HITLRequest` plus extras); a pause adds the thread and interrupt id. Plain
dataclasses, checked by hand (`MalformedPause` says where): `gatehouse pending` builds
them in a fresh process, where importing pydantic was half the time. Unknown keys
travel in `extra` and back out in `wire()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from typing import Any, ClassVar, Generic, Literal, TypeVar, get_args

DecisionType = Literal["approve", "edit", "reject", "respond"]
DECISION_TYPES: tuple[DecisionType, ...] = get_args(DecisionType)
OutcomeChoice = Literal["run_again", "mark_failed", "respond"]
OUTCOME_CHOICES: tuple[OutcomeChoice, ...] = get_args(OutcomeChoice)


class MalformedPause(ValueError):
    """A stored or imported request that is not the shape of a pause."""


_TYPE_NAMES: dict[type, str] = {str: "a string", dict: "an object", list: "a list"}


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if type(value) is not dict and not isinstance(value, Mapping):  # (an ABC check is slow)
        raise MalformedPause(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _field(
    data: Mapping[str, Any], key: str, kind: type, where: str, *, optional: bool = False
) -> Any:
    value = data.get(key)
    if type(value) is kind:  # the usual case first: a card reads ten fields
        return value
    if value is None and optional:
        return None
    if key not in data:
        raise MalformedPause(f"{where}.{key}: required")
    if not isinstance(value, kind):
        raise MalformedPause(
            f"{where}.{key}: expected {_TYPE_NAMES.get(kind, kind.__name__)}, "
            f"got {type(value).__name__}"
        )
    return value


def _choices(value: Any, allowed: tuple[str, ...], where: str) -> list[Any]:
    if not isinstance(value, list) or any(v not in allowed for v in value):
        raise MalformedPause(f"{where}: expected a list of {', '.join(allowed)}, got {value!r}")
    return list(value)


def _extra(data: Mapping[str, Any], cls: type) -> dict[str, Any]:
    known = _known(cls)
    return {k: v for k, v in data.items() if k not in known}


def _each(cls: Any, values: list[Any], where: str) -> list[Any]:
    return [cls.from_wire(v, f"{where}[{i}]") for i, v in enumerate(values)]


@cache  # `fields()` per card was a sixth of a 10,000-card inbox's read
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


@cache
def _known(cls: type) -> frozenset[str]:
    return frozenset(_field_names(cls))


@dataclass(frozen=True, kw_only=True)
class _Wired:
    extra: dict[str, Any] = field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        """Its fields (nested ones wired) and its extras, None left out (LangChain's form)."""
        cls: type = type(self)  # (mypy: a dataclass type is hashable)
        own = {k: getattr(self, k) for k in _field_names(cls) if k != "extra"}
        own = {
            k: [x.wire() if isinstance(x, _Wired) else x for x in v] if isinstance(v, list) else v
            for k, v in own.items()
        }
        return {k: v for k, v in {**own, **self.extra}.items() if v is not None}


INBOX_ARGS = "arguments"


@dataclass(frozen=True, kw_only=True)
class ActionRequest(_Wired):
    name: str
    args: dict[str, Any]
    description: str = ""
    tool_call_id: str | None = None
    risk: str | None = None
    # What the call will change (a diff, the new file), when the tool can tell.
    preview: str | None = None

    @classmethod
    def from_wire(cls, value: Any, where: str = "action request") -> ActionRequest:
        data = _object(value, where)
        extra = _extra(data, cls)
        extra.pop(INBOX_ARGS, None)  # always `args` again on the way out
        return cls(
            name=_field(data, "name", str, where),
            args=_field(data, "args", dict, where),
            description=_field(data, "description", str, where, optional=True) or "",
            tool_call_id=_field(data, "tool_call_id", str, where, optional=True),
            risk=_field(data, "risk", str, where, optional=True),
            preview=_field(data, "preview", str, where, optional=True),
            extra=extra,
        )

    def wire(self) -> dict[str, Any]:
        # Agent Inbox reads a HITL request's arguments from `arguments` (its edit form, the
        # accept it echoes); LangChain's contract names them `args`: both, always the same.
        return {**super().wire(), INBOX_ARGS: self.args}


@dataclass(frozen=True, kw_only=True)
class ReviewConfig(_Wired):
    """LangChain's review config plus `approvers` (who may decide; None: anyone)."""

    action_name: str
    allowed_decisions: list[DecisionType]
    approvers: list[str] | None = None

    @classmethod
    def from_wire(cls, value: Any, where: str = "review config") -> ReviewConfig:
        data = _object(value, where)
        approvers = _field(data, "approvers", list, where, optional=True)
        return cls(
            action_name=_field(data, "action_name", str, where),
            allowed_decisions=_choices(
                data.get("allowed_decisions"), DECISION_TYPES, f"{where}.allowed_decisions"
            ),
            approvers=[str(a) for a in approvers] if approvers is not None else None,
            extra=_extra(data, cls),
        )


@dataclass(frozen=True, kw_only=True)
class ApprovalRequest(_Wired):
    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]

    @classmethod
    def from_wire(cls, value: Any, where: str = "request") -> ApprovalRequest:
        data = _object(value, where)
        actions = _field(data, "action_requests", list, where)
        configs = _field(data, "review_configs", list, where)
        return cls(
            action_requests=_each(ActionRequest, actions, f"{where}.action_requests"),
            review_configs=_each(ReviewConfig, configs, f"{where}.review_configs"),
            extra=_extra(data, cls),
        )


@dataclass(frozen=True, kw_only=True)
class InterruptedCall:
    tool_call_id: str
    name: str
    args: dict[str, Any]
    started_at: float
    attempts: int = 1

    @classmethod
    def from_wire(cls, value: Any, where: str = "outcome_unknown") -> InterruptedCall:
        data = _object(value, where)
        started = data.get("started_at")
        if not isinstance(started, int | float) or isinstance(started, bool):
            raise MalformedPause(f"{where}.started_at: expected a number, got {started!r}")
        attempts = data.get("attempts", 1)
        if not isinstance(attempts, int) or isinstance(attempts, bool):
            raise MalformedPause(f"{where}.attempts: expected an integer, got {attempts!r}")
        return cls(
            tool_call_id=_field(data, "tool_call_id", str, where),
            name=_field(data, "name", str, where),
            args=_field(data, "args", dict, where),
            started_at=float(started),
            attempts=attempts,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class OutcomeRequest:
    """The interrupt value when a call's outcome is unknown; it has `outcome_unknown`,
    not `action_requests`, so HITL clients do not mistake it for an approval."""

    outcome_unknown: InterruptedCall
    allowed: list[OutcomeChoice] = field(default_factory=lambda: list(OUTCOME_CHOICES))
    description: str = ""

    @classmethod
    def from_wire(cls, value: Any, where: str = "request") -> OutcomeRequest:
        data = _object(value, where)
        allowed = data.get("allowed")
        return cls(
            outcome_unknown=InterruptedCall.from_wire(
                data.get("outcome_unknown"), f"{where}.outcome_unknown"
            ),
            allowed=list(OUTCOME_CHOICES)
            if allowed is None
            else _choices(allowed, OUTCOME_CHOICES, f"{where}.allowed"),
            description=_field(data, "description", str, where, optional=True) or "",
        )

    def wire(self) -> dict[str, Any]:
        return asdict(self)


_Request = TypeVar("_Request", "ApprovalRequest", "OutcomeRequest")


@dataclass(frozen=True, kw_only=True)
class _Pause(Generic[_Request]):
    kind: ClassVar[str]
    thread_id: str
    interrupt_id: str
    request: _Request

    def to_dict(self) -> dict[str, Any]:
        return {
            "thread_id": self.thread_id,
            "interrupt_id": self.interrupt_id,
            "kind": self.kind,
            "request": self.request.wire(),
        }


@dataclass(frozen=True, kw_only=True)
class Approval(_Pause[ApprovalRequest]):
    """Tool calls waiting for a person's decisions (one per action request)."""

    kind: ClassVar[Literal["approval"]] = "approval"

    @property
    def actions(self) -> list[ActionRequest]:
        return list(self.request.action_requests)

    def allowed(self, index: int) -> list[str]:
        return list(self.request.review_configs[index].allowed_decisions)


@dataclass(frozen=True, kw_only=True)
class OutcomeUnknown(_Pause[OutcomeRequest]):
    """A call that started before a crash; answered with an `OutcomeAnswer`."""

    kind: ClassVar[Literal["outcome_unknown"]] = "outcome_unknown"

    @property
    def call(self) -> InterruptedCall:
        return self.request.outcome_unknown

    @property
    def allowed(self) -> list[str]:
        return list(self.request.allowed)


Pause = Approval | OutcomeUnknown


def pause_from(thread_id: str, interrupt_id: str, value: Any) -> Pause | None:
    """The pause an interrupt value stands for; None for one Gatehouse did not raise (a
    hook's own `interrupt()`); `MalformedPause` for a request that is not one."""
    if isinstance(value, Mapping) and "action_requests" in value:
        value = ApprovalRequest.from_wire(value)
    elif isinstance(value, Mapping) and "outcome_unknown" in value:
        value = OutcomeRequest.from_wire(value)
    if isinstance(value, ApprovalRequest):
        return Approval(thread_id=thread_id, interrupt_id=interrupt_id, request=value)
    if isinstance(value, OutcomeRequest):
        return OutcomeUnknown(thread_id=thread_id, interrupt_id=interrupt_id, request=value)
    return None

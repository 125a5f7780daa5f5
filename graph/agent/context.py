"""Per-run context that is not state (the graph's `context_schema`): a client can only
make a run smaller; what only the process may set lives in private attributes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr


class RunContext(BaseModel):
    model_config = ConfigDict(extra="ignore")

    max_model_calls: int | None = Field(
        default=None,
        ge=1,
        description="Lower this run's limit of model calls (never above the configured one).",
    )
    # Set when the person presses Stop; nodes check it at safe points.
    _cancel: threading.Event = PrivateAttr(default_factory=threading.Event)
    # The Session's auto-approve switch (gate.py), read each turn: flipping it reaches a run.
    _auto_approve: threading.Event | None = PrivateAttr(default=None)
    # The gate's memo (graph/agent/gate.py: `policy_verdict`); lives and dies with the run.
    _verdicts: dict[Any, Any] = PrivateAttr(default_factory=dict)
    # The gate's reads of the decision log, by thread (gate.py: `gate_reads`).
    _gate_reads: dict[str, Any] = PrivateAttr(default_factory=dict)
    _gate_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    # The Session's own event stream (run.py); None: LangGraph's `custom` stream (emit.py).
    _event_sink: Callable[[Any], None] | None = PrivateAttr(default=None)

    @classmethod
    def with_cancel(
        cls, cancel: threading.Event, *, auto_approve: threading.Event | None = None, **fields: Any
    ) -> RunContext:
        ctx = cls(**fields)
        ctx._cancel = cancel
        ctx._auto_approve = auto_approve
        return ctx

    @property
    def auto_approve(self) -> bool:
        return self._auto_approve is not None and self._auto_approve.is_set()

    @property
    def cancel(self) -> threading.Event:
        return self._cancel

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def verdicts(self) -> dict[Any, Any]:
        return self._verdicts

    @property
    def gate_reads(self) -> dict[str, Any]:
        return self._gate_reads

    @property
    def gate_lock(self) -> threading.Lock:
        return self._gate_lock

    def forget_reads(self) -> None:
        """A new run: reads kept by the last one are not this run's steps'."""
        with self._gate_lock:
            self._gate_reads.clear()

    @property
    def event_sink(self) -> Callable[[Any], None] | None:
        return self._event_sink

    def send_events_to(self, sink: Callable[[Any], None]) -> None:
        self._event_sink = sink


def context_of(runtime: Any) -> RunContext | None:
    ctx = getattr(runtime, "context", None)
    return ctx if isinstance(ctx, RunContext) else None


def cancelled(runtime: Any) -> bool:
    return (ctx := context_of(runtime)) is not None and ctx.cancelled


def session_auto_approves(runtime: Any) -> bool:
    return (ctx := context_of(runtime)) is not None and ctx.auto_approve


def model_call_limit(runtime: Any, configured: int) -> int:
    """The run's model-call limit: the configured one, or lower if the run asked."""
    ctx = context_of(runtime)
    asked = ctx.max_model_calls if ctx is not None else None
    return min(configured, asked) if asked else configured

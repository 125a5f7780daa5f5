"""Per-run context that is not state: lives for one run, never checkpointed.

It is the graph's `context_schema`, so LangGraph Studio shows its fields as a form
for a run. Nothing in it can change what needs approval: a client controls only what
makes a run smaller (a lower model-call limit), never the policy.
"""

from __future__ import annotations

import threading
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr


class RunContext(BaseModel):
    model_config = ConfigDict(extra="ignore")

    max_model_calls: int | None = Field(
        default=None, ge=1, description="Lower this run's limit of model calls (never above the configured one)."
    )
    # Set by the runner when the person presses Stop; nodes check it at safe points.
    _cancel: threading.Event = PrivateAttr(default_factory=threading.Event)

    @classmethod
    def with_cancel(cls, cancel: threading.Event, **fields: Any) -> RunContext:
        ctx = cls(**fields)
        ctx._cancel = cancel
        return ctx

    @property
    def cancel(self) -> threading.Event:
        return self._cancel

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()


def context_of(runtime: Any) -> RunContext | None:
    ctx = getattr(runtime, "context", None)
    return ctx if isinstance(ctx, RunContext) else None


def cancelled(runtime: Any) -> bool:
    """Whether the person asked the run of this `runtime` to stop."""
    ctx = context_of(runtime)
    return bool(ctx is not None and ctx.cancelled)


def model_call_limit(runtime: Any, configured: int) -> int:
    """The run's model-call limit: the configured one, or lower if the run asked."""
    ctx = context_of(runtime)
    asked = ctx.max_model_calls if ctx is not None else None
    return min(configured, asked) if asked else configured

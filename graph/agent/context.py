"""Per-run context that is not state: lives for one run, never checkpointed."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunContext:
    # Set by the runner when the person presses Stop; nodes check it at safe points.
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()


def cancelled(runtime: Any) -> bool:
    """Whether the person asked the run of this `runtime` to stop."""
    ctx = getattr(runtime, "context", None)
    return bool(ctx is not None and isinstance(ctx, RunContext) and ctx.cancelled)

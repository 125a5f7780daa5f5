"""Per-run context that is not state: lives for one run, never checkpointed."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class RunContext:
    # Set by the runner when the person presses Stop; nodes check it at safe points.
    cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()

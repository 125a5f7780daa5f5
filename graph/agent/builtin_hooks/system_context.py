"""System context: the date and time and a short workspace summary before each model call.

    build_graph(..., hooks={"before_llm": [SystemContext("workspace")]})

The text goes to `model_context` (the next call's system prompt only), so the time is
current and no copies pile up in the history."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any


class SystemContext:
    copy_state = False  # it returns its changes: a read-only view (hook_state.py)

    def __init__(
        self,
        workspace: str | os.PathLike[str] | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        max_entries: int = 20,
        key: str = "system_context",
    ) -> None:
        self.workspace = Path(workspace) if workspace is not None else None
        self.clock = clock or (lambda: datetime.now().astimezone())
        self.max_entries = max_entries
        self.key = key

    def __repr__(self) -> str:
        return f"SystemContext({self.key})"

    def run(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return {"model_context": {self.key: self.text()}}

    def text(self) -> str:
        now = self.clock()
        lines = [f"Current date and time: {now:%A %Y-%m-%d %H:%M} {now.tzname() or ''}".rstrip()]
        if self.workspace is not None:
            lines.append(self.workspace_summary(self.workspace))
        return "\n".join(lines)

    def workspace_summary(self, root: Path) -> str:
        if not root.is_dir():
            return f"Workspace: {root} (does not exist yet)"
        entries = sorted(
            (e for e in os.scandir(root) if not e.name.startswith(".")),
            key=lambda e: (not e.is_dir(), e.name.lower()),
        )
        folders = sum(1 for e in entries if e.is_dir())
        names = [e.name + ("/" if e.is_dir() else "") for e in entries[: self.max_entries]]
        extra = len(entries) - self.max_entries
        more = f", … and {extra} more" if extra > 0 else ""
        listing = ", ".join(names) + more if names else "empty"
        return (
            f"Workspace: {root.resolve()} ({len(entries) - folders} files, {folders} folders at the top): "
            f"{listing}"
        )

"""The console every `gatehouse` command prints through, and the `threads` table (apart
from render.py: `gatehouse threads` needs rich alone)."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from gatehouse.graph.protocol.display import visible

PIPE_WIDTH = 160
STATUS_STYLE = {
    "completed": "green",
    "idle": "dim",
    "running": "cyan",
    "interrupted": "red",
    "awaiting_approval": "yellow bold",
    "failed": "red",
    "cancelled": "magenta",
    "stopped": "magenta",
}


class SafeConsole(Console):
    """A console that writes no control character but rich's own: every segment's text
    through `visible()`. The net for what callers (who escape first, so the layout is
    measured on what is shown) miss."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Any:
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isascii() and segment.text.isprintable():
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style, segment.control)


def make_console(*, stderr: bool = False) -> Console:
    # rich already honours NO_COLOR and non-terminals; being explicit keeps it true
    # when FORCE_COLOR or a TTY-faking wrapper is around.
    console = SafeConsole(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)
    if not console.is_terminal:
        # Logs and pipes: do not hard-wrap lines at rich's default 80 columns.
        console.soft_wrap = True
        if not os.environ.get("COLUMNS"):
            console.width = PIPE_WIDTH
    return console


def when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "-"


def threads_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("thread", no_wrap=True, min_width=32)
    table.add_column("status", no_wrap=True, min_width=9)
    table.add_column("pending", justify="right", no_wrap=True)
    table.add_column("updated", no_wrap=True, min_width=16)
    table.add_column("title", overflow="ellipsis", no_wrap=True)
    for r in rows:
        table.add_row(
            r["thread_id"],
            Text(r["status"], STATUS_STYLE.get(r["status"], "")),
            str(r["pending"] or ""),
            when(r["updated_at"]),
            Text(visible(r["title"])),
        )
    return table

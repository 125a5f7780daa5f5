"""Side-effecting tools for crash and concurrency tests: each run appends one line
(`<tool> <label> <pid>`) to a counter file, so a test can count real executions.

`GATEHOUSE_TEST_TOOL_OUTPUT_LINES` makes each result that many lines longer.
`GATEHOUSE_TEST_TOOL_SLEEP` (seconds) keeps the tool running after it wrote its line
and `GATEHOUSE_TEST_MARKER` names a file written at that moment, so a test can kill
the process while the tool is in the middle of its work.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from langchain_core.tools import BaseTool

from gatehouse.tools.base import gatehouse_tool


def make_counting_tools(
    counter: str | Path,
    *,
    before: Callable[[str], None] | None = None,
    during: Callable[[str], None] | None = None,
) -> list[BaseTool]:
    """`bump` asks for approval, `bump_free` runs freely, `touch_idem` asks but is
    idempotent (safe to run again after a crash). `before(label)` runs before the
    side effect, `during(label)` right after it."""
    path = Path(counter)

    def record(tool: str, label: str) -> str:
        if before is not None:
            before(label)
        with open(path, "a") as f:
            f.write(f"{tool} {label} {os.getpid()}\n")
            f.flush()
            os.fsync(f.fileno())
        if marker := os.environ.get("GATEHOUSE_TEST_MARKER"):
            Path(marker).write_text(f"in_tool {label}\n")
        if during is not None:
            during(label)
        if pause := float(os.environ.get("GATEHOUSE_TEST_TOOL_SLEEP", "0") or 0):
            time.sleep(pause)
        # A large result (stored aside by the agent) when GATEHOUSE_TEST_TOOL_OUTPUT_LINES is set.
        lines = int(os.environ.get("GATEHOUSE_TEST_TOOL_OUTPUT_LINES", "0") or 0)
        return f"{tool} ran for {label}" + "".join(f"\nresult line {i}" for i in range(lines))

    @gatehouse_tool(risk="write")
    def bump(label: str) -> str:
        """Add one to the counter (a side effect that needs approval)."""
        return record("bump", label)

    @gatehouse_tool(risk="write", default="allow")
    def bump_free(label: str) -> str:
        """Add one to the counter without asking (a free side effect)."""
        return record("bump_free", label)

    @gatehouse_tool(risk="write", idempotent=True)
    def touch_idem(label: str) -> str:
        """Mark the label as seen; running it twice is harmless."""
        return record("touch_idem", label)

    return [bump, bump_free, touch_idem]


def runs(counter: str | Path) -> Counter[str]:
    """How many times each label really ran."""
    path = Path(counter)
    if not path.exists():
        return Counter()
    # Lines are "<tool> <label> <pid>"; labels may contain spaces.
    return Counter(
        line.split(" ", 1)[1].rsplit(" ", 1)[0]
        for line in path.read_text().splitlines()
        if line.strip()
    )

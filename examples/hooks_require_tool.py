"""Require-tool hook: the agent may not finish before it has run the tests.

    uv run python examples/hooks_require_tool.py

Offline: the scripted model first tries to stop; the hook reminds it, it calls
`run_tests`, and only then the run completes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from langchain_core.tools import tool

from gatehouse.graph import RequireTool, ScriptedModel, Session, ai, build_graph, tool_call
from gatehouse.graph.store import open_storage


@tool
def run_tests() -> str:
    """Run the test suite."""
    return "12 passed"


def main(db_dir: str | None = None) -> list:
    model = ScriptedModel(
        script=[
            "I fixed the bug.",
            ai("", tool_call("run_tests", {}, "t1")),
            "Fixed; 12 tests pass.",
        ]
    )
    storage = open_storage(str(Path(db_dir or tempfile.mkdtemp()) / "require.db"))
    graph = build_graph(
        model=model,
        tools=[run_tests],
        checkpointer=storage.checkpointer,
        policy={"run_tests": False},
        hooks={"on_exit": [RequireTool("run_tests", max_reminders=2)]},
    )
    session = Session(graph, storage, [run_tests])
    events = session.send(None, "Fix the bug").collect()
    for e in events:
        if e.type in ("notice", "tool_finished"):
            print(e.type, getattr(e, "text", None) or getattr(e, "output", ""))
    print(events[-1].status, "-", session.view(events[0].thread_id).messages[-1].content)
    session.close()
    return events


if __name__ == "__main__":
    main()

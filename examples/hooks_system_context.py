"""System context hook: the date, time and workspace before every model call.

    uv run python examples/hooks_system_context.py

The text rides along with the system prompt of each call (the `model_context` key);
the stored history never gets copies of it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from gatehouse.graph import ScriptedModel, SystemContext, build_graph


def main() -> str:
    workspace = Path(tempfile.mkdtemp())
    (workspace / "notes.md").write_text("# notes\n")
    (workspace / "src").mkdir()
    model = ScriptedModel(script=["Hello!"])
    graph = build_graph(
        model=model,
        tools=[],
        checkpointer=InMemorySaver(),
        hooks={"before_llm": [SystemContext(workspace)]},
    )
    config = {"configurable": {"thread_id": "demo"}}
    graph.invoke({"messages": [("user", "What day is it?")]}, config)
    system_prompt = model.inputs[-1][0].content
    print(system_prompt.split("\n\n")[-1])
    print("stored messages:", [m.type for m in graph.get_state(config).values["messages"]])
    return system_prompt


if __name__ == "__main__":
    main()

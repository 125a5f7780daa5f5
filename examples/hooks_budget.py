"""Budget hook: a run stops once it has used its model calls, tokens or dollars.

    uv run python examples/hooks_budget.py

Offline: a scripted model that keeps searching. The budget allows 3 model calls per
run and prices tokens as gpt-4o-mini; every `usage` event is printed with its cost.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from langchain_core.tools import tool

from gatehouse.graph import Budget, ScriptedModel, Session, ai, build_graph, tool_call
from gatehouse.graph.store import open_storage


@tool
def search(query: str) -> str:
    """Search the notes."""
    return f"3 notes mention {query!r}"


def main(db_dir: str | None = None) -> list:
    model = ScriptedModel(
        script=[ai("", tool_call("search", {"query": f"topic {i}"}, f"call{i}")) for i in range(10)]
    )
    budget = Budget(
        max_model_calls=3, max_cost=1.00, thread_max_tokens=100_000, model="gpt-4o-mini"
    )
    storage = open_storage(str(Path(db_dir or tempfile.mkdtemp()) / "budget.db"))
    graph = build_graph(
        model=model,
        tools=[search],
        checkpointer=storage.checkpointer,
        policy={"search": False},  # runs without asking
        # before_llm checks (and stops); on_exit prices the run's last call at once.
        hooks={"before_llm": [budget], "on_exit": [budget]},
    )
    session = Session(graph, storage, [search])
    events = session.send(None, "Research everything").collect()
    for e in events:
        if e.type == "usage":
            print(f"usage: {e.total_tokens} tokens" + (f", ${e.cost:.6f}" if e.cost else ""))
        elif e.type == "run_finished":
            print(f"{e.status}: {e.reason}")
    print("thread usage:", session.view(events[0].thread_id).usage)
    session.close()
    return events


if __name__ == "__main__":
    main()

"""Compaction hook: past a token threshold, older turns become one summary.

    uv run python examples/hooks_compaction.py

Offline: three long turns, then the fourth crosses the threshold; the older turns
are summarised by a (scripted) summary model and the last turn stays verbatim.
`session.submit(Compact(thread_id))` does the same on demand.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from gatehouse.graph import Compaction, ScriptedModel, Session, build_graph
from gatehouse.graph.store import open_storage


def main(db_dir: str | None = None) -> list:
    model = ScriptedModel(fallback="Noted. " + "details " * 60)
    summariser = ScriptedModel(script=["The user shared three long notes about the garden plan."])
    compaction = Compaction(summariser, max_tokens=400, keep_turns=1)
    storage = open_storage(str(Path(db_dir or tempfile.mkdtemp()) / "compaction.db"))
    graph = build_graph(
        model=model, tools=[], checkpointer=storage.checkpointer, hooks={"before_llm": [compaction]}
    )
    session = Session(graph, storage, [])
    thread = session.new_thread_id()
    events = []
    for i in range(4):
        events = session.send(thread, f"Note {i}: " + "the garden plan " * 30).collect()
        for e in events:
            if e.type == "compacted":
                print(
                    f"compacted: {e.tokens_before} -> {e.tokens_after} tokens, {e.messages_removed} messages summarised"
                )
    print([m.type for m in session.view(thread).messages])
    print(session.view(thread).messages[0].content[:120])
    session.close()
    return events


if __name__ == "__main__":
    main()

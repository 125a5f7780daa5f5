"""Answer-judge hook: a second model grades the answer; below 7/10 the agent revises.

    uv run python examples/hooks_judge.py

Offline: the scripted judge gives 4/10 with a critique, then 9/10 for the revision.
Any chat model works as the judge, e.g. `ChatOpenAI(model="gpt-4o-mini")`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from gatehouse.graph import AnswerJudge, ScriptedModel, Session, build_graph
from gatehouse.graph.store import open_storage


def main(db_dir: str | None = None) -> list:
    grades = iter(
        ["GRADE: 4/10\nCRITIQUE: It does not say which year.", "GRADE: 9/10\nCRITIQUE: Good."]
    )
    judge_model = ScriptedModel(script=[lambda messages: next(grades)])
    model = ScriptedModel(
        script=["Paris hosted the Olympics.", "Paris hosted the Summer Olympics in 2024."]
    )
    storage = open_storage(str(Path(db_dir or tempfile.mkdtemp()) / "judge.db"))
    graph = build_graph(
        model=model,
        tools=[],
        checkpointer=storage.checkpointer,
        hooks={"on_exit": [AnswerJudge(judge_model, threshold=7, max_rounds=2)]},
    )
    session = Session(graph, storage, [])
    events = session.send(None, "When did Paris last host the Olympics?").collect()
    for e in events:
        if e.type == "notice":
            print("notice:", e.text)
    print(events[-1].status, "-", session.view(events[0].thread_id).messages[-1].content)
    session.close()
    return events


if __name__ == "__main__":
    main()

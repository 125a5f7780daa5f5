"""Resume a paused thread with a raw `graph.invoke(Command(resume=...))`, as a client
that talks to the compiled graph directly (no Session, no lease) does.

    python -m tests.support.raw_resume_worker DB COUNTER THREAD ANSWER_JSON

Exit 0 when this process's resume completed, 3 when it was refused: the journal refused
its claim (`CallAlreadyStarted`: another process had claimed the call) or the pause
was already decided when it arrived (`StaleDecision`).
"""

from __future__ import annotations

import json
import sys

from langgraph.types import Command

from gatehouse.graph import CallAlreadyStarted, StaleDecision
from tests.test_gate_every_path import raw_graph


def main(db: str, counter: str, thread: str, answer: str) -> int:
    from pathlib import Path

    graph, storage = raw_graph(Path(db), Path(counter))
    try:
        graph.invoke(Command(resume=json.loads(answer)), {"configurable": {"thread_id": thread}})
    except (CallAlreadyStarted, StaleDecision):
        return 3
    finally:
        storage.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))

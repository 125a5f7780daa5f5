"""A Gatehouse process for crash, lease and concurrency tests (run as a subprocess).

    python -m tests.support.crash_worker DB COUNTER send THREAD TEXT [--hold]
    python -m tests.support.crash_worker DB COUNTER resume THREAD ANSWER_JSON
    python -m tests.support.crash_worker DB COUNTER retry THREAD
    python -m tests.support.crash_worker DB COUNTER drive PREFIX THREADS TURNS WORKERS

Prints one JSON line per event and a last line {"done": status} (or {"refused": msg},
exit code 3, when the lease or a decision check refused the run). Environment knobs:
GATEHOUSE_TEST_MODEL_SLEEP (the model stalls mid-stream), GATEHOUSE_TEST_TOOL_SLEEP,
GATEHOUSE_TEST_MARKER (a file written at the stall), GATEHOUSE_CRASH_AT.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGenerationChunk

from gatehouse.graph import (
    DecisionError,
    RunInProgress,
    ScriptedModel,
    Session,
    ai,
    build_graph,
    tool_call,
)
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.store import open_storage
from tests.support.counting_tools import make_counting_tools


def turn_reply(messages: list[BaseMessage]) -> AIMessage | str:
    """After a user message: call `bump` labelled with that message. After a tool result: finish."""
    human = [m for m in messages if isinstance(m, HumanMessage)][-1]
    calls = sum(1 for m in messages if isinstance(m, AIMessage))
    if isinstance(messages[-1], HumanMessage):
        text = str(human.content)
        tool = (
            "bump_free"
            if text.startswith("free:")
            else "touch_idem"
            if text.startswith("idem:")
            else "bump"
        )
        return ai("Working on it.", tool_call(tool, {"label": str(human.content)}, f"call{calls}"))
    return f"Done with {human.content}."


class StallingModel(ScriptedModel):
    """Stalls after the first streamed chunk when GATEHOUSE_TEST_MODEL_SLEEP is set."""

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        for i, chunk in enumerate(super()._stream(messages, stop, run_manager, **kw)):
            yield chunk
            if i == 0 and (pause := float(os.environ.get("GATEHOUSE_TEST_MODEL_SLEEP", "0") or 0)):
                if marker := os.environ.get("GATEHOUSE_TEST_MARKER"):
                    Path(marker).write_text("streaming\n")
                time.sleep(pause)


def open_session(db: str, counter: str) -> Session:
    storage = open_storage(db)
    tools = make_counting_tools(counter)
    model = StallingModel(script=[turn_reply] * 1000, chunk_chars=8)
    graph = build_graph(
        model=model,
        tools=tools,
        checkpointer=storage.checkpointer,
        journal=storage.journal,
        decisions=storage.decisions,
        outputs=storage.outputs,
        system_prompt=None,
    )
    return Session(graph, storage, tools)


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def play(run: Any) -> str | None:
    for event in run:
        emit(event.model_dump(mode="json"))
    return run.status


def drive(session: Session, prefix: str, threads: int, turns: int, workers: int) -> int:
    """Each worker thread takes its share of conversations and plays every turn:
    send -> approval -> approve -> done. Returns the number of failed turns."""
    failures: list[str] = []
    ids = [f"{prefix}-{i:02d}" for i in range(threads)]

    def work(mine: list[str]) -> None:
        for turn in range(turns):
            for tid in mine:
                for attempt in range(50):
                    try:
                        events = session.send(tid, f"{tid} turn {turn}").collect()
                        if session.view(tid).pending is not None:
                            events += session.resume(
                                tid, {"decisions": [{"type": "approve"}]}
                            ).collect()
                        break
                    except RunInProgress:
                        time.sleep(0.05 * (attempt + 1))
                bad = [e for e in events if isinstance(e, ev.ErrorEvent)]
                finished = [e for e in events if isinstance(e, ev.RunFinished)]
                if bad or not finished or finished[-1].status != "completed":
                    failures.append(
                        f"{tid} turn {turn}: {[e.message for e in bad]} {finished[-1:]}"
                    )

    share = [ids[w::workers] for w in range(workers)]
    pool = [threading.Thread(target=work, args=(s,)) for s in share]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    emit({"failures": failures})
    return len(failures)


def main(argv: list[str]) -> int:
    db, counter, command, *rest = argv
    session = open_session(db, counter)
    try:
        if command == "send":
            status = play(session.send(rest[0], rest[1]))
            emit({"done": status})
            if "--hold" in rest:
                if marker := os.environ.get("GATEHOUSE_TEST_MARKER"):
                    Path(marker).write_text("pending\n")
                time.sleep(600)
        elif command == "resume":
            emit({"done": play(session.resume(rest[0], json.loads(rest[1])))})
        elif command == "retry":
            emit({"done": play(session.retry(rest[0]))})
        elif command == "drive":
            return 1 if drive(session, rest[0], int(rest[1]), int(rest[2]), int(rest[3])) else 0
        else:
            raise SystemExit(f"unknown command {command}")
    except (RunInProgress, DecisionError) as exc:
        emit({"refused": str(exc), "error_type": type(exc).__name__})
        return 3
    finally:
        session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

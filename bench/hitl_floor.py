"""The least a human-in-the-loop resume on LangGraph costs, in a fresh process.

    uv run python -m bench.hitl_floor                  # median of 7, prints JSON
    uv run python -m bench.hitl_floor --samples 15 --out floor.json

Issue 36 asks for a cold resume by id at <= 1/4 of the peer's. This measures what no
design built on LangGraph's `interrupt()` / `Command(resume=...)` can go below, so the
target can be read against it: the smallest graph that does what one resume of the
benchmark's workload does, on a thread of one turn (nothing to decode), with nothing
of Gatehouse's or the peer's in it:

    gate (interrupt(); the answer read) → tool (one StructuredTool call) → model (one
    BaseChatModel call over the thread's messages) → END

on `SqliteSaver` over a file, driven with `stream(..., stream_mode=["messages",
"updates"])` as both systems drive theirs. Each sample is a new process that imports
everything first (and runs the same graph once on a throwaway thread, so no first-use
cost of LangGraph or LangChain is left in the sample), then times opening the saver +
compiling the graph, and the resume to the end.
"""

import argparse
import functools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
THREAD = "floor"


@functools.cache
def graph_builder() -> Any:
    """The three-node graph, uncompiled: made once per process, as an application
    defines its tools, model and nodes at import."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.types import interrupt

    class State(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages]

    @tool
    def write_record(payload: str) -> str:
        """Write a record."""
        return "stored: " + payload

    model = FakeListChatModel(responses=["done"] * 1000)

    def gate(state: State) -> dict[str, Any]:
        answer = interrupt({"action_requests": [{"name": "write_record", "args": {}}]})
        assert answer == {"decisions": [{"type": "approve"}]}, answer
        return {}

    def run_tool(state: State) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]  # type: ignore[union-attr]
        out = write_record.invoke(call["args"])
        return {"messages": [ToolMessage(out, tool_call_id=call["id"])]}

    def call_model(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def ask(state: State) -> dict[str, Any]:
        call = {"name": "write_record", "args": {"payload": "x"}, "id": "call_1"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_node("gate", gate)
    g.add_node("tool", run_tool)
    g.add_node("model", call_model)
    g.add_edge(START, "ask")
    g.add_edge("ask", "gate")
    g.add_edge("gate", "tool")
    g.add_edge("tool", "model")
    g.add_edge("model", END)
    return g


def build(db: str) -> Any:
    """Open the saver on `db` and compile the graph."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(db, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    return graph_builder().compile(checkpointer=saver), conn


def drive(graph: Any, payload: Any, thread: str) -> None:
    config = {"configurable": {"thread_id": thread}}
    for _ in graph.stream(payload, config, stream_mode=["messages", "updates"]):
        pass


def pause(graph: Any, thread: str) -> None:
    """A thread of one turn, paused at the gate."""
    drive(graph, {"messages": [("user", "write a record")]}, thread)
    assert graph.get_state({"configurable": {"thread_id": thread}}).interrupts


def sample(db: str) -> dict[str, float]:
    """In this new process: warm up on a throwaway thread, then time a resume of THREAD."""
    import gc

    from langgraph.types import Command

    warm, conn = build(db)
    pause(warm, "warm-up")
    drive(warm, Command(resume={"decisions": [{"type": "approve"}]}), "warm-up")
    conn.close()
    gc.collect()
    start = time.perf_counter()
    cpu = time.process_time()
    graph, conn = build(db)
    opened = time.perf_counter()
    drive(graph, Command(resume={"decisions": [{"type": "approve"}]}), THREAD)
    done = time.perf_counter()
    cpu_ms = (time.process_time() - cpu) * 1000
    conn.close()
    return {
        "open_ms": (opened - start) * 1000,
        "run_ms": (done - opened) * 1000,
        "total_ms": (done - start) * 1000,
        "cpu_ms": cpu_ms,
    }


def run(samples: int) -> dict[str, Any]:
    got: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(samples):
            db = str(Path(tmp) / f"floor{i}.sqlite")
            graph, conn = build(db)
            pause(graph, THREAD)
            conn.close()
            done = subprocess.run(
                [sys.executable, "-m", "bench.hitl_floor", "sample", "--db", db],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            )
            got.append(json.loads(done.stdout.strip().splitlines()[-1]))
    medians = {k: statistics.median(s[k] for s in got) for k in got[0]}
    return {"median": medians, "samples_ms": [s["total_ms"] for s in got]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd")
    one = sub.add_parser("sample", help="one sample, in this process")
    one.add_argument("--db", required=True)
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.cmd == "sample":
        print(json.dumps(sample(args.db)))
        return
    result = run(args.samples)
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()

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
"updates"])` as both systems drive theirs. Each sample is a new process that first
imports everything, including what a first run loads lazily (found once by a run on a
throwaway database, as bench.cold finds each system's), then times opening the saver,
compiling the graph and resuming to the end, twice on two paused threads:
- `total_ms`: the first resume in the process, measured as bench.cold measures a cold
  resume of Gatehouse and of the peer (the process's first-use costs included);
- `warm_total_ms`: the second, those costs paid.

`LoopFloor` is the same floor for a whole warm turn of the workload (bench.lockstep
drives it beside both systems): the smallest agent loop on LangGraph with a pause,

    model → (tool calls?) gate (interrupt()) → tools → model → … → END

with the workload's scripted model and two tools, on `SqliteSaver`, no middleware.
"""

import argparse
import functools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
THREAD = "floor"
WARM = "floor-warm"


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


class LoopFloor:
    """The least agent on LangGraph that pauses before a tool call, driven as bench.cold
    drives both systems (`send` a turn until the pause, `approve` until the answer). The
    gate pauses at every model message with tool calls and asks about the gated one."""

    def __init__(self, db: str) -> None:
        import sqlite3

        from langchain_core.messages import AnyMessage, ToolMessage
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, StateGraph
        from langgraph.graph.message import add_messages
        from langgraph.types import interrupt

        from bench.workload import TOOLS, scripted_model

        class State(TypedDict):
            messages: Annotated[list[AnyMessage], add_messages]

        model = scripted_model().bind_tools(TOOLS)  # bound once, as an application binds
        tools = {t.name: t for t in TOOLS}

        def call_model(state: State) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        def route(state: State) -> str:
            return "gate" if state["messages"][-1].tool_calls else END  # type: ignore[union-attr]  # an AI message

        def gate(state: State) -> dict[str, Any]:
            calls = state["messages"][-1].tool_calls  # type: ignore[union-attr]  # routed here for an AI message
            asked = [
                {"name": c["name"], "args": c["args"]} for c in calls if c["name"] == "gated_tool"
            ]
            answer = interrupt({"action_requests": asked})
            assert answer == {"decisions": [{"type": "approve"}]}, answer
            return {}

        def run_tools(state: State) -> dict[str, Any]:
            calls = state["messages"][-1].tool_calls  # type: ignore[union-attr]  # after the gate: an AI message
            return {
                "messages": [
                    ToolMessage(
                        tools[c["name"]].invoke(c["args"]), tool_call_id=c["id"], name=c["name"]
                    )
                    for c in calls
                ]
            }

        g = StateGraph(State)
        g.add_node("model", call_model)
        g.add_node("gate", gate)
        g.add_node("tools", run_tools)
        g.add_edge(START, "model")
        g.add_conditional_edges("model", route, ["gate", END])
        g.add_edge("gate", "tools")
        g.add_edge("tools", "model")
        self.conn = sqlite3.connect(db, check_same_thread=False)
        saver = SqliteSaver(self.conn)
        saver.setup()
        self.graph: Any = g.compile(checkpointer=saver)

    def _paused(self, payload: Any) -> bool:
        paused = False
        config = {"configurable": {"thread_id": THREAD}}
        for mode, chunk in self.graph.stream(payload, config, stream_mode=["messages", "updates"]):
            paused = paused or (mode == "updates" and "__interrupt__" in chunk)
        return paused

    def send(self, turn: int) -> None:
        from langchain_core.messages import HumanMessage

        from bench.workload import user_text

        assert self._paused({"messages": [HumanMessage(user_text(turn))]}), "expected a pause"

    def approve(self) -> None:
        from langgraph.types import Command

        assert not self._paused(Command(resume={"decisions": [{"type": "approve"}]})), (
            "expected the turn to finish"
        )

    def close(self) -> None:
        self.conn.close()


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


def timed_resume(db: str, thread: str) -> dict[str, float]:
    """Open the saver, compile the graph and resume `thread` to the end, timed."""
    from langgraph.types import Command

    start, cpu = time.perf_counter(), time.process_time()
    graph, conn = build(db)
    opened = time.perf_counter()
    drive(graph, Command(resume={"decisions": [{"type": "approve"}]}), thread)
    done = time.perf_counter()
    cpu_ms = (time.process_time() - cpu) * 1000
    conn.close()
    return {
        "open_ms": (opened - start) * 1000,
        "run_ms": (done - opened) * 1000,
        "total_ms": (done - start) * 1000,
        "cpu_ms": cpu_ms,
    }


BASE_IMPORTS = [
    "langgraph.graph",
    "langgraph.checkpoint.sqlite",
    "langchain_core.language_models.fake_chat_models",
    "langchain_core.tools",
]


def first_run_modules(db: str) -> list[str]:
    """What a first pause and resume import beyond BASE_IMPORTS (as bench.cold finds
    the modules each system loads lazily), so a sample imports them before the clock."""
    import importlib

    from langgraph.types import Command

    for name in BASE_IMPORTS:
        importlib.import_module(name)
    before = set(sys.modules)
    graph, conn = build(db)
    pause(graph, "scratch")
    drive(graph, Command(resume={"decisions": [{"type": "approve"}]}), "scratch")
    conn.close()
    return sorted(m for m in set(sys.modules) - before if not m.startswith("__"))


def sample(db: str, lazy: list[str]) -> dict[str, float]:
    """In this new process, every import done first (as bench.cold's samples do): the
    first resume (`THREAD`: cold, what bench.cold times), then a second (`WARM`: with the
    process's first-use costs paid)."""
    import contextlib
    import gc
    import importlib

    for name in BASE_IMPORTS + lazy:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    graph_builder()  # an application's tools, model and nodes are defined at its import
    gc.collect()
    cold = timed_resume(db, THREAD)
    warm = timed_resume(db, WARM)
    return {**cold, **{f"warm_{key}": value for key, value in warm.items()}}


def _json_of(*args: str) -> Any:
    from bench.cold import run_json

    return run_json(*args, module="bench.hitl_floor")


def run(samples: int) -> dict[str, Any]:
    got: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        lazy = Path(tmp) / "lazy.json"
        lazy.write_text(json.dumps(_json_of("modules", "--db", str(Path(tmp) / "scratch.sqlite"))))
        for i in range(samples):
            db = str(Path(tmp) / f"floor{i}.sqlite")
            graph, conn = build(db)
            pause(graph, THREAD)
            pause(graph, WARM)
            conn.close()
            got.append(_json_of("sample", "--db", db, "--lazy", str(lazy)))
    medians = {k: statistics.median(s[k] for s in got) for k in got[0]}
    return {"median": medians, "samples_ms": [s["total_ms"] for s in got]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd")
    one = sub.add_parser("sample", help="one sample, in this process")
    one.add_argument("--db", required=True)
    one.add_argument("--lazy", required=True, help="JSON list of modules to import first")
    mods = sub.add_parser("modules", help="the modules a first run imports (JSON)")
    mods.add_argument("--db", required=True, help="a throwaway database")
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.cmd == "sample":
        print(json.dumps(sample(args.db, json.loads(Path(args.lazy).read_text()))))
        return
    if args.cmd == "modules":
        print(json.dumps(first_run_modules(args.db)))
        return
    result = run(args.samples)
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()

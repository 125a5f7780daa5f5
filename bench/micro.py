"""Gatehouse-only measurements: thread index, event pipeline, cold start, idle memory.

    uv run python -m bench.micro --out micro.json [--quick]

- `index_list_ms`: list 1,000 threads for the sidebar (`Session.threads`), median.
- `first_text_overhead_ms`: time to the first `TextDelta` through `Session.send`
  minus time to the first model token from the bare `graph.stream` (same graph,
  same stream modes), median over fresh threads.
- `per_token_overhead_us`: (Session run - bare stream run) / tokens, for a reply
  streamed in many small chunks.
- `cold_start_s`: a fresh interpreter importing Gatehouse and building the default
  graph (`gatehouse.graph.service.app.build_agent`), measured inside that interpreter;
  `framework_floor_s`: importing only `langgraph.graph`, `BaseChatModel` and
  `SqliteSaver`; `peer_cold_start_s`: importing and building the peer's agent.
- `idle_threads_rss_mb`: RSS of a process that ran and read 100 threads, now idle.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

from bench.workload import APPROVE, TOOLS, peak_rss_mb, scripted_model, user_text


def _session(db: Path, model: Any) -> Any:
    from gatehouse.graph import Session, build_graph
    from gatehouse.graph.store import open_storage

    storage = open_storage(str(db))
    graph = build_graph(model=model, tools=TOOLS, checkpointer=storage.checkpointer)
    return Session(graph, storage, TOOLS)


def index_list_ms(tmp: Path, threads: int = 1000, repeat: int = 20) -> float:
    session = _session(tmp / "index.sqlite", scripted_model(1))
    try:
        for i in range(threads):
            session.storage.index.touch(f"t{i:05d}", title=f"Thread {i}", status="completed")
        assert len(session.thread_list(limit=threads).threads) == threads
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            _ = session.thread_list(limit=threads).threads
            times.append((time.perf_counter() - start) * 1000)
        return statistics.median(times)
    finally:
        session.close()


def event_pipeline(tmp: Path, tokens: int, repeat: int) -> dict[str, float]:
    from gatehouse.graph import ScriptedModel
    from gatehouse.graph.agent.context import RunContext
    from gatehouse.graph.protocol.events import TextDelta

    # One chunk per token: a long text answer with no tool calls.
    text = "tok " * tokens
    model = ScriptedModel(script=[text] * (repeat * 2 + 2), chunk_chars=4, usage=False)
    session = _session(tmp / "events.sqlite", model)
    first_session, first_bare, total_session, total_bare = [], [], [], []
    try:
        for i in range(repeat):
            # Bare LangGraph: the same graph, streamed as a server client streams it,
            # no Session, no events.
            config = {"configurable": {"thread_id": f"bare-{i}"}}
            start = time.perf_counter()
            first = None
            for mode, chunk in session.agent.stream(
                {"messages": [HumanMessage("hi")]},
                config,
                stream_mode=["custom", "updates"],
                context=RunContext(),
            ):
                if (
                    first is None
                    and mode == "custom"
                    and getattr(chunk, "type", None) == "text_delta"
                ):
                    first = time.perf_counter() - start
            total_bare.append(time.perf_counter() - start)
            first_bare.append(first or 0.0)
            # Through the Session: index rows, pending check, typed events, outcome.
            start = time.perf_counter()
            first = None
            for event in session.send(f"ses-{i}", "hi"):
                if first is None and isinstance(event, TextDelta):
                    first = time.perf_counter() - start
            total_session.append(time.perf_counter() - start)
            first_session.append(first or 0.0)
    finally:
        session.close()
    return {
        "tokens": tokens,
        "first_text_bare_ms": statistics.median(first_bare) * 1000,
        "first_text_session_ms": statistics.median(first_session) * 1000,
        "first_text_overhead_ms": max(
            0.0, statistics.median(first_session) - statistics.median(first_bare)
        )
        * 1000,
        "run_bare_ms": statistics.median(total_bare) * 1000,
        "run_session_ms": statistics.median(total_session) * 1000,
        "per_token_overhead_us": max(
            0.0, statistics.median(total_session) - statistics.median(total_bare)
        )
        / tokens
        * 1e6,
    }


COLD_START = """
import time
start = time.perf_counter()
from gatehouse.graph.service.app import build_agent
from gatehouse.graph.service.config import load_settings
build_agent(load_settings())
print(time.perf_counter() - start)
"""

# What every LangGraph chat agent imports before any code of its own runs: the floor
# under any cold start on this machine and this environment.
FRAMEWORK_FLOOR = """
import time
start = time.perf_counter()
import langgraph.graph
from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.sqlite import SqliteSaver
print(time.perf_counter() - start)
"""

PEER_START = """
import time
start = time.perf_counter()
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from bench.workload import TOOLS, scripted_model
create_agent(model=scripted_model(1), tools=TOOLS, middleware=[HumanInTheLoopMiddleware(interrupt_on={"gated_tool": True})])
print(time.perf_counter() - start)
"""


def cold_start_s(tmp: Path, repeat: int = 3) -> dict[str, float]:
    """Median seconds for a fresh interpreter: Gatehouse, the framework floor and the
    peer, interleaved so that a change in the machine's load hits all three alike."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEHOUSE_", "OPENAI_"))}
    env["GATEHOUSE_DB"] = str(tmp / "cold.sqlite")
    env["GATEHOUSE_WORKSPACE"] = str(tmp)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    scripts = {
        "cold_start_s": COLD_START,
        "framework_floor_s": FRAMEWORK_FLOOR,
        "peer_cold_start_s": PEER_START,
    }
    times: dict[str, list[float]] = {name: [] for name in scripts}
    for _ in range(repeat):
        for name, script in scripts.items():
            out = subprocess.run(
                [sys.executable, "-c", script],
                cwd=tmp,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            times[name].append(float(out.stdout.strip().splitlines()[-1]))
    return {name: statistics.median(values) for name, values in times.items()}


IDLE = """
import json, sys
from pathlib import Path
from bench.micro import serve_threads
print(json.dumps(serve_threads(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))))
"""


def serve_threads(tmp: Path, threads: int, turns: int) -> dict[str, float]:
    """Run `turns` turns on each of `threads` threads, read each back, then idle."""
    import psutil

    session = _session(tmp / "idle.sqlite", scripted_model(turns))
    for t in range(threads):
        thread_id = f"idle-{t}"
        for turn in range(1, turns + 1):
            session.send(thread_id, user_text(turn)).collect()
            session.resume(thread_id, APPROVE).collect()
    for t in range(threads):  # a sidebar click on each: the messages and any approval
        view = session.view(f"idle-{t}")
        _ = view.messages, view.pending
    gc.collect()
    rss = psutil.Process().memory_info().rss / 2**20
    session.close()
    return {"threads": threads, "turns_each": turns, "rss_mb": rss, "peak_rss_mb": peak_rss_mb()}


def idle_threads(tmp: Path, threads: int, turns: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    out = subprocess.run(
        [sys.executable, "-c", IDLE, str(tmp), str(threads), str(turns)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gatehouse-micro-") as name:
        tmp = Path(name)
        result: dict[str, Any] = {"index_list_ms": index_list_ms(tmp, threads=1000)}
        result.update(event_pipeline(tmp, tokens=200 if quick else 2000, repeat=3 if quick else 11))
        result.update(cold_start_s(tmp, repeat=1 if quick else 5))
        idle = idle_threads(tmp, threads=10 if quick else 100, turns=2 if quick else 10)
        result["idle_threads"] = idle["threads"]
        result["idle_turns_each"] = idle["turns_each"]
        result["idle_threads_rss_mb"] = idle["rss_mb"]
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    Path(args.out).write_text(json.dumps(run(args.quick)))


if __name__ == "__main__":
    main()

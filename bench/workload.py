"""The long-thread workload, run through Gatehouse or the peer in one process.

One thread of N turns. Each turn: the user writes; the model calls one gated tool
(approved) and one free tool in the same message, then answers in text. Every
message carries about 200 bytes of payload. The model is scripted and answers at
once, so what is measured is the framework: checkpoints, state reads, streaming.

    uv run python -m bench.workload --system gatehouse --turns 400 --out r.json

Run by `bench.run` in a fresh subprocess per system, so peak RSS is per system.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from gatehouse.graph import ScriptedModel, ai, tool_call
from gatehouse.tools.base import gatehouse_tool

PAYLOAD_BYTES = 200
APPROVE = {"decisions": [{"type": "approve"}]}
SYSTEMS = ("gatehouse", "gatehouse-baseline", "peer")


def payload(kind: str, turn: int) -> str:
    """About PAYLOAD_BYTES of text, different per turn (no accidental dedup)."""
    head = f"{kind} {turn}: "
    filler = "lorem ipsum dolor sit amet consectetur adipiscing elit "
    body = (filler * (PAYLOAD_BYTES // len(filler) + 1))[: PAYLOAD_BYTES - len(head)]
    return head + body


@gatehouse_tool(risk="write")
def gated_tool(payload: str) -> str:
    """Write a record (a person must approve)."""
    return "stored: " + payload[: PAYLOAD_BYTES - 8]


@gatehouse_tool(risk="read")
def free_tool(query: str) -> str:
    """Look something up (runs freely)."""
    return "found: " + query[: PAYLOAD_BYTES - 7]


TOOLS = [gated_tool, free_tool]


def turn_reply(messages: list[BaseMessage]) -> AIMessage:
    """Tool calls right after the user's message, a text answer after the results."""
    # The turn is in the last user message ("user N: ..."); read from the end, so the
    # model's own cost does not grow with the thread.
    last = str(next(m for m in reversed(messages) if isinstance(m, HumanMessage)).content)
    head = last.split(":", 1)[0]
    if head.startswith("user ") and head[5:].isdigit():
        turn = int(head[5:])
    else:  # a message of another shape (a test's own): count the user messages
        turn = sum(1 for m in messages if isinstance(m, HumanMessage))
    if isinstance(messages[-1], ToolMessage):
        return ai(payload("answer", turn))
    return ai(
        "",
        tool_call("gated_tool", {"payload": payload("gated", turn)}, f"gated-{turn}"),
        tool_call("free_tool", {"query": payload("free", turn)}, f"free-{turn}"),
    )


class WorkloadModel(ScriptedModel):
    """`turn_reply` for every call. A script of 2N copies of it would do the same, but
    a new process pays for it: pydantic validates the list and LangChain prints the
    model (script included) on its first call, a few ms that no real model costs."""

    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        return turn_reply(messages)

    def bind_tools(self, tools: Any, **kwargs: Any) -> WorkloadModel:
        # What a real client (ChatOpenAI) does with the tools it is given: each becomes
        # an OpenAI tool definition. Both systems pay it as they would with one.
        from langchain_core.utils.function_calling import convert_to_openai_tool

        for t in tools:
            convert_to_openai_tool(t)
        return self


class DefaultToolsModel(WorkloadModel):
    """The workload on Gatehouse's default toolset: each turn one gated `write_file`
    and one free `read_file` (of a README the bench puts in the workspace), with the
    same payloads."""

    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        reply = turn_reply(messages)
        if not reply.tool_calls:
            return reply
        turn = int(str(reply.tool_calls[0]["id"]).removeprefix("gated-"))
        return ai(
            "",
            tool_call(
                "write_file",
                {"path": f"notes/{turn % 10}.md", "content": payload("gated", turn)},
                f"gated-{turn}",
            ),
            tool_call("read_file", {"path": "README.md"}, f"free-{turn}"),
        )


def scripted_model(turns: int = 0) -> ScriptedModel:
    """The model of both systems (any number of turns); chunk_chars like a real
    provider's small deltas."""
    return WorkloadModel(chunk_chars=16, usage=True)


def user_text(turn: int) -> str:
    return payload("user", turn)


# -- the two systems ---------------------------------------------------------------
class Driver:
    """Runs one turn (message, approval, answer) and reads the thread."""

    db: Path
    conn: sqlite3.Connection

    def send(self, turn: int) -> None: ...
    def resume(self) -> None: ...
    def get_state(self) -> Any: ...
    def message_count(self) -> int: ...
    def close(self) -> None: ...


class GatehouseDriver(Driver):
    """Gatehouse through its Session API, on its default storage."""

    def __init__(
        self, db: Path, turns: int, *, baseline: bool = False, snapshot_frequency: int | None = None
    ) -> None:
        from gatehouse.graph import Session, build_graph
        from gatehouse.graph.store import open_storage

        if baseline:
            use_add_messages_state()
        elif snapshot_frequency:
            use_snapshot_frequency(snapshot_frequency)
        self.db = db
        self.storage = open_storage(str(db))
        self.conn = self.storage.checkpointer.conn  # type: ignore[attr-defined]
        if baseline:  # and the stock saver: no compression, no cache
            from langgraph.checkpoint.sqlite import SqliteSaver

            self.storage.checkpointer = SqliteSaver(self.conn)
        graph = build_graph(
            model=scripted_model(turns), tools=TOOLS, checkpointer=self.storage.checkpointer
        )
        self.session = Session(graph, self.storage, TOOLS)
        self.thread_id = "bench-thread"

    def send(self, turn: int) -> None:
        run = self.session.send(self.thread_id, user_text(turn))
        run.collect()
        assert run.status == "awaiting_approval", run.status

    def resume(self) -> None:
        run = self.session.resume(self.thread_id, APPROVE)
        run.collect()
        assert run.status == "completed", run.status

    def get_state(self) -> Any:
        return self.session.agent.get_state({"configurable": {"thread_id": self.thread_id}})

    def message_count(self) -> int:
        return len(self.session.view(self.thread_id).messages)

    def cold_get_state(self) -> Any:
        """The first read after a restart: the warm cache emptied first."""
        clear = getattr(self.storage.checkpointer, "clear_cache", None)
        if clear is not None:
            clear()
        return self.get_state()

    def close(self) -> None:
        self.session.close()


class PeerDriver(Driver):
    """`create_agent` + `HumanInTheLoopMiddleware` + `SqliteSaver`, the documented way."""

    def __init__(self, db: Path, turns: int) -> None:
        from langchain.agents import create_agent
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.db = db
        self.conn = sqlite3.connect(str(db), check_same_thread=False)
        self.saver = SqliteSaver(self.conn)
        self.saver.setup()
        self.agent = create_agent(
            model=scripted_model(turns),
            tools=TOOLS,
            middleware=[HumanInTheLoopMiddleware(interrupt_on={"gated_tool": True})],
            checkpointer=self.saver,
        )
        self.config = {"configurable": {"thread_id": "bench-thread"}}

    def _drain(self, payload: Any) -> bool:
        interrupted = False
        # Streamed like Gatehouse streams (tokens + updates), every chunk consumed.
        for mode, chunk in self.agent.stream(
            payload, self.config, stream_mode=["messages", "updates"]
        ):
            if mode == "updates" and "__interrupt__" in chunk:
                interrupted = True
        return interrupted

    def send(self, turn: int) -> None:
        assert self._drain({"messages": [HumanMessage(user_text(turn))]}), (
            "expected an approval request"
        )

    def resume(self) -> None:
        from langgraph.types import Command

        assert not self._drain(Command(resume=APPROVE)), "expected the turn to finish"

    def get_state(self) -> Any:
        return self.agent.get_state(self.config)

    def message_count(self) -> int:
        return len(self.get_state().values.get("messages", []))

    def close(self) -> None:
        self.conn.close()


def use_messages_channel(annotation: Any) -> None:
    """Build Gatehouse graphs (in this process) whose messages channel is `annotation`
    instead of the shipped DeltaChannel: for baselines and sweeps."""
    from typing import get_type_hints

    from typing_extensions import TypedDict

    import gatehouse.graph.agent.graph as agent_graph
    from gatehouse.graph.agent.state import AgentState

    fields = get_type_hints(AgentState, include_extras=True)
    fields["messages"] = annotation
    agent_graph.AgentState = TypedDict("AgentState", fields)  # type: ignore[attr-defined,misc]
    agent_graph.InputState = TypedDict("InputState", {"messages": annotation})  # type: ignore[attr-defined,misc]


def use_add_messages_state() -> None:
    """Build Gatehouse graphs with the pre-issue-8 messages channel (`add_messages`,
    the whole list in every checkpoint): the baseline to measure against."""
    from typing import Annotated

    from langchain_core.messages import AnyMessage
    from langgraph.graph.message import add_messages

    use_messages_channel(Annotated[list[AnyMessage], add_messages])


def use_snapshot_frequency(frequency: int) -> None:
    """Build Gatehouse graphs whose messages DeltaChannel snapshots every `frequency` updates."""
    from typing import Annotated

    from langchain_core.messages import AnyMessage
    from langgraph.channels.delta import DeltaChannel

    from gatehouse.graph.agent.message_merge import merge_messages

    use_messages_channel(
        Annotated[list[AnyMessage], DeltaChannel(merge_messages, snapshot_frequency=frequency)]
    )


def make_driver(system: str, db: Path, turns: int, snapshot_frequency: int | None = None) -> Driver:
    if system == "gatehouse":
        return GatehouseDriver(db, turns, snapshot_frequency=snapshot_frequency)
    if system == "gatehouse-baseline":
        return GatehouseDriver(db, turns, baseline=True)
    if system == "peer":
        return PeerDriver(db, turns)
    raise ValueError(f"unknown system {system!r}; one of {', '.join(SYSTEMS)}")


# -- measuring ---------------------------------------------------------------------
def db_bytes(driver: Driver, *, exact: bool) -> int:
    """Bytes on disk after folding the WAL in (`exact`), else the database's logical
    size (pages x page size, WAL included) without touching the files."""
    if not exact:
        pages = driver.conn.execute("PRAGMA page_count").fetchone()[0]
        return pages * driver.conn.execute("PRAGMA page_size").fetchone()[0]
    driver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    total = 0
    for suffix in ("", "-wal"):
        path = Path(str(driver.db) + suffix)
        if path.exists():
            total += path.stat().st_size
    return total


def ms(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def median_ms(fn: Callable[[], Any], repeat: int = 5) -> float:
    return statistics.median(ms(fn) for _ in range(repeat))


def peak_rss_mb() -> float:
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / 1024 if sys.platform != "darwin" else kb / 1024 / 1024


def run(
    system: str, turns: int, milestones: list[int], db: Path, snapshot_frequency: int | None = None
) -> dict[str, Any]:
    """Drive one thread for `turns` turns; snapshot the metrics at each milestone."""
    driver = make_driver(system, db, turns, snapshot_frequency)
    turn_ms: list[float] = []
    turn_cpu_ms: list[float] = []  # this process's CPU time: robust to a busy machine
    resume_ms: list[float] = []
    size: list[int] = []
    at: dict[str, Any] = {}
    started = time.perf_counter()
    try:
        for turn in range(1, turns + 1):
            cpu = time.process_time()
            send = ms(lambda t=turn: driver.send(t))
            resume = ms(driver.resume)
            turn_cpu_ms.append((time.process_time() - cpu) * 1000)
            turn_ms.append(send + resume)
            resume_ms.append(resume)
            exact = turn in milestones
            size.append(db_bytes(driver, exact=exact))
            if exact:
                at[str(turn)] = {
                    "turn": turn,
                    "per_turn_ms_first10": statistics.median(turn_ms[:10]),
                    "per_turn_ms_last10": statistics.median(turn_ms[-10:]),
                    "per_turn_cpu_ms_first10": statistics.median(turn_cpu_ms[:10]),
                    "per_turn_cpu_ms_last10": statistics.median(turn_cpu_ms[-10:]),
                    "resume_ms_last10": statistics.median(resume_ms[-10:]),
                    "db_bytes": size[-1],
                    "get_state_ms": median_ms(driver.get_state),
                    "get_state_cold_ms": median_ms(
                        getattr(driver, "cold_get_state", driver.get_state), 3
                    ),
                    "messages": driver.message_count(),
                    "peak_rss_mb": peak_rss_mb(),
                    "elapsed_s": time.perf_counter() - started,
                }
    finally:
        driver.close()
    return {
        "system": system,
        "turns": turns,
        "turn_ms": turn_ms,
        "turn_cpu_ms": turn_cpu_ms,
        "resume_ms": resume_ms,
        "db_bytes": size,
        "at": at,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--system", choices=SYSTEMS, required=True)
    parser.add_argument("--turns", type=int, required=True)
    parser.add_argument(
        "--milestones", default="", help="comma-separated turns to snapshot (default: the last)"
    )
    parser.add_argument("--db", default=None, help="SQLite file (default: a fresh temporary file)")
    parser.add_argument(
        "--snapshot-frequency",
        type=int,
        default=None,
        help="gatehouse only: DeltaChannel snapshot_frequency",
    )
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    milestones = sorted({int(x) for x in args.milestones.split(",") if x} | {args.turns})
    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as tmp:
        db = Path(args.db) if args.db else Path(tmp) / f"{args.system}.sqlite"
        if db.exists():
            raise SystemExit(f"{db} exists; the workload needs a fresh database")
        result = run(args.system, args.turns, milestones, db, args.snapshot_frequency)
    result["peak_rss_mb"] = peak_rss_mb()
    result["pid"] = os.getpid()
    Path(args.out).write_text(json.dumps(result))


if __name__ == "__main__":
    main()

"""The processes of the load bench (bench/load.py): app workers and the approver, for
Gatehouse (its `Session`) and the peer (`create_agent` + `HumanInTheLoopMiddleware`
+ the official `PostgresSaver`), on one Postgres.

    python -m bench.load_procs worker SYSTEM URL DIR TURNS THREAD_ID...
    python -m bench.load_procs approver SYSTEM URL DIR

They talk JSON lines with bench/load.py. A worker plays its threads' turns at once (a
Python thread per conversation): it sends the message, says `card` when the
approval request is saved, and waits for `done` before the next turn. The approver
decides each `card` it is told of through the public way in (what is pending on the
thread, then the answer by request id: Gatehouse `pending` + `resume(...,
interrupt_id=...)`, the peer `get_state().interrupts` + `Command(resume={id: ...})`),
which runs the approved call in the approver's process, and says `done`.

After a fault (a kill -9, a Postgres restart) each side finds where the thread is and
carries on: a pending question is answered ("outcome unknown": the person says it
ran), an unfinished run is continued by thread id (`retry` / `stream(None)`), a
message the database never saved is sent again.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from bench.workload import WorkloadModel
from gatehouse.graph import ai, tool_call
from gatehouse.tools.base import gatehouse_tool

MODEL_LATENCY_S = float(os.environ.get("GATEHOUSE_LOAD_MODEL_MS", "150")) / 1000
APPROVE = {"decisions": [{"type": "approve"}]}
RAN = {"type": "respond", "message": "Checked: it ran."}
_emit_lock = threading.Lock()


def emit(**fields: Any) -> None:
    with _emit_lock:
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()
        if "error" in fields:  # and in the process's log (bench/load.py keeps it)
            print(json.dumps(fields), file=sys.stderr, flush=True)


# -- the workload: one gated call (approved) and one free call per turn ----------------
@gatehouse_tool(risk="write")
def gated_tool(payload: str) -> str:
    """Write a record (a person must approve)."""
    # Each run is a line in this process's file: the bench counts runs per call.
    with open(Path(os.environ["GATEHOUSE_LOAD_DIR"]) / f"runs-{os.getpid()}.txt", "a") as f:
        f.write(payload + "\n")
    slow = os.environ.get("GATEHOUSE_LOAD_SLOW_TURN")
    if slow is not None and payload.endswith(f" turn {slow}"):
        time.sleep(30)  # the fault run kills the process here
    return "stored: " + payload


@gatehouse_tool(risk="read")
def free_tool(query: str) -> str:
    """Look something up (runs freely)."""
    return "found: " + query


TOOLS = [gated_tool, free_tool]


def user_text(thread_id: str, turn: int) -> str:
    return f"{thread_id} turn {turn}: please store a record"


class LatencyModel(WorkloadModel):
    """Answers like the workload's model, after an LLM's latency: the gated and the
    free call after the user's message, a text answer after the results."""

    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        time.sleep(MODEL_LATENCY_S)
        last = str(next(m for m in reversed(messages) if isinstance(m, HumanMessage)).content)
        label = last.split(":", 1)[0]
        turn = label.rsplit(" ", 1)[1]
        if isinstance(messages[-1], ToolMessage):
            return ai(f"Stored the record for {label}.")
        return ai(
            "",
            tool_call("gated_tool", {"payload": label}, f"gated-{turn}"),
            tool_call("free_tool", {"query": label}, f"free-{turn}"),
        )


# -- the two systems -----------------------------------------------------------------
class App:
    """One system as a process uses it."""

    graph: Any

    def send(self, thread_id: str, text: str) -> None: ...
    def pause(self, thread_id: str) -> tuple[str, str] | None: ...
    def answer(self, thread_id: str, interrupt_id: str, answer: Any) -> None: ...
    def carry_on(self, thread_id: str) -> None: ...
    def close(self) -> None: ...

    def messages(self, thread_id: str) -> list[BaseMessage]:
        state = self.graph.get_state({"configurable": {"thread_id": thread_id}})
        return list((state.values or {}).get("messages", []))

    def unfinished(self, thread_id: str) -> bool:
        """A run is due: a next step, or a user's message nothing answered yet."""
        state = self.graph.get_state({"configurable": {"thread_id": thread_id}})
        last = ((state.values or {}).get("messages") or [None])[-1]
        return bool(state.next) or isinstance(last, HumanMessage)


class Gatehouse(App):
    def __init__(self, url: str) -> None:
        from gatehouse.graph import Session, build_graph
        from gatehouse.graph.store import open_storage

        storage = open_storage(url)
        self.graph = build_graph(
            model=LatencyModel(chunk_chars=16, usage=True),
            tools=TOOLS,
            checkpointer=storage.checkpointer,
            journal=storage.journal,
            decisions=storage.decisions,
            outputs=storage.outputs,
            system_prompt=None,
        )
        self.session = Session(self.graph, storage, TOOLS, source="bench")

    @staticmethod
    def _ended(run: Any) -> None:
        run.collect()
        if run.status == "failed":
            raise RuntimeError(f"run failed: {run.reason if hasattr(run, 'reason') else ''}")

    def send(self, thread_id: str, text: str) -> None:
        self._ended(self.session.send(thread_id, text))

    def pause(self, thread_id: str) -> tuple[str, str] | None:
        p = self.session.view(thread_id).pending
        return None if p is None else (p.kind, p.interrupt_id)

    def answer(self, thread_id: str, interrupt_id: str, answer: Any) -> None:
        self._ended(self.session.resume(thread_id, answer, interrupt_id=interrupt_id))

    def carry_on(self, thread_id: str) -> None:
        self._ended(self.session.retry(thread_id))

    def close(self) -> None:
        self.session.close()


class Peer(App):
    def __init__(self, url: str) -> None:
        from langchain.agents import create_agent
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        self.pool = ConnectionPool(
            url,
            min_size=1,
            max_size=10,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
            open=True,
        )
        self.graph = create_agent(
            model=LatencyModel(chunk_chars=16, usage=True),
            tools=TOOLS,
            middleware=[HumanInTheLoopMiddleware(interrupt_on={"gated_tool": True})],
            checkpointer=PostgresSaver(self.pool),  # type: ignore[arg-type]
        )

    def _drain(self, thread_id: str, payload: Any) -> None:
        config = {"configurable": {"thread_id": thread_id}}
        for _ in self.graph.stream(payload, config, stream_mode=["messages", "updates"]):
            pass

    def send(self, thread_id: str, text: str) -> None:
        self._drain(thread_id, {"messages": [HumanMessage(text)]})

    def pause(self, thread_id: str) -> tuple[str, str] | None:
        state = self.graph.get_state({"configurable": {"thread_id": thread_id}})
        return ("approval", state.interrupts[0].id) if state.interrupts else None

    def answer(self, thread_id: str, interrupt_id: str, answer: Any) -> None:
        from langgraph.types import Command

        self._drain(thread_id, Command(resume={interrupt_id: answer}))

    def carry_on(self, thread_id: str) -> None:
        self._drain(thread_id, None)  # resumed by thread id: the documented way

    def close(self) -> None:
        self.pool.close()


def open_app(system: str, url: str) -> App:
    return Gatehouse(url) if system == "gatehouse" else Peer(url)


def turn_done(app: App, thread_id: str, turn: int) -> bool:
    messages = app.messages(thread_id)
    humans = sum(1 for m in messages if isinstance(m, HumanMessage))
    last = messages[-1] if messages else None
    return humans == turn + 1 and isinstance(last, AIMessage) and not last.tool_calls


# -- a worker: sends, and waits for each turn's answer --------------------------------
def worker(app: App, turns: int, thread_ids: list[str]) -> None:
    done = {t: threading.Semaphore(0) for t in thread_ids}

    go = threading.Event()

    def listen() -> None:
        for line in sys.stdin:
            message = json.loads(line)
            if "go" in message:
                go.set()
            else:
                done[message["done"]].release()

    def converse(thread_id: str) -> None:
        for turn in range(turns):
            started = time.perf_counter()
            try:
                errors = profiled(send_until_paused, app, thread_id, turn)
            except Stuck as exc:  # a lost turn: counted, and the thread's other turns too
                emit(stuck=thread_id, turn=turn, state=str(exc))
                return
            emit(
                card=thread_id,
                turn=turn,
                ms=(time.perf_counter() - started) * 1000,
                errors=errors,
            )
            done[thread_id].acquire()

    threading.Thread(target=listen, daemon=True).start()
    emit(ready=True)
    go.wait()
    emit(started=True, cpu=time.process_time())
    with ThreadPoolExecutor(len(thread_ids)) as pool:
        list(pool.map(converse, thread_ids))
    emit(finished=True, cpu=time.process_time())


def send_until_paused(app: App, thread_id: str, turn: int) -> int:
    """Send the turn's message until its approval request is saved; errors met."""
    errors = 0
    for _ in range(100):
        try:
            if errors == 0:
                app.send(thread_id, user_text(thread_id, turn))
                return 0
            if app.pause(thread_id) is None:
                if app.unfinished(thread_id):
                    app.carry_on(thread_id)
                elif sum(isinstance(m, HumanMessage) for m in app.messages(thread_id)) <= turn:
                    app.send(thread_id, user_text(thread_id, turn))  # never saved
            if app.pause(thread_id) is not None:
                return errors
            time.sleep(0.2)
        except Exception as exc:
            errors += 1
            emit(error=f"{type(exc).__name__}: {str(exc)[:200]}", thread=thread_id, side="send")
            time.sleep(0.3)
    raise Stuck(describe(app, thread_id))


class Stuck(RuntimeError):
    """A thread that is neither paused nor running nor done, however often asked."""


def describe(app: App, thread_id: str) -> str:
    state = app.graph.get_state({"configurable": {"thread_id": thread_id}})
    last = (state.values or {}).get("messages", [None])[-1]
    return (
        f"next={state.next} interrupts={len(state.interrupts)} last={type(last).__name__} "
        f"calls={len(getattr(last, 'tool_calls', None) or [])}"
    )


# -- the approver: decides every card it is told of ------------------------------------
def approver(app: App) -> None:
    def decide(thread_id: str, turn: int) -> None:
        started = time.perf_counter()
        errors = asked = 0
        for _ in range(100):
            try:
                pause = app.pause(thread_id)
                if pause is not None:
                    kind, interrupt_id = pause
                    asked += kind == "outcome_unknown"
                    emit(approve=thread_id, turn=turn, kind=kind)
                    app.answer(
                        thread_id, interrupt_id, RAN if kind == "outcome_unknown" else APPROVE
                    )
                    break  # the answer's run finished the turn
                if app.unfinished(thread_id):
                    app.carry_on(thread_id)  # a crash or a failure cut the run off
                if turn_done(app, thread_id, turn):
                    break
                time.sleep(0.1)
            except Exception as exc:
                errors += 1
                emit(
                    error=f"{type(exc).__name__}: {str(exc)[:200]}",
                    thread=thread_id,
                    side="approve",
                )
                time.sleep(0.3)
        emit(
            done=thread_id,
            turn=turn,
            ms=(time.perf_counter() - started) * 1000,
            errors=errors,
            asked=asked,
        )

    emit(ready=True, cpu=time.process_time())
    with ThreadPoolExecutor(32) as pool:
        for line in sys.stdin:
            card = json.loads(line)
            pool.submit(profiled, decide, card["card"], card["turn"])
    emit(finished=True, cpu=time.process_time())


def main(argv: list[str]) -> None:
    role, system, url, folder, *rest = argv
    os.environ["GATEHOUSE_LOAD_DIR"] = folder
    app = open_app(system, url)
    try:
        if role == "worker":
            worker(app, int(rest[0]), rest[1:])
        else:
            approver(app)
    finally:
        if _profiles:
            import pstats

            pstats.Stats(*_profiles).dump_stats(Path(folder) / f"{role}-{os.getpid()}.prof")
        app.close()


_profiles: list[Any] = []


def profiled(fn: Any, *args: Any) -> Any:
    """`fn(*args)`, under cProfile when GATEHOUSE_LOAD_PROFILE is set (bench/load.py
    --profile): a profile per call, as cProfile sees only its own thread."""
    if not os.environ.get("GATEHOUSE_LOAD_PROFILE"):
        return fn(*args)
    import cProfile

    profile = cProfile.Profile()
    try:
        return profile.runcall(fn, *args)
    finally:
        with _emit_lock:
            _profiles.append(profile)


if __name__ == "__main__":
    main(sys.argv[1:])

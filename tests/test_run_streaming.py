"""How the Session streams a run (graph/service/run.py, workers.py): the run goes
on in a reused worker thread, its events reach the caller as they happen, an early
close stops it and frees the thread, an error reaches the caller; clients of the
compiled graph still get the events on LangGraph's `custom` stream."""

from __future__ import annotations

import contextvars
import gc
import os
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessageChunk, HumanMessage
from langchain_core.outputs import ChatGenerationChunk

from gatehouse.graph import ScriptedModel, Session, ai, build_graph, tool_call
from gatehouse.graph.agent.context import RunContext
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.service import workers
from gatehouse.graph.store import open_storage
from tests.support.core_fixtures import make_session

WAIT_S = 30.0


class WaitingModel(ScriptedModel):
    """Streams "Hello", then waits until `resume` is set before it streams the rest."""

    resume: Any = None
    waited: list[bool] = []

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        yield ChatGenerationChunk(message=AIMessageChunk(content="Hello"))
        self.waited.append(self.resume.wait(WAIT_S))
        yield ChatGenerationChunk(message=AIMessageChunk(content=", world."))


def session_for(tmp_path: Path, model: Any) -> Session:
    storage = open_storage(str(tmp_path / "gatehouse.db"))
    graph = build_graph(model=model, tools=[], checkpointer=storage.checkpointer)
    return Session(graph, storage, [])


def test_text_reaches_the_caller_while_the_model_is_still_streaming(tmp_path: Path) -> None:
    resume = threading.Event()
    model = WaitingModel(script=[], resume=resume, waited=[])
    session = session_for(tmp_path, model)
    try:
        texts = []
        for event in session.send("t1", "hi"):
            if isinstance(event, ev.TextDelta):
                texts.append(event.text)
                resume.set()  # only now may the model go on
        assert model.waited == [True], "the first text came only after the model had finished"
        assert "".join(texts) == "Hello, world."
        assert session.view("t1").info.status == "completed"  # type: ignore[union-attr]  # the thread exists: it just ran
    finally:
        session.close()


def test_a_run_closed_early_stops_and_leaves_the_thread_free(tmp_path: Path) -> None:
    resume = threading.Event()
    model = WaitingModel(script=[], resume=resume, waited=[])
    session = session_for(tmp_path, model)
    try:
        run = iter(session.send("t1", "hi"))
        first = next(e for e in run if isinstance(e, ev.TextDelta))
        assert first.text == "Hello"
        resume.set()
        run.close()  # returns once the run has stopped: the lease is free again
        events = session.send("t1", "again").collect()
        assert isinstance(events[-1], ev.RunFinished) and events[-1].status == "completed"
    finally:
        session.close()


def test_an_error_in_the_run_reaches_the_caller_as_a_failed_run(tmp_path: Path) -> None:
    class Broken(ScriptedModel):
        def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
            raise ValueError("the model broke")
            yield  # a generator

    session = session_for(tmp_path, Broken(script=[]))
    try:
        events = session.send("t1", "hi").collect()
        finished = events[-1]
        assert isinstance(finished, ev.RunFinished) and finished.status == "failed"
        assert "the model broke" in (finished.reason or "")
    finally:
        session.close()


def test_the_compiled_graph_still_streams_events_on_the_custom_stream(tmp_path: Path) -> None:
    """LangGraph Server, Studio and the raw graph get the events as before."""
    session = session_for(tmp_path, ScriptedModel(script=["Hello there."], chunk_chars=4))
    try:
        custom = [
            chunk
            for mode, chunk in session.agent.stream(
                {"messages": [HumanMessage("hi")]},
                {"configurable": {"thread_id": "raw"}},
                stream_mode=["custom", "updates"],
                context=RunContext(),
            )
            if mode == "custom"
        ]
        text = "".join(e.text for e in custom if isinstance(e, ev.TextDelta))
        assert text == "Hello there."
    finally:
        session.close()


def test_a_worker_is_reused_runs_in_the_callers_context_and_keeps_nothing(
    tmp_path: Path,
) -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    class Payload:
        pass

    payload = Payload()
    kept = weakref.ref(payload)

    def job(item: Payload | None = payload) -> None:
        seen.append((threading.current_thread().name, var.get()))
        var.set("set by the job")
        done.set()

    var.set("the caller's")
    workers.run_in_worker(job)
    assert done.wait(WAIT_S)
    del job, payload
    done.clear()
    # An idle worker takes the next job: a thread that was there before it.
    before = {t.ident for t in threading.enumerate()}
    ran_on: list[int | None] = []
    workers.run_in_worker(
        lambda: (ran_on.append(threading.get_ident()), seen.append(("", var.get())), done.set())
    )
    assert done.wait(WAIT_S)
    assert ran_on[0] in before, "a new thread was started although a worker was idle"
    assert seen[0] == ("gatehouse-run", "the caller's")
    assert seen[1][1] == "the caller's", "a job saw what the job before it set"
    gc.collect()
    assert kept() is None, "the worker kept the finished job's objects alive"


def test_a_forked_child_runs_a_job_although_the_parents_workers_are_idle() -> None:
    done = threading.Event()
    workers.run_in_worker(done.set)
    assert done.wait(WAIT_S)  # now a worker of this process is idle
    pid = os.fork()
    if pid == 0:  # the child: its job must run, not wait for a thread it does not have
        ran = threading.Event()
        workers.run_in_worker(ran.set)
        os._exit(0 if ran.wait(WAIT_S) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_next_step_waits_until_the_caller_asks_for_more(tmp_path: Path) -> None:
    """As with LangGraph's own stream: while the caller is still busy with an event of a
    step (here for longer than the next model call takes), the run does not go on; so a
    cancel (a person's Stop) made on that event is seen by the very next step."""
    called_again = threading.Event()

    def answer(_messages: Any) -> str:
        called_again.set()
        return "done"

    session, ledger, _ = make_session(
        tmp_path, [ai("", tool_call("lookup", {"key": "a"}, "l1")), answer]
    )
    try:
        went_on = []
        run = session.send("t1", "go")
        for event in run:
            if isinstance(event, ev.ToolFinished) and event.call_id == "l1":
                went_on.append(called_again.wait(0.5))
                run.cancel()
        assert went_on == [False], "the model was called again while the caller was busy"
        assert run.status == "cancelled" and not called_again.is_set()
        assert ledger.count("lookup") == 1
    finally:
        session.close()

"""How the Session streams a run of the agent, and how what it streams becomes Gatehouse
events (no printed-text parsing).

`stream_run` streams LangGraph's `updates` (`__interrupt__` -> `ApprovalRequired`, and
what `drive` learns of the run's end) and takes the run's own events (the typed events
nodes, tools and hooks emit, the model's text deltas included: graph/agent/emit.py)
from a sink in the run's context, not from LangGraph's `custom` stream. With `custom`
(or `messages`) in its stream modes LangGraph runs every task of every step on a
thread pool it builds for each run, with a second thread waiting on the stream: about
a quarter of a short turn (BENCHMARKS.md). Without them a step's single task runs
inline; so the whole run runs on one worker thread (graph/service/workers.py), and its
events reach the caller through one queue, as they happen.

Not `messages`: LangGraph's handler for it scans the whole state at the start of every
node (a cost that grows with the thread). LangGraph Server and Studio clients, and
anyone who streams the compiled graph, still get the events in `custom` and may ask
for `messages`; the model's tokens arrive there as usual.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from queue import SimpleQueue
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from graph.agent.context import RunContext
from graph.protocol import events as ev
from graph.service.workers import run_in_worker
from graph.store.langgraph_private import INTERRUPT

# What `stream_run` yields besides `updates` chunks: one of the run's events.
EVENT = "custom"
_DONE = "done"
_FAILED = "failed"


def stream_run(
    agent: CompiledStateGraph[Any, Any, Any, Any],
    payload: Any,
    config: RunnableConfig,
    context: RunContext,
) -> Iterator[tuple[str, Any]]:
    """One run of `agent` from `payload`, as `("updates", chunk)` and `(EVENT, event)`
    pairs in the order they happen. The run goes on in a worker thread; an error it
    raises is raised here. As with LangGraph's own stream, a step starts only once the
    caller has taken the previous step's update and asked for more: what the caller
    does on an event (a cancel, a person's Stop) is seen by the next step. Closing the
    iterator early stops the run after the step under way and returns once it has
    stopped.

    `durability="sync"`: each step's checkpoint is written before the next step starts,
    not handed to a background thread: no step's result can be lost to a crash after
    the next one began, and it is also faster here than the thread handoff."""
    items: SimpleQueue[tuple[str, Any]] = SimpleQueue()
    context.send_events_to(lambda event: items.put((EVENT, event)))
    stop = threading.Event()
    stopped = threading.Event()
    taken = threading.Semaphore(0)  # released each time the caller asks past an update
    worker: list[int] = []

    def run() -> None:
        worker.append(threading.get_ident())
        try:
            for chunk in agent.stream(
                payload, config, stream_mode="updates", context=context, durability="sync"
            ):
                items.put(("updates", chunk))
                taken.acquire()
                if stop.is_set():
                    break
        except BaseException as exc:  # handed to the caller's thread, raised there
            items.put((_FAILED, exc))
        else:
            items.put((_DONE, None))
        finally:
            stopped.set()

    run_in_worker(run)
    try:
        while True:
            mode, item = items.get()
            if mode == _DONE:
                return
            if mode == _FAILED:
                raise item
            yield mode, item
            if mode == "updates":
                taken.release()
    finally:
        stop.set()
        taken.release()  # a worker waiting for the caller goes on, to see `stop`
        # Not when this iterator is finalised on the worker itself (the garbage collector
        # may run anywhere): it would wait for its own thread.
        if threading.get_ident() not in worker:
            stopped.wait()


def translate(mode: str, chunk: Any, thread_id: str) -> Iterator[ev.Event]:
    """The Gatehouse events in one `(mode, chunk)` pair of `stream_run` or of LangGraph's
    own stream (`custom` / `updates`)."""
    if mode == EVENT:
        # Anything else on the custom stream is a user's own writer output, not ours.
        if isinstance(chunk, ev.EVENT_TYPES):
            yield cast(ev.Event, chunk)  # EVENT_TYPES lists exactly Event's members
    elif mode == "updates" and isinstance(chunk, dict):
        for interrupt in chunk.get(INTERRUPT, ()):
            yield ev.ApprovalRequired(
                thread_id=thread_id, interrupt_id=interrupt.id, request=interrupt.value
            )

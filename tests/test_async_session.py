"""AsyncSession: the sync session's semantics on the caller's event loop.

Covers the approval round trip, that the loop keeps running while a run streams,
explicit cancel, and a consumer that goes away mid-run (a closed WebSocket): the
run is cancelled, drained in the background, and the thread stays consistent.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from gatehouse.graph import DecisionError, ScriptedModel, Session, ai, build_graph, tool_call
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.service.async_session import AsyncRun, AsyncSession, RunInProgress
from gatehouse.graph.store import open_storage
from gatehouse.tools.base import gatehouse_tool
from gatehouse.tools.files import make_file_tools
from gatehouse.tools.workspace import Workspace

pytestmark = pytest.mark.timeout(60)

APPROVE = {"decisions": [{"type": "approve"}]}


class Gate:
    """A free tool that blocks until the test opens the gate (or sleeps a fixed time)."""

    def __init__(self, sleep: float | None = None) -> None:
        self.opened = threading.Event()
        self.entered = threading.Event()
        self.sleep = sleep

        @gatehouse_tool(risk="read")
        def hold(label: str = "") -> str:
            """Wait for the test."""
            self.entered.set()
            if self.sleep is not None:
                time.sleep(self.sleep)
            elif not self.opened.wait(20):
                raise TimeoutError("the test never opened the gate")
            return f"held {label}"

        self.tool = hold


def make_session(tmp_path: Path, script: list[Any], gate: Gate | None = None) -> Session:
    storage = open_storage(str(tmp_path / "gatehouse.db"))
    tools = make_file_tools(Workspace(tmp_path / "ws"))
    if gate is not None:
        tools.append(gate.tool)
    graph = build_graph(
        model=ScriptedModel(script=script), tools=tools, checkpointer=storage.checkpointer
    )
    return Session(graph, storage, tools)


def assert_consistent(messages: list[Any]) -> None:
    """Every tool call on an AIMessage has exactly one ToolMessage."""
    calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answers = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
    assert sorted(calls) == sorted(answers)


def types(events: list[ev.Event]) -> list[str]:
    return [e.type for e in events]


def test_pause_and_resume(tmp_path: Path) -> None:
    script = [
        ai("Writing.", tool_call("write_file", {"path": "a.txt", "content": "hi\n"}, "c1")),
        "Done.",
    ]
    session = make_session(tmp_path, script)

    async def main() -> None:
        async with AsyncSession(session) as s:
            run = await s.start(None, "write a.txt")
            assert isinstance(run, AsyncRun)
            events = await run.collect()
            assert types(events)[0] == "run_started"
            assert types(events)[-2:] == ["approval_required", "run_finished"]
            assert run.status == "awaiting_approval"
            thread_id = run.thread_id

            pending = await s.view(thread_id).pending
            assert pending is not None and pending.actions[0].name == "write_file"
            # A second message is refused while the thread waits, as in the sync API.
            with pytest.raises(DecisionError):
                await s.start(thread_id, "hello?")
            with pytest.raises(DecisionError):
                await s.resume(thread_id, {"decisions": []})
            assert await s.view(thread_id).pending == pending
            assert not s.running(thread_id)

            run = await s.resume(thread_id, APPROVE)
            events = [e async for e in run]
            finished = [e for e in events if isinstance(e, ev.ToolFinished)]
            assert finished[0].status == "ok"
            assert (tmp_path / "ws" / "a.txt").read_text() == "hi\n"

            assert await s.view(thread_id).pending is None
            history = await s.view(thread_id).messages
            assert [m.type for m in history] == ["human", "ai", "tool", "ai"]
            # The end carries the final answer and its message id.
            assert events[-1] == ev.RunFinished(
                thread_id=thread_id,
                status="completed",
                ts=events[-1].ts,
                text=history[-1].content,
                message_id=history[-1].id,
            )
            assert [t.thread_id for t in await s.thread_list().threads] == [thread_id]
            info = await s.view(thread_id).info
            assert info is not None and info.status == "completed"
            assert "write a.txt" in await s.view(thread_id).export()

    asyncio.run(main())


def test_approval_required_arrives_once_the_pause_is_saved(tmp_path: Path) -> None:
    """A client may act on approval_required at once (e.g. the server is killed right
    after sending it): the pause must already be in the database by then."""
    script = [ai("", tool_call("write_file", {"path": "a.txt", "content": "hi\n"}, "c1")), "Done."]
    session = make_session(tmp_path, script)

    async def main() -> None:
        s = AsyncSession(session)
        # Another process's view: its own connections to the same file.
        other = make_session(tmp_path, script)
        for _ in range(10):
            run = await s.start(None, "write a.txt")
            async for event in run:
                if event.type == "approval_required":
                    pending = other.view(run.thread_id).pending  # blocking on purpose: no delay
                    assert pending is not None and pending.interrupt_id == event.interrupt_id
            assert run.status == "awaiting_approval"
        other.close()
        await s.close()

    asyncio.run(main())


def test_sync_and_async_share_threads(tmp_path: Path) -> None:
    """Pause through the async API, decide through the sync one (or the other way)."""
    script = [ai("", tool_call("write_file", {"path": "b.txt", "content": "x\n"}, "c1")), "Done."]
    session = make_session(tmp_path, script)

    async def pause() -> str:
        run = await AsyncSession(session).start(None, "write b.txt")
        await run.collect()
        return run.thread_id

    thread_id = asyncio.run(pause())
    assert session.view(thread_id).pending is not None
    run = session.resume(thread_id, APPROVE)
    run.collect()
    assert run.status == "completed"
    session.close()


def test_the_event_loop_keeps_running_while_a_run_streams(tmp_path: Path) -> None:
    gate = Gate(sleep=1.0)
    script = [ai("", tool_call("hold", {"label": "a"}, "c1")), "Done."]
    session = make_session(tmp_path, script, gate)

    async def main() -> None:
        s = AsyncSession(session)
        ticks: list[float] = []
        stop = asyncio.Event()

        async def ticker() -> None:
            while not stop.is_set():
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        run = await s.start(None, "hold")
        events = await run.collect()
        stop.set()
        await task
        assert run.status == "completed"
        assert "tool_finished" in types(events)
        gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
        assert len(ticks) >= 30, len(ticks)
        assert max(gaps) < 0.5, max(gaps)  # a blocked loop would stall for the whole second
        await s.close()

    asyncio.run(main())


def test_explicit_cancel_stops_at_the_next_safe_point(tmp_path: Path) -> None:
    gate = Gate()
    # Turn 1 would call the tool again: a cancelled run never gets there.
    script = [
        ai("", tool_call("hold", {"label": "a"}, "c1"), tool_call("hold", {"label": "b"}, "c2")),
        ai("", tool_call("hold", {"label": "c"}, "c3")),
    ]
    session = make_session(tmp_path, script, gate)

    async def main() -> None:
        s = AsyncSession(session)
        run = await s.start(None, "hold twice")
        events: list[ev.Event] = []
        async for event in run:
            events.append(event)
            if event.type == "tool_started" and not gate.opened.is_set():
                run.cancel()
                gate.opened.set()
        assert run.status == "cancelled"
        assert events[-1].type == "run_finished"
        assert {e.call_id for e in events if isinstance(e, ev.ToolFinished)} == {"c1", "c2"}
        messages = await s.view(run.thread_id).messages
        assert_consistent(messages)
        assert sum(isinstance(m, AIMessage) and bool(m.tool_calls) for m in messages) == 1
        info = await s.view(run.thread_id).info
        assert info is not None and info.status == "cancelled"
        await s.close()

    asyncio.run(main())


@pytest.mark.parametrize("how", ["task_cancelled", "context_exit"])
def test_a_consumer_that_leaves_mid_run_leaves_the_thread_consistent(
    tmp_path: Path, how: str
) -> None:
    gate = Gate()
    script = [
        ai("", tool_call("hold", {"label": "a"}, "c1"), tool_call("hold", {"label": "b"}, "c2")),
        ai("", tool_call("hold", {"label": "c"}, "c3")),
        "Back again.",
    ]
    session = make_session(tmp_path, script, gate)

    async def main() -> None:
        s = AsyncSession(session)
        run = await s.start(None, "hold twice")
        seen: list[str] = []
        tool_running = asyncio.Event()

        async def consume() -> None:
            async with run:
                async for event in run:
                    seen.append(event.type)
                    if event.type == "tool_started":
                        tool_running.set()
                        if how == "context_exit":
                            return  # e.g. sending to a closed socket raised

        consumer = asyncio.create_task(consume())
        await tool_running.wait()
        if how == "task_cancelled":
            consumer.cancel()  # the handler task dies with its connection
        with pytest.raises(asyncio.CancelledError) if how == "task_cancelled" else _nothing():
            await consumer
        assert "run_finished" not in seen
        assert not run.done and s.running(run.thread_id)
        # Nobody is listening; the tools finish and the run stops at a safe point.
        gate.opened.set()
        assert await asyncio.wait_for(run.wait(), 10) == "cancelled"
        assert not s.running(run.thread_id)

        messages = await s.view(run.thread_id).messages
        assert_consistent(messages)
        assert {m.tool_call_id for m in messages if isinstance(m, ToolMessage)} == {"c1", "c2"}
        assert await s.view(run.thread_id).pending is None
        # The thread is usable: the next message runs normally.
        again = await s.start(run.thread_id, "are you there?")
        events = await again.collect()
        assert again.status == "completed"
        assert "".join(e.text for e in events if isinstance(e, ev.TextDelta)) == "Back again."
        await s.close()

    asyncio.run(main())


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_one_run_per_thread(tmp_path: Path) -> None:
    gate = Gate()
    session = make_session(tmp_path, [ai("", tool_call("hold", {}, "c1")), "Done.", "Again."], gate)

    async def main() -> None:
        s = AsyncSession(session)
        run = await s.start(None, "hold")
        with pytest.raises(RunInProgress):
            await s.start(run.thread_id, "me too")
        with pytest.raises(RunInProgress):
            await s.retry(run.thread_id)
        gate.opened.set()
        await run.collect()
        assert run.status == "completed"
        second = await s.start(run.thread_id, "me too")
        await second.collect()
        assert second.status == "completed"
        await s.close()

    asyncio.run(main())


def test_a_run_outlives_its_event_loop(tmp_path: Path) -> None:
    """The loop closes while the run is going: the worker drains it regardless."""
    gate = Gate()
    session = make_session(tmp_path, [ai("", tool_call("hold", {}, "c1")), "Done."], gate)
    runs: list[AsyncRun] = []

    async def main() -> None:
        run = await AsyncSession(session).start(None, "hold")
        runs.append(run)
        await anext(run)

    asyncio.run(main())
    gate.opened.set()
    assert asyncio.run(asyncio.wait_for(runs[0].wait(), 10)) == "completed"
    assert_consistent(session.view(runs[0].thread_id).messages)
    session.close()


def test_close_cancels_and_waits_for_live_runs(tmp_path: Path) -> None:
    gate = Gate()
    session = make_session(tmp_path, [ai("", tool_call("hold", {}, "c1")), "Done."], gate)

    async def main() -> None:
        s = AsyncSession(session)
        run = await s.start(None, "hold")
        while (await anext(run)).type != "tool_started":
            pass
        closing = asyncio.create_task(s.close())
        await asyncio.sleep(0.05)
        assert not closing.done()
        gate.opened.set()
        await asyncio.wait_for(closing, 10)
        assert run.status == "cancelled"

    asyncio.run(main())


def test_a_start_cancelled_while_setting_up_does_not_hold_the_thread(tmp_path: Path) -> None:
    session = make_session(tmp_path, ["Hello.", "Hello again."])

    async def main() -> None:
        s = AsyncSession(session)
        starting = asyncio.create_task(s.start("t1", "hi"))
        await asyncio.sleep(0)  # the set-up is on its worker thread now
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting
        deadline = time.monotonic() + 10
        while True:  # the set-up run is started cancelled and ends on its own
            try:
                run = await s.start("t1", "hi again")
                break
            except RunInProgress:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
        assert (await run.collect())[-1].type == "run_finished"
        assert run.status == "completed"
        history = await s.view("t1").messages
        assert [m.type for m in history][-2:] == ["human", "ai"]
        await s.close()

    asyncio.run(main())

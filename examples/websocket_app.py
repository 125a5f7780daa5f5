"""Gatehouse behind a WebSocket: stream a run to a browser, pause, continue later.

    GATEHOUSE_DB=gatehouse.db GATEHOUSE_WORKSPACE=workspace \\
        uvicorn websocket_app:app --app-dir examples --port 8000

Connect to `ws://localhost:8000/ws` (optionally `?user=alice`) and send JSON:

    {"type": "message", "text": "write todo.md: buy milk"}          # new thread
    {"type": "message", "thread_id": "...", "text": "..."}           # next turn
    {"type": "decisions", "thread_id": "...", "answer": {"decisions": [{"type": "approve"}]}}
    {"type": "approve", "thread_id": "..."}                          # every pending call
    {"type": "reject", "thread_id": "...", "message": "not now"}     # every pending call
    {"type": "cancel"}                                               # stop the run here
    {"type": "pending", "thread_id": "..."}                          # what is waiting?

Every run starts through `AsyncSession.submit` with a typed operation
(graph/protocol/operations.py): a client's `answer` is read into the protocol's
answer models, and approve / reject are built with its answer builders.
`interrupt_id` (optional, on the three answers) names the request the client saw.

The server sends each event's JSON (`graph.events`, see docs/embedding.md), plus
`{"type": "refused", "message": ...}` when a message cannot be acted on (a bad
decision: nothing changed, the thread still waits) and `{"type": "pending", ...}`.

When a run pauses for approval the server keeps nothing in memory: the paused
thread is in the database. Any connection, to this process or another one started
later on the same database, can send the decisions by thread id and the run
streams to that connection. A client that disconnects mid-run cancels its run,
which stops at the next safe point with every tool call answered.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from pydantic import ValidationError

from gatehouse.graph import AsyncRun, AsyncSession, DecisionError, RunInProgress
from gatehouse.graph.protocol.answers import OutcomeAnswer, ReviewAnswer
from gatehouse.graph.protocol.operations import (
    Cancel,
    Decide,
    Operation,
    SendMessage,
    approve,
    reject,
    review,
)
from gatehouse.graph.protocol.pauses import Approval


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Settings from the environment (GATEHOUSE_DB, GATEHOUSE_WORKSPACE, OPENAI_*) or
    # gatehouse.toml; the offline demo model when no model is configured.
    app.state.session = await AsyncSession.open()
    yield
    await app.state.session.close()


app = FastAPI(title="Gatehouse WebSocket example", lifespan=lifespan)


@app.get("/healthz")
async def healthz() -> dict[str, Any]:
    session: AsyncSession = app.state.session
    return {"ok": True, "pid": os.getpid(), "model": session.info.get("model")}


@app.websocket("/ws")
async def websocket_endpoint(websocket: WebSocket, user: str | None = None) -> None:
    # A real service takes the user from its own authentication, not a query string.
    await websocket.accept()
    await Connection(websocket, app.state.session, user).serve()


class Refused(Exception):
    """A client message that cannot be acted on; the client gets its text."""


class Connection:
    """One client: reads its messages, streams at most one run at a time to it."""

    def __init__(self, websocket: WebSocket, session: AsyncSession, user: str | None) -> None:
        self.ws = websocket
        self.session = session
        self.user = user
        self.run: AsyncRun | None = None
        self.pump: asyncio.Task[None] | None = None
        self._send_lock = asyncio.Lock()

    async def serve(self) -> None:
        try:
            while True:
                raw = await self.ws.receive_text()
                try:
                    await self.handle(_parse(raw))
                except Refused as exc:
                    await self.send({"type": "refused", "message": str(exc)})
        except WebSocketDisconnect:
            pass
        finally:
            # Gone mid-run: the pump's `async with run` cancels the run, which ends at
            # a safe point in the background. Nothing of the thread lives here.
            if self.pump is not None and not self.pump.done():
                self.pump.cancel()
                with suppress(asyncio.CancelledError):
                    await self.pump

    async def handle(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "cancel":
            if not self.streaming:
                raise Refused("no run is streaming on this connection")
            assert self.run is not None  # its run_finished (status "cancelled") follows
            await self.session.submit(Cancel(self.run.thread_id))
        elif kind == "pending":
            thread_id = await self.own_thread(msg)
            pending = await self.session.view(thread_id).pending
            await self.send(
                {
                    "type": "pending",
                    "thread_id": thread_id,
                    "pending": pending.to_dict() if pending else None,
                }
            )
        elif kind == "message":
            text = msg.get("text")
            if not isinstance(text, str):
                raise Refused("a message needs a text")
            existing = (
                await self.own_thread(msg) if msg.get("thread_id") else None
            )  # None: a new thread
            await self.start(SendMessage(existing, text, owner=self.user))
        elif kind in ("decisions", "approve", "reject"):
            paused = await self.own_thread(msg)
            interrupt_id = msg.get("interrupt_id")
            if interrupt_id is not None and not isinstance(interrupt_id, str):
                raise Refused("interrupt_id: a string (the pending request's id)")
            answer = (
                _answer(msg.get("answer"))
                if kind == "decisions"
                else await self.every_call(paused, msg)
            )
            await self.start(Decide(paused, answer, interrupt_id))
        else:
            raise Refused(
                f"unknown message type {kind!r}; use message, decisions, approve, reject, cancel or pending"
            )

    async def every_call(self, thread_id: str, msg: dict[str, Any]) -> ReviewAnswer:
        """`approve` / `reject`: the same decision for every call the pending request asks about."""
        pending = await self.session.view(thread_id).pending
        if not isinstance(pending, Approval):
            raise Refused(f"thread {thread_id} is not waiting for an approval; send decisions")
        message = msg.get("message")
        decision = (
            approve()
            if msg["type"] == "approve"
            else reject(message if isinstance(message, str) else None)
        )
        return review([decision] * len(pending.actions))

    @property
    def streaming(self) -> bool:
        return self.pump is not None and not self.pump.done()

    async def own_thread(self, msg: dict[str, Any]) -> str:
        thread_id = msg.get("thread_id")
        if not isinstance(thread_id, str) or not thread_id:
            raise Refused("this message needs a thread_id")
        info = await self.session.view(thread_id).info
        if info is not None and info.owner != self.user:
            raise Refused(f"thread {thread_id} not found")  # not yours: do not confirm it exists
        return thread_id

    async def start(self, operation: Operation) -> None:
        if self.streaming:
            raise Refused("a run is streaming on this connection; wait for it or send cancel")
        try:
            self.run = await self.session.submit(operation)
        except (DecisionError, RunInProgress, ValueError) as exc:
            raise Refused(str(exc)) from None
        self.pump = asyncio.create_task(self.stream(self.run))

    async def stream(self, run: AsyncRun) -> None:
        async with run:  # leaving early (the socket closed) cancels the run
            async for event in run:
                try:
                    await self.send_text(event.to_json())
                except Exception:  # the client is gone, however the server says so
                    return

    async def send(self, data: dict[str, Any]) -> None:
        await self.send_text(json.dumps(data, ensure_ascii=False))

    async def send_text(self, text: str) -> None:
        async with self._send_lock:  # the pump and the reader both send
            await self.ws.send_text(text)


def _answer(data: Any) -> ReviewAnswer | OutcomeAnswer:
    """A client's answer in the HITL wire form, read into the protocol's answer models:
    a review of an approval request, or the answer to an "outcome unknown" pause.
    Whether it fits the pending request is the session's check (`DecisionError`)."""
    try:
        return ReviewAnswer.model_validate(data)
    except ValidationError as review_error:
        try:
            return OutcomeAnswer.model_validate(data)
        except ValidationError:
            first = review_error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "answer"
            raise Refused(f"not an answer: {where}: {first['msg']}") from None


def _parse(raw: str) -> dict[str, Any]:
    try:
        msg = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise Refused(f"not JSON: {exc}") from None
    if not isinstance(msg, dict):
        raise Refused("send a JSON object")
    return msg


if __name__ == "__main__":
    import uvicorn

    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("PORT", "8000")))

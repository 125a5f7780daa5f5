"""Every Gatehouse thread on `langgraph dev` with its true status (issue 33): a lifespan
task follows the thread index into the in-memory server's own thread list (which knows
nothing made or decided elsewhere). LangGraph's private names stay in this module.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
try:  # only `langgraph dev`'s in-memory runtime is synced
    from langgraph_runtime_inmem.database import connect
    from langgraph_runtime_inmem.ops import Threads
except ImportError:
    connect = None

log = logging.getLogger(__name__)
INTERVAL_S = 1.0
GRAPH_ID = "gatehouse"
STATUS = {"awaiting_approval": "interrupted", "failed": "error"}


def server_thread_id(thread_id: str) -> uuid.UUID | None:
    try:
        parsed = uuid.UUID(thread_id)
    except ValueError:
        return None
    return parsed if str(parsed) == thread_id else None


class ThreadSync:
    """Follows the Gatehouse thread index into the dev server's thread list."""

    def __init__(self, db: str) -> None:
        from gatehouse.graph.service.app import server_saver, shared_storage
        from gatehouse.graph.service.server import agent

        storage = shared_storage(db)
        self.index = storage.index
        self.saver = server_saver(storage)
        self.graph = agent.copy(update={"checkpointer": self.saver})
        self.seen: dict[str, float] = {}
        self._checked: dict[str, Any] = {}

    async def tick(self) -> int:
        rows = await asyncio.to_thread(self.index.list, limit=1000)
        changed = [r for r in rows if self.seen.get(r.thread_id) != r.updated_at]
        count = 0
        for row in changed:
            self.seen[row.thread_id] = row.updated_at
            count += await self.sync_one(row)
        count += await self.drop_deleted({r.thread_id for r in rows})
        return count + await self.still_waiting()

    async def drop_deleted(self, indexed: set[str]) -> int:
        """Threads of this graph deleted elsewhere (no index row, no checkpoint) leave too."""
        async with connect() as conn:
            busy = _busy(conn)
            candidates = [
                t["thread_id"]
                for t in conn.store["threads"]
                if t.get("values")
                and t["thread_id"] not in busy
                and str(t["thread_id"]) not in indexed
                and (t.get("metadata") or {}).get("graph_id") == GRAPH_ID
            ]
        deleted = [tid for tid in candidates if await asyncio.to_thread(self._deleted, str(tid))]
        if not deleted:
            return 0
        for tid in deleted:
            self.seen.pop(str(tid), None)
        async with connect() as conn:
            threads = conn.store["threads"]
            threads[:] = [t for t in threads if t["thread_id"] not in deleted]
        return len(deleted)

    def _deleted(self, thread_id: str) -> bool:
        if self.index.get(thread_id) is not None:
            return False
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        return self.saver.get_tuple(config) is None

    async def still_waiting(self) -> int:
        """Threads marked "error" whose pause stands, or "interrupted" that have since ended."""
        async with connect() as conn:
            errored = [
                t
                for t in conn.store["threads"]
                if t.get("status") in ("error", "interrupted")
                and self._checked.get(str(t["thread_id"])) != t.get("updated_at")
            ]
            busy = _busy(conn)
        fixed = 0
        for thread in errored:
            tid = str(thread["thread_id"])
            self._checked[tid] = thread.get("updated_at")
            if thread["thread_id"] in busy:
                continue
            state = await self.graph.aget_state({"configurable": {"thread_id": tid}})
            if state.interrupts:
                if thread["status"] == "error":
                    thread.update(status="interrupted", interrupts=_interrupts(state))
                    self._checked[tid] = thread.get("updated_at")
                    fixed += 1
            elif not state.next and state.values:
                # Ended since: the index says how (a cancelled run is "idle", a failed one "error").
                row = await asyncio.to_thread(self.index.get, tid)
                status = STATUS.get(row.status, "idle") if row is not None else thread["status"]
                if status != thread["status"]:
                    thread.update(status=status, values=state.values, interrupts={})
                    fixed += 1
        return fixed

    async def sync_one(self, row: Any) -> bool:
        tid = server_thread_id(row.thread_id)
        if tid is None:
            return False
        state = await self.graph.aget_state({"configurable": {"thread_id": row.thread_id}})
        async with connect() as conn:
            threads = conn.store["threads"]
            thread = next((t for t in threads if t["thread_id"] == tid), None)
            if thread is None:
                # Its owner, as the server's auth handler reads threads (server_auth.py).
                owner = row.owner or await asyncio.to_thread(_local_owner)
                await Threads.put(
                    conn,
                    tid,
                    metadata={"graph_id": GRAPH_ID, "title": row.title, "owner": owner},
                    if_exists="do_nothing",
                )
                thread = next((t for t in conn.store["threads"] if t["thread_id"] == tid), None)
                if thread is None:
                    return False
            if tid in _busy(conn):
                # The server runs it: its own status is true until the run ends.
                self.seen.pop(row.thread_id, None)
                return False
            # The row's own time, not the sync's: Agent Inbox dates each row by it.
            now = datetime.fromtimestamp(row.pending_since or row.updated_at, UTC)
            thread.update(
                status="interrupted" if state.interrupts else STATUS.get(row.status, "idle"),
                values=state.values or None,
                interrupts=_interrupts(state),
                updated_at=now,
                state_updated_at=now,
            )
            thread.setdefault("metadata", {}).setdefault("graph_id", GRAPH_ID)
        return True


def _busy(conn: Any) -> set[Any]:
    """The threads the server is running (or about to)."""
    return {r["thread_id"] for r in conn.store["runs"] if r["status"] in ("pending", "running")}


def _interrupts(state: Any) -> dict[str, list[dict[str, Any]]]:
    return {
        t.id: [{"value": i.value, "id": i.id} for i in t.interrupts]
        for t in state.tasks
        if t.interrupts
    }


@functools.cache
def _local_owner() -> str:
    from gatehouse.graph.service.access import load_access
    from gatehouse.graph.service.config import load_settings

    return load_access(load_settings().access).local_identity()


async def _follow() -> None:
    from gatehouse.graph.service.config import load_settings

    # Opening the database and building the agent block: not on the server's loop.
    sync = await asyncio.to_thread(lambda: ThreadSync(load_settings().db))
    while True:
        try:
            await sync.tick()
        except Exception:  # noqa: BLE001 - a bad pass must not stop the next
            log.exception("gatehouse thread sync failed")
        await asyncio.sleep(INTERVAL_S)


@asynccontextmanager
async def thread_sync(app: Any) -> AsyncIterator[None]:
    task = asyncio.create_task(_follow()) if connect is not None else None
    try:
        yield
    finally:
        if task is not None:
            task.cancel()
            with suppress(asyncio.CancelledError, Exception):
                await task

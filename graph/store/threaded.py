"""Gatehouse's savers for an asyncio host (LangGraph Server, `langgraph dev`), which
calls only a checkpointer's async methods, on its event loop, where blocking calls are
refused. Each runs on ONE worker thread, first come first served: LangGraph submits a
step's writes without awaiting each other, and a pool could store them out of order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

# The inner saver's methods, then this saver's own: each but `list` (see `alist`) and
# `get_next_version` also async, on the worker thread.
_INNER = ("get_tuple", "put", "put_writes", "get_delta_channel_history", "list", "get_next_version")
_OWN = ("delete_thread", "delete_for_runs", "prune")


class ThreadedSaver(BaseCheckpointSaver):
    """A sync Gatehouse saver (`inner`) with async methods on one worker thread."""

    def __init__(
        self, inner: BaseCheckpointSaver, delete_thread: Callable[[str], None] | None = None
    ) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        # `Storage.delete_thread` when given (the index row, journal and outputs go too):
        # else a thread the server deleted stayed in Gatehouse's own list.
        self._delete_thread = delete_thread or inner.delete_thread
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="gatehouse-saver")

    async def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(
            self._worker, lambda: fn(*args, **kwargs)
        )

    def delete_thread(self, thread_id: str) -> None:
        self._delete_thread(thread_id)

    def register_reducer(self, channel: str, reducer: Any) -> None:
        if callable(register := getattr(self.inner, "register_reducer", None)):
            register(channel, reducer)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """`multitask_strategy="rollback"`: the runs' checkpoints and their writes go."""
        ids = [str(r) for r in run_ids]
        if not ids:
            return
        inner: Any = self.inner  # a Gatehouse saver (delta_reads.DeltaReads)
        dialect = inner.dialect
        run_id = (
            "metadata->>'run_id'"
            if dialect.postgres
            else "json_extract(CAST(metadata AS TEXT), '$.run_id')"
        )
        key = "thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?"
        with inner._tx() as cur:
            cur.execute(
                dialect.sql(
                    "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
                    f"WHERE {run_id} IN ({','.join('?' * len(ids))})"
                ),
                ids,
            )
            doomed = [tuple(row) for row in cur.fetchall()]
            for table in (inner.writes_table, "checkpoints"):
                cur.executemany(dialect.sql(f"DELETE FROM {table} WHERE {key}"), doomed)
        inner.clear_cache()

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """ "keep_latest" is refused, as LangGraph's `PostgresSaver` refuses it with a
        `DeltaChannel` (the latest messages are rebuilt from older checkpoints)."""
        if isinstance(thread_ids, str):
            raise TypeError("thread_ids must be a sequence of thread ids, not a str")
        if strategy == "keep_latest":
            raise NotImplementedError(
                "keep_latest can't prune Gatehouse threads: a thread's messages are stored as "
                "deltas (DeltaChannel), rebuilt from the checkpoints before the latest"
            )
        if strategy != "delete":
            raise ValueError(f"Unknown prune strategy: {strategy!r}")
        for thread_id in thread_ids:
            self.delete_thread(str(thread_id))

    async def alist(
        self, config: RunnableConfig | None, **kwargs: Any
    ) -> AsyncIterator[CheckpointTuple]:
        for item in await self._run(lambda: [*self.inner.list(config, **kwargs)]):
            yield item

    def close(self) -> None:
        self._worker.shutdown(wait=True)


def _delegate(name: str) -> None:
    def sync(self: ThreadedSaver, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.inner, name)(*args, **kwargs)

    async def on_worker(self: ThreadedSaver, *args: Any, **kwargs: Any) -> Any:
        return await self._run(getattr(self, name), *args, **kwargs)

    if name in _INNER:
        setattr(ThreadedSaver, name, sync)
    if name not in ("list", "get_next_version"):
        setattr(ThreadedSaver, f"a{name}", on_worker)


for _name in (*_INNER, *_OWN):
    _delegate(_name)

"""Gatehouse's savers for an asyncio host (LangGraph Server, `langgraph dev`), which
calls only a checkpointer's async methods, on its event loop, where blocking calls are
refused. `ThreadedSaver` runs the sync saver's methods on ONE worker thread of its own,
first come first served: LangGraph submits a step's writes without awaiting each
other, and a pool could store them out of order.

Also `delete_for_runs` (`multitask_strategy="rollback"`) and `prune`: "keep_latest"
is refused, as LangGraph's `PostgresSaver` refuses it with a `DeltaChannel` (the latest
messages are rebuilt from older checkpoints).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    CheckpointTuple,
)


def _inner(name: str) -> Callable[..., Any]:
    """The inner saver's method `name`."""

    def method(self: ThreadedSaver, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.inner, name)(*args, **kwargs)

    return method


def _on_worker(name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    """This saver's sync method `name`, awaited on the worker thread."""

    async def method(self: ThreadedSaver, *args: Any, **kwargs: Any) -> Any:
        return await self._run(getattr(self, name), *args, **kwargs)

    return method


class ThreadedSaver(BaseCheckpointSaver):
    """A sync saver (`inner`) with async methods on one worker thread."""

    def __init__(
        self, inner: BaseCheckpointSaver, delete_thread: Callable[[str], None] | None = None
    ) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        # What deleting a thread means: `Storage.delete_thread` (its index row, journal
        # and stored outputs with the checkpoints) when given; a thread the server
        # deleted stayed in Gatehouse's own list (the web app, `gatehouse threads`).
        self._delete_thread = delete_thread or inner.delete_thread
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="gatehouse-saver")

    async def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(
            self._worker, lambda: fn(*args, **kwargs)
        )

    # -- sync: the inner saver's own --------------------------------------------------
    get_tuple = _inner("get_tuple")
    list = _inner("list")
    put = _inner("put")
    put_writes = _inner("put_writes")
    get_delta_channel_history = _inner("get_delta_channel_history")
    get_next_version = _inner("get_next_version")

    def delete_thread(self, thread_id: str) -> None:
        self._delete_thread(thread_id)

    def register_reducer(self, channel: str, reducer: Any) -> None:
        if callable(register := getattr(self.inner, "register_reducer", None)):
            register(channel, reducer)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        ids = [str(r) for r in run_ids]
        if not ids:
            return
        if hasattr(self.inner, "cursor") and hasattr(self.inner, "conn"):  # SQLite
            marks = ",".join("?" * len(ids))
            with self.inner.cursor() as cur:
                doomed = cur.execute(
                    "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints "
                    f"WHERE json_extract(CAST(metadata AS TEXT), '$.run_id') IN ({marks})",
                    ids,
                ).fetchall()
                for key in doomed:
                    cur.execute(
                        "DELETE FROM writes WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=?",
                        key,
                    )
                    cur.execute(
                        "DELETE FROM checkpoints WHERE thread_id=? AND checkpoint_ns=? AND checkpoint_id=?",
                        key,
                    )
            if callable(clear := getattr(self.inner, "clear_cache", None)):
                clear()
            return
        with self.inner._cursor() as cur:  # type: ignore[attr-defined]  # Postgres
            cur.execute(
                "DELETE FROM checkpoint_writes w USING checkpoints c WHERE w.thread_id = c.thread_id "
                "AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.checkpoint_id "
                "AND c.metadata->>'run_id' = ANY(%s)",
                (ids,),
            )
            cur.execute("DELETE FROM checkpoints WHERE metadata->>'run_id' = ANY(%s)", (ids,))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
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

    # -- async: the same, on the worker thread --------------------------------------------
    aget_tuple = _on_worker("get_tuple")
    aput = _on_worker("put")
    aput_writes = _on_worker("put_writes")
    adelete_thread = _on_worker("delete_thread")
    adelete_for_runs = _on_worker("delete_for_runs")
    aprune = _on_worker("prune")
    aget_delta_channel_history = _on_worker("get_delta_channel_history")

    async def alist(
        self, config: RunnableConfig | None, **kwargs: Any
    ) -> AsyncIterator[CheckpointTuple]:
        for item in await self._run(lambda: [*self.inner.list(config, **kwargs)]):
            yield item

    def close(self) -> None:
        self._worker.shutdown(wait=True)

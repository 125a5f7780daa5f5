"""What Gatehouse's SQLite and Postgres savers share: the values of `DeltaChannel`s
kept per thread in this process, computed when a checkpoint is written, and read
back from the materialised head (graph/store/head.py) in a process that has never
seen the thread.

The value of a delta channel at a checkpoint is its value at the parent plus the
writes stored at the parent (LangGraph saves a step's writes before its checkpoint).
A saver that knows the parent's value computes the new one when the checkpoint is
written, in one reducer call over the few writes of one step (the reducer is
batching-invariant, as `DeltaChannel` requires), caches it, and writes the head
rows that changed. Each saver supplies the storage: `_writes_at` (a channel's writes
at checkpoints) and `_compute` (a value it does not have in memory).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.channels.binop import _get_overwrite
from langgraph.checkpoint.base import (
    Checkpoint,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
)
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from graph.store.head import written_count
from graph.store.threads import ON_ERROR, ON_INTERRUPT

Reducer = Callable[[Any, Sequence[Any]], Any]
# (channel, value at the new checkpoint, value at its parent or None, values written)
HeadPlan = tuple[str, list[Any], list[Any] | None, int]

# Threads kept warm (least recently read dropped first), and values kept per thread:
# the head and the few checkpoints just before it are all a turn reads.
DEFAULT_MAX_THREADS = 64
VALUES_PER_THREAD = 4
ABSENT = object()
# LangGraph's channels for an interrupt and a task's error (langgraph/_internal/_constants.py).
INTERRUPT, ERROR = "__interrupt__", "__error__"


@dataclass(frozen=True, slots=True)
class Entry:
    value: Any  # the channel's value at this checkpoint (its own writes not applied)
    own: Any  # what this checkpoint stores for the channel (a snapshot), or ABSENT

    def current(self) -> Any:
        return unwrap(self.own) if self.own is not ABSENT else self.value


def unwrap(seed: Any) -> Any:
    return seed.value if isinstance(seed, _DeltaSnapshot) else seed


def index_update_for_writes(thread_id: str, writes: Sequence[tuple[str, Any]]) -> tuple[str, tuple[Any, ...]] | None:
    """What a task's writes change in the thread's index row (`?` placeholders): an
    interrupt marks it awaiting approval, an error failed; None for anything else."""
    channels = {channel for channel, _ in writes}
    now = time.time()
    if INTERRUPT in channels:
        return ON_INTERRUPT, (now, now, thread_id)
    if ERROR in channels:
        return ON_ERROR, (now, thread_id)
    return None


class DeltaReads:
    """A mixin for a `BaseCheckpointSaver`: `register_reducer`, the per-process cache,
    the head plans of `put` and the cached `get_delta_channel_history`."""

    reducers: dict[str, Reducer]
    max_threads: int
    side_tables: bool

    def _init_delta_reads(self, reducers: Mapping[str, Reducer] | None, max_threads: int) -> None:
        self.reducers = dict(reducers or {})
        self.max_threads = max_threads
        # The head and thread rows written beside checkpoints; False on a read-only database.
        self.side_tables = True
        # Called with (thread_id, interrupts) once a pause is in the index (notify.py).
        self.pause_listeners: list[Callable[[str, Sequence[Any]], None]] = []
        self._cache_lock = threading.Lock()
        self._threads: OrderedDict[tuple[str, str], OrderedDict[tuple[str, str], Entry]] = OrderedDict()

    def announce_pause(self, thread_id: str, ns: str, writes: Sequence[tuple[str, Any]]) -> None:
        """Tell the pause listeners about the interrupts in `writes` (after they are
        saved: the one place every client's pause reaches storage). A listener's failure
        never fails the save."""
        if ns or not self.pause_listeners:
            return
        interrupts = [i for channel, value in writes if channel == INTERRUPT
                      for i in (value if isinstance(value, list | tuple) else [value])]
        if not interrupts:
            return
        for listener in list(self.pause_listeners):
            with suppress(Exception):  # a notification must not break the run
                listener(thread_id, interrupts)

    def register_reducer(self, channel: str, reducer: Reducer) -> None:
        """Read `channel` (a DeltaChannel folded by `reducer`) this way: the graph calls
        this when it is compiled with this saver (graph/agent/graph.py)."""
        with self._cache_lock:
            if self.reducers.get(channel) is not reducer:
                self.reducers[channel] = reducer
                self._threads.clear()

    # -- the cache ---------------------------------------------------------------------
    def _get(self, key: tuple[str, str], cid: str, ch: str) -> Entry | None:
        with self._cache_lock:
            entries = self._threads.get(key)
            if entries is None:
                return None
            self._threads.move_to_end(key)
            entry = entries.get((cid, ch))
            if entry is not None:
                entries.move_to_end((cid, ch))
            return entry

    def _put(self, key: tuple[str, str], cid: str, ch: str, entry: Entry) -> None:
        with self._cache_lock:
            entries = self._threads.get(key)
            if entries is None:
                entries = self._threads[key] = OrderedDict()
            self._threads.move_to_end(key)
            entries[(cid, ch)] = entry
            while len(entries) > VALUES_PER_THREAD * max(1, len(self.reducers)):
                entries.popitem(last=False)
            while len(self._threads) > self.max_threads:
                self._threads.popitem(last=False)

    def clear_cache(self, thread_id: str | None = None) -> None:
        """Forget what this process read or wrote (the head in the database stays)."""
        with self._cache_lock:
            if thread_id is None:
                self._threads.clear()
            else:
                for key in [k for k in self._threads if k[0] == str(thread_id)]:
                    del self._threads[key]

    # -- writes ------------------------------------------------------------------------
    def _head_plans(self, thread_id: str, ns: str, parent: str | None, checkpoint: Checkpoint) -> list[HeadPlan]:
        """What `put` writes to the head for each delta channel whose new value is known
        here: a snapshot, the first checkpoint, or a parent this process knows (it just
        ran from there). Other heads stay where they are: readers walk from them or
        replay. The new values are cached."""
        if not self.side_tables or not self.reducers:
            return []
        key, cid = (thread_id, ns), checkpoint["id"]
        values = checkpoint.get("channel_values") or {}
        plans: list[HeadPlan] = []
        for ch in self.reducers:
            own = values.get(ch, ABSENT)
            prev: list[Any] | None
            written = 0
            if own is not ABSENT:
                value, prev = unwrap(own), None
            elif parent is None:
                value, prev = [], []
            else:
                base = self._get(key, parent, ch)
                if base is None:
                    continue
                prev = base.current()
                writes = self._writes_at(thread_id, ns, [parent], ch).get(parent, [])
                value = self._apply(ch, prev, writes) if writes else prev
                written = written_count([v for _, _, v in writes])
            if not isinstance(value, list):
                continue
            self._put(key, cid, ch, Entry(value, own))
            plans.append((ch, value, prev, written))
        return plans

    def _apply(self, ch: str, value: Any, writes: Sequence[PendingWrite]) -> Any:
        """`DeltaChannel.replay_writes`: the last Overwrite resets, the rest reduce."""
        values = [v for _, _, v in writes]
        start = 0
        for i, v in enumerate(values):
            is_overwrite, overwrite_value = _get_overwrite(v)
            if is_overwrite:
                value = list(overwrite_value) if overwrite_value is not None else []
                start = i + 1
        remaining = values[start:]
        return self.reducers[ch](value if value is not None else [], remaining) if remaining else value

    # -- reads ---------------------------------------------------------------------------
    def _cached_history(
        self, config: RunnableConfig, channels: Sequence[str], stock: Callable[..., Mapping[str, DeltaChannelHistory]]
    ) -> Mapping[str, DeltaChannelHistory]:
        """`get_delta_channel_history`: registered channels from the cache or `_compute`,
        handed to LangGraph as a seed with no writes to replay; the others from `stock`."""
        if not channels:
            return {}
        cached = [ch for ch in channels if ch in self.reducers]
        other = [ch for ch in channels if ch not in self.reducers]
        out: dict[str, DeltaChannelHistory] = {}
        if other:
            out.update(stock(config=config, channels=other))
        if not cached:
            return out
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        if not checkpoint_id:
            target = self.get_tuple(config)  # type: ignore[attr-defined]
            if target is None:
                return {**out, **{ch: {"writes": []} for ch in cached}}
            checkpoint_id = target.config["configurable"]["checkpoint_id"]
        for ch in cached:
            entry = self._get((thread_id, ns), checkpoint_id, ch) or self._compute(thread_id, ns, checkpoint_id, ch, config)
            # A copy: callers may change the list they get; the cache must not change.
            out[ch] = {"writes": [], "seed": _DeltaSnapshot(list(entry.value))}
        return out

    # -- what each saver supplies ----------------------------------------------------------
    def _writes_at(self, thread_id: str, ns: str, checkpoint_ids: list[str], channel: str) -> dict[str, list[PendingWrite]]:
        raise NotImplementedError

    def _compute(self, thread_id: str, ns: str, checkpoint_id: str, ch: str, config: RunnableConfig) -> Entry:
        raise NotImplementedError

"""Gatehouse's SQLite checkpointer: compact blobs and a warm read cache.

Compact: checkpoint and write blobs are zlib-compressed (type tag `<type>+zlib`;
untagged rows from before still read). A checkpoint blob is mostly channel version
strings, which compress about 4x.

Warm cache: with `DeltaChannel`, a checkpoint stores only what its step wrote;
reading a thread means collecting the writes of every ancestor since the last
snapshot and replaying them. The stock `SqliteSaver` walks the whole ancestor chain,
deserialising every ancestor checkpoint and write, on each read; Gatehouse reads a
thread several times per turn (start of a run, pending approval, outcome), so each
turn cost O(thread length).

Checkpoints and the writes of a finished step never change, so the value of a
channel at a checkpoint is its value at the parent plus the parent's writes. This
saver keeps the value at the last few checkpoints read per thread and, for a new
checkpoint, walks up to the nearest one it knows (a run adds a dozen) and applies
only the writes in between, with the channel's own reducer, in one call (the
reducer is batching-invariant, as `DeltaChannel` requires). A cold thread costs one
stock walk. The answer is handed to LangGraph as a seed with no writes to replay.

Results equal the stock saver's (tests/test_storage_equivalence.py). Tables and
rows are the stock ones; a stock `SqliteSaver` reads the file when given
`serde=compact_serde()`.

A refused answer leaves no trace: LangGraph stores a `Command(resume=...)` value
before the node that asked can check it, and the node's refusal as an error of its
task, so a bad answer from any client (Studio, the SDK, a raw `graph.invoke`) would
leave the pause looking failed and `retry` replaying the bad value. This saver drops
both (`forget_refused_answer`): the thread stays paused exactly as it was.
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import ERROR, NULL_TASK_ID, RESUME
from langgraph.channels.binop import _get_overwrite
from langgraph.checkpoint.base import (
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    writes_sort_key,
)
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.errors import is_invalid_resume

Reducer = Callable[[Any, Sequence[Any]], Any]

# Threads kept warm (least recently read dropped first), and values kept per thread:
# the head and the few checkpoints just before it are all a turn reads.
DEFAULT_MAX_THREADS = 64
VALUES_PER_THREAD = 4
# Checkpoint ids per `IN (...)` list (SQLite's variable limit can be 999).
IDS_PER_QUERY = 900
_ABSENT = object()


@dataclass(frozen=True, slots=True)
class _Entry:
    value: Any  # the channel's value at this checkpoint (its own writes not applied)
    own: Any  # what this checkpoint stores for the channel (a snapshot), or _ABSENT


# Blobs smaller than this are stored as they are: zlib would not pay for itself.
COMPRESS_MIN_BYTES = 160


class ZlibCodec:
    """A `CipherProtocol` that compresses: `EncryptedSerializer` then tags each blob
    with the codec used and keeps LangGraph's msgpack allowlist working."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        if len(plaintext) >= COMPRESS_MIN_BYTES:
            packed = zlib.compress(plaintext, 6)
            if len(packed) < len(plaintext):
                return "zlib", packed
        return "raw", plaintext

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        if ciphername == "zlib":
            return zlib.decompress(ciphertext)
        if ciphername == "raw":
            return ciphertext
        raise ValueError(f"unknown blob codec {ciphername!r}")


def compact_serde() -> EncryptedSerializer:
    return EncryptedSerializer(ZlibCodec(), JsonPlusSerializer())


def refuses_answer(writes: Sequence[tuple[str, Any]]) -> bool:
    """Whether these task writes are a node's refusal of a resume value (the answer
    failed the interrupt's `response_schema`): then neither the refusal nor the
    refused answer is stored."""
    return any(channel == ERROR and isinstance(value, BaseException) and is_invalid_resume(value) for channel, value in writes)


def checkpoint_key(config: RunnableConfig) -> tuple[str, str, str]:
    conf = config["configurable"]
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")), str(conf["checkpoint_id"])


def _unwrap(seed: Any) -> Any:
    return seed.value if isinstance(seed, _DeltaSnapshot) else seed


class GatehouseSqliteSaver(SqliteSaver):
    """`SqliteSaver` with compressed blobs, whose reads of the given DeltaChannels
    are incremental and cached. `reducers` maps channel name -> the reducer of that
    channel's `DeltaChannel` (or the graph registers it); other channels read the
    stock way."""

    def __init__(
        self,
        conn: Any,
        *,
        reducers: Mapping[str, Reducer] | None = None,
        serde: Any = None,
        max_threads: int = DEFAULT_MAX_THREADS,
    ) -> None:
        super().__init__(conn, serde=serde or compact_serde())
        self.reducers = dict(reducers or {})
        self.max_threads = max_threads
        self._cache_lock = threading.Lock()
        self._threads: OrderedDict[tuple[str, str], OrderedDict[tuple[str, str], _Entry]] = OrderedDict()

    def register_reducer(self, channel: str, reducer: Reducer) -> None:
        """Read `channel` (a DeltaChannel folded by `reducer`) incrementally: the graph
        calls this when it is compiled with this saver."""
        with self._cache_lock:
            if self.reducers.get(channel) is not reducer:
                self.reducers[channel] = reducer
                self._threads.clear()

    # -- cache bookkeeping ----------------------------------------------------------
    def _get(self, key: tuple[str, str], cid: str, ch: str) -> _Entry | None:
        with self._cache_lock:
            entries = self._threads.get(key)
            if entries is None:
                return None
            self._threads.move_to_end(key)
            entry = entries.get((cid, ch))
            if entry is not None:
                entries.move_to_end((cid, ch))
            return entry

    def _put(self, key: tuple[str, str], cid: str, ch: str, entry: _Entry) -> None:
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
        with self._cache_lock:
            if thread_id is None:
                self._threads.clear()
            else:
                for key in [k for k in self._threads if k[0] == str(thread_id)]:
                    del self._threads[key]

    def delete_thread(self, thread_id: str) -> None:
        self.clear_cache(thread_id)
        super().delete_thread(thread_id)

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        if refuses_answer(writes):
            with self.cursor() as cur:
                cur.execute(
                    "DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? "
                    "AND task_id = ? AND channel = ?",
                    (*checkpoint_key(config), NULL_TASK_ID, RESUME),
                )
            return
        super().put_writes(config, writes, task_id, task_path)

    # -- reads ------------------------------------------------------------------------
    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        if not channels:
            return {}
        cached = [ch for ch in channels if ch in self.reducers]
        other = [ch for ch in channels if ch not in self.reducers]
        out: dict[str, DeltaChannelHistory] = {}
        if other:
            out.update(super().get_delta_channel_history(config=config, channels=other))
        if not cached:
            return out
        thread_id = str(config["configurable"]["thread_id"])
        ns = config["configurable"].get("checkpoint_ns", "")
        checkpoint_id = get_checkpoint_id(config)
        if not checkpoint_id:
            target = self.get_tuple(config)
            if target is None:
                return {**out, **{ch: {"writes": []} for ch in cached}}
            checkpoint_id = target.config["configurable"]["checkpoint_id"]
        for ch in cached:
            entry = self._get((thread_id, ns), checkpoint_id, ch) or self._compute(
                thread_id, ns, checkpoint_id, ch, config
            )
            # A copy: callers may change the list they get; the cache must not change.
            out[ch] = {"writes": [], "seed": _DeltaSnapshot(list(entry.value))}
        return out

    def _compute(self, thread_id: str, ns: str, checkpoint_id: str, ch: str, config: RunnableConfig) -> _Entry:
        key = (thread_id, ns)
        chain: list[tuple[str, str | None, Any]] = []  # (cid, parent, own), target first
        base: _Entry | None = None
        cid: str | None = checkpoint_id
        seen: set[str] = set()
        with self.cursor(transaction=False) as cur:
            while cid is not None and cid not in seen:
                seen.add(cid)
                row = cur.execute(
                    "SELECT parent_checkpoint_id, type, checkpoint FROM checkpoints "
                    "WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ?",
                    (thread_id, ns, cid),
                ).fetchone()
                if row is None:
                    break
                parent_id, type_tag, blob = row
                values = self.serde.loads_typed((type_tag, blob)).get("channel_values") or {}
                chain.append((cid, parent_id, values.get(ch, _ABSENT)))
                if parent_id is None:
                    base = _Entry([], _ABSENT)  # before the first step: empty
                    break
                if (base := self._get(key, parent_id, ch)) is not None:
                    break
                if len(chain) > 1 and chain[-1][2] is not _ABSENT:
                    base = _Entry([], _ABSENT)  # a snapshot on the way: start there
                    break
                cid = parent_id
        if not chain:
            return _Entry([], _ABSENT)
        own = chain[0][2]
        if base is None:
            stock = SqliteSaver.get_delta_channel_history(
                self,
                config={"configurable": {**config["configurable"], "checkpoint_id": checkpoint_id}},  # type: ignore[arg-type]
                channels=[ch],
            )[ch]
            value = self._apply(ch, _unwrap(stock.get("seed", [])), stock["writes"])
        else:
            # Oldest step first: start from the warm ancestor (or the snapshot a
            # checkpoint on the way stores) and apply the writes after it.
            value = _unwrap(base.own) if base.own is not _ABSENT else base.value
            steps = list(reversed(chain))
            parents = [parent for _, parent, _ in steps if parent is not None]
            for i in range(len(steps) - 2, -1, -1):
                if steps[i][2] is not _ABSENT:  # the latest snapshot on the way
                    value = _unwrap(steps[i][2])
                    parents = [cid for cid, _, _ in steps[i:-1]]
                    break
            writes = self._writes_at(thread_id, ns, parents, ch)
            value = self._apply(ch, value, [w for p in parents for w in writes.get(p, ())])
        entry = _Entry(value, own)
        self._put(key, checkpoint_id, ch, entry)
        return entry

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

    def _writes_at(
        self, thread_id: str, ns: str, checkpoint_ids: list[str], channel: str
    ) -> dict[str, list[PendingWrite]]:
        """The channel's writes stored at each checkpoint, in replay order."""
        if not checkpoint_ids:
            return {}
        task_path = "task_path" if self._has_task_path else "''"
        rows: list[Any] = []
        with self.cursor(transaction=False) as cur:
            for at in range(0, len(checkpoint_ids), IDS_PER_QUERY):
                part = checkpoint_ids[at : at + IDS_PER_QUERY]
                rows += cur.execute(
                    f"SELECT checkpoint_id, task_id, idx, type, value, {task_path} FROM writes "
                    f"WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? "
                    f"AND checkpoint_id IN ({','.join('?' * len(part))})",
                    (thread_id, ns, channel, *part),
                ).fetchall()
        rows.sort(key=lambda r: writes_sort_key(r[5] or "", r[1], r[2]))
        out: dict[str, list[PendingWrite]] = {}
        for cid, task_id, _, type_tag, value, _ in rows:
            out.setdefault(cid, []).append((task_id, channel, self.serde.loads_typed((type_tag, value))))
        return out

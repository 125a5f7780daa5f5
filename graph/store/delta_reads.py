"""What the SQLite and Postgres savers share: each thread's `DeltaChannel` values, cached
as checkpoints are written, else read from the materialised head (graph/store/head.py). A
value at a checkpoint is the parent's plus the writes stored at the parent: one reducer
call when the parent's value is known (`DeltaChannel` reducers are batching-invariant).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    writes_sort_key,
)
from langgraph.errors import is_invalid_resume

from gatehouse.graph.protocol.state_keys import MESSAGES
from gatehouse.graph.protocol.threads import check_thread_id
from gatehouse.graph.store.dialect import Dialect
from gatehouse.graph.store.head import (
    DELETE_HEAD,
    MOVE_HEAD,
    MOVE_HEAD_KNOWN,
    UPSERT_HEAD,
    RowChange,
    head_update,
    unchanged_prefix,
    write_rows,
    written_count,
)
from gatehouse.graph.store.langgraph_private import (
    ERROR,
    INTERRUPT,
    NULL_TASK_ID,
    RESUME,
    DeltaSnapshot,
    get_overwrite,
)
from gatehouse.graph.store.threads import (
    CHECKPOINT_ROW,
    DEFAULT_TITLE,
    ON_ERROR,
    ON_INTERRUPT,
    first_user_text,
    status_of,
    title_of,
)

Reducer = Callable[[Any, Sequence[Any]], Any]
# (channel, value at the new checkpoint, at its parent or None, values written, how many
# writes at the parent it was computed from when remembered rather than read)
HeadPlan = tuple[str, list[Any], list[Any] | None, int, int | None]
# Where a task's writes go: (thread, namespace, checkpoint id, task id, task path).
WriteAt = tuple[str, str, str, str, str]
# An index row's update as a task's writes leave it: (statement, parameters) or None.
IndexUpdate = tuple[str, tuple[Any, ...]] | None
# A write this process saved or read: (task path, task id, idx, channel, value).
Known = tuple[str, str, int, str, Any]

# Checkpoint ids per `IN (...)` list (SQLite's variable limit can be 999).
IDS_PER_QUERY = 900
# Threads kept warm (least recently read dropped first), and values kept per thread: a
# turn reads only the head and the few checkpoints before it.
DEFAULT_MAX_THREADS = 64
VALUES_PER_THREAD = 4
ABSENT = object()

# A checkpoint just read, for the next `get_tuple` of it (`handing_over`): ((thread, ns,
# checkpoint id or None), [what was read]). The read it serves empties the list, which
# contexts copied from this one (LangGraph's tasks) share: it serves once in all of them.
ReadKey = tuple[str, str, str | None]
_handed: ContextVar[tuple[ReadKey, list[CheckpointTuple | None]] | None] = ContextVar(
    "gatehouse_handed_read", default=None
)


def _read_key(config: RunnableConfig) -> ReadKey:
    conf = config.get("configurable") or {}
    ns = str(conf.get("checkpoint_ns") or "")
    return str(conf.get("thread_id")), ns, get_checkpoint_id(config)


@dataclass(frozen=True, slots=True)
class Entry:
    value: Any  # the channel's value at this checkpoint (its own writes not applied)
    own: Any  # what this checkpoint stores for the channel (a snapshot), or ABSENT

    def current(self) -> Any:
        return unwrap(self.own) if self.own is not ABSENT else self.value


def unwrap(seed: Any) -> Any:
    return seed.value if isinstance(seed, DeltaSnapshot) else seed


def checkpoint_row_sql(dialect: Dialect, writes_table: str) -> str:
    """The index row a checkpoint leaves (one whose interrupt was saved first stays
    awaiting approval). Parameters: `checkpoint_row`."""
    paused = (
        f"EXISTS (SELECT 1 FROM {writes_table} WHERE thread_id = ? AND checkpoint_ns = '' "
        "AND checkpoint_id = ? AND channel = ?)"
    )
    values = (
        f"(?, ?, CASE WHEN {paused} THEN 'awaiting_approval' ELSE ? END, ?, ?, "
        f"CASE WHEN {paused} THEN CAST(? AS {dialect.real}) END)"
    )
    return dialect.sql(CHECKPOINT_ROW.format(values=values))


def checkpoint_row(
    thread_id: str, plans: Sequence[HeadPlan], checkpoint: Checkpoint
) -> tuple[Any, ...]:
    cid, now = checkpoint["id"], time.time()
    paused = (thread_id, cid, INTERRUPT)
    text = next((first_user_text(value) for ch, value, *_ in plans if ch == MESSAGES), None)
    title = title_of(text) if text else DEFAULT_TITLE
    return (thread_id, title, *paused, status_of(checkpoint), now, now, *paused, now)


def refuses_answer(writes: Sequence[tuple[str, Any]]) -> bool:
    """Whether these task writes refuse a resume value (it failed the interrupt's
    `response_schema`). LangGraph stored the value before the node checked it, and the
    refusal is the task's error: kept, the pause would look failed and `retry` replay
    it. So neither is kept, and the thread stays paused as it was."""
    return any(
        channel == ERROR and isinstance(value, BaseException) and is_invalid_resume(value)
        for channel, value in writes
    )


def writes_at_sql(dialect: Dialect, table: str, value: str, task_path: str, ids: int) -> str:
    """A channel's writes at `ids` checkpoints: (thread, namespace, channel, *ids). `IN`,
    not Postgres's `= ANY(...)`, which on a table never analysed scanned every write."""
    return dialect.sql(
        f"SELECT checkpoint_id, task_id, idx, type, {value}, {task_path} FROM {table} "
        "WHERE thread_id = ? AND checkpoint_ns = ? AND channel = ? "
        f"AND checkpoint_id IN ({','.join('?' * ids)})"
    )


def saved_config(config: RunnableConfig, ns: str, checkpoint: Checkpoint) -> RunnableConfig:
    thread_id = config["configurable"]["thread_id"]
    ids = {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}
    return {"configurable": ids}


class StaleWrites(Exception):
    """The parent holds writes this process does not know of (another writer): write
    the checkpoint again from the writes read back."""


class DeltaReads:
    """A mixin for a `BaseCheckpointSaver` (listed before it): the per-process cache,
    `put`, `put_writes` and the cached `get_delta_channel_history`."""

    # Whether `put` may compute a value from the writes this process saved at the parent
    # (not read back), checked in its transaction (Postgres).
    remembers_writes = False
    serde: Any
    # Each saver supplies: a value not in memory; a checkpoint with its head and index
    # row; a task's writes with the index's update, in one transaction.
    _compute: Callable[[str, str, str, str, RunnableConfig], Entry]
    _put_checkpoint: Callable[
        [RunnableConfig, Checkpoint, CheckpointMetadata, ChannelVersions], RunnableConfig
    ]
    _save_writes: Callable[[WriteAt, Sequence[tuple[str, Any]], IndexUpdate], None]
    # And its database: a cursor in a transaction, one query's rows, the writes table.
    _tx: Callable[[], AbstractContextManager[Any]]
    _rows: Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
    dialect: Dialect
    writes_table: str
    value_column: str

    def __init__(
        self,
        conn: Any,
        *,
        reducers: Mapping[str, Reducer] | None = None,
        serde: Any = None,
        max_threads: int = DEFAULT_MAX_THREADS,
    ) -> None:
        super().__init__(conn, serde=serde or self.default_serde())  # type: ignore[call-arg]  # a mixin: the stock saver's __init__ follows in the MRO
        self.reducers = dict(reducers or {})
        self.max_threads = max_threads
        # False on a read-only database: no head and index rows beside the checkpoints.
        self.side_tables = True
        # Called with (thread_id, interrupts) once a pause is in the index (notify.py).
        self.pause_listeners: list[Callable[[str, Sequence[Any]], None]] = []
        self._cache_lock = threading.Lock()
        self._threads: OrderedDict[tuple[str, str], OrderedDict[tuple[str, str], Entry]] = (
            OrderedDict()
        )
        # Per thread: a checkpoint, the delta channels' writes this process saved there,
        # and whether it wrote or read the checkpoint (then those are all, unless another
        # writer came). LangGraph may save a step's first writes while its `put` is going on.
        self._known: OrderedDict[tuple[str, str], tuple[str, list[Known], bool]] = OrderedDict()

    def default_serde(self) -> Any:
        return None  # the stock saver's

    @contextmanager
    def handing_over(self, config: RunnableConfig, saved: CheckpointTuple | None) -> Iterator[None]:
        """In this block the first `get_tuple(config)` returns `saved`, just read with
        `config`: an answer's pending check (graph/agent/compiled.py) reads the checkpoint
        LangGraph then reads again to start (~2 ms on Postgres). Served once, and nothing
        is written before that read."""
        token = _handed.set((_read_key(config), [saved]))
        try:
            yield
        finally:
            _handed.reset(token)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        handed = _handed.get()
        if handed is not None and handed[1] and handed[0] == _read_key(config):
            with suppress(IndexError):  # another thread took it first: read it anew
                return handed[1].pop()
        return self._read_tuple(config)

    def _read_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The stock read (Postgres's also reads the head and remembers the writes)."""
        return super().get_tuple(config)  # type: ignore[misc]  # a mixin: the stock saver's get_tuple follows in the MRO

    def announce_pause(self, thread_id: str, ns: str, writes: Sequence[tuple[str, Any]]) -> None:
        """Tell the pause listeners about the saved interrupts in `writes` (every client's
        pause reaches storage here); a listener's failure never fails the save."""
        if ns or not self.pause_listeners:
            return
        interrupts = [
            i
            for channel, value in writes
            if channel == INTERRUPT
            for i in (value if isinstance(value, list | tuple) else [value])
        ]
        if not interrupts:
            return
        for listener in list(self.pause_listeners):
            with suppress(Exception):  # a notification must not break the run
                listener(thread_id, interrupts)

    def register_reducer(self, channel: str, reducer: Reducer) -> None:
        """Cache `channel`, a DeltaChannel folded by `reducer` (graph/agent/graph.py)."""
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

    def _cached_ids(self, key: tuple[str, str]) -> list[str]:
        """The checkpoints of thread `key` some value is cached at."""
        with self._cache_lock:
            return [cid for cid, _ in self._threads.get(key, ())]

    def _put(self, key: tuple[str, str], cid: str, ch: str, entry: Entry) -> None:
        with self._cache_lock:
            entries = self._threads.setdefault(key, OrderedDict())
            self._threads.move_to_end(key)
            entries[(cid, ch)] = entry
            while len(entries) > VALUES_PER_THREAD * max(1, len(self.reducers)):
                entries.popitem(last=False)
            while len(self._threads) > self.max_threads:
                self._threads.popitem(last=False)

    def clear_cache(self, thread_id: str | None = None) -> None:
        """Forget what this process read or wrote (the head in the database stays)."""
        with self._cache_lock:
            for table in (self._threads, self._known):
                for key in [k for k in table if thread_id is None or k[0] == str(thread_id)]:
                    del table[key]

    def _remember(
        self, key: tuple[str, str], cid: str | None, writes: Sequence[Known] = (), put: bool = True
    ) -> None:
        """After a `put` of `cid`, or saving `writes` at it; `cid` None: a failed write."""
        if not self.remembers_writes:
            return
        with self._cache_lock:
            known = self._known.pop(key, None)
            if cid is None:
                return
            if known is None or known[0] != cid:
                known = (cid, [], False)
            self._known[key] = (cid, [*known[1], *writes], known[2] or put)
            while len(self._known) > self.max_threads:
                self._known.popitem(last=False)

    def _remembered(self, key: tuple[str, str], cid: str, ch: str) -> list[PendingWrite] | None:
        """The writes to `ch` saved at `cid` by this process, in replay order (None: unknown)."""
        with self._cache_lock:
            known = self._known.get(key)
            if known is None or known[0] != cid or not known[2]:
                return None
            rows = [w for w in known[1] if w[3] == ch]
        rows.sort(key=lambda w: writes_sort_key(w[0], w[1], w[2]))
        return [(task_id, ch, value) for _, task_id, _, _, value in rows]

    # -- writes ------------------------------------------------------------------------
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """`_put_checkpoint`, again from the writes read back on `StaleWrites`."""
        conf = config["configurable"]
        key = (str(conf["thread_id"]), str(conf.get("checkpoint_ns", "")))
        try:
            try:
                saved = self._put_checkpoint(config, checkpoint, metadata, new_versions)
            except StaleWrites:
                self._remember(key, None)
                saved = self._put_checkpoint(config, checkpoint, metadata, new_versions)
        except BaseException:
            self._remember(key, None)
            raise
        self._remember(key, checkpoint["id"])
        return saved

    def _begin_put(
        self, config: RunnableConfig, checkpoint: Checkpoint
    ) -> tuple[str, str, str | None, list[HeadPlan]]:
        """(thread id, namespace, parent checkpoint id, head plans) of a `put`."""
        conf = config["configurable"]
        # Any client, the raw graph and Studio included: a malformed id never gets a thread.
        thread_id, ns = check_thread_id(str(conf["thread_id"])), conf.get("checkpoint_ns", "")
        parent = conf.get("checkpoint_id")
        return thread_id, ns, parent, self._head_plans(thread_id, ns, parent, checkpoint)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """The stock `put_writes`, an interrupt or error also marking the index row in the
        same transaction; a refused resume value is deleted instead (`refuses_answer`)."""
        conf = config["configurable"]
        thread_id, cid = str(conf["thread_id"]), str(conf["checkpoint_id"])
        ns = str(conf.get("checkpoint_ns", ""))
        if refuses_answer(writes):
            self._remember((thread_id, ns), None)
            self._forget_answer((thread_id, ns, cid))
            return
        update: IndexUpdate = None  # the index row: awaiting approval, failed or as it is
        channels, now = {channel for channel, _ in writes}, time.time()
        if not ns and self.side_tables and INTERRUPT in channels:
            update = ON_INTERRUPT, (now, now, thread_id)
        elif not ns and self.side_tables and ERROR in channels:
            update = ON_ERROR, (now, thread_id)
        try:
            self._save_writes((thread_id, ns, cid, task_id, task_path), writes, update)
        except BaseException:
            self._remember((thread_id, ns), None)  # saved or not: unknown
            raise
        if self.remembers_writes:
            known = [
                (task_path, task_id, WRITES_IDX_MAP.get(ch, i), ch, value)
                for i, (ch, value) in enumerate(writes)
                if ch in self.reducers
            ]
            self._remember((thread_id, ns), cid, known, put=False)
        self.announce_pause(thread_id, ns, writes)

    def _head_plans(
        self, thread_id: str, ns: str, parent: str | None, checkpoint: Checkpoint
    ) -> list[HeadPlan]:
        """What `put` writes to the head (and caches) for each delta channel whose new
        value is known: a snapshot, the first checkpoint, or a parent known here. Other
        heads stay where they are: readers walk from them or replay."""
        if not self.side_tables or not self.reducers:
            return []
        key, cid = (thread_id, ns), checkpoint["id"]
        values = checkpoint.get("channel_values") or {}
        plans: list[HeadPlan] = []
        for ch in self.reducers:
            own = values.get(ch, ABSENT)
            prev: list[Any] | None
            written, remembered = 0, None
            if own is not ABSENT:
                value, prev = unwrap(own), None
            elif parent is None:
                value, prev = [], []
            else:
                base = self._get(key, parent, ch)
                if base is None:
                    continue
                prev = base.current()
                writes = remembered = self._remembered(key, parent, ch)
                if writes is None:
                    writes = self._writes_at(thread_id, ns, [parent], ch).get(parent, [])
                value = self._apply(ch, prev, writes) if writes else prev
                written = written_count([v for _, _, v in writes])
            if not isinstance(value, list):
                continue
            self._put(key, cid, ch, Entry(value, own))
            counted = None if remembered is None else len(remembered)
            plans.append((ch, value, prev, written, counted))
        return plans

    def _head_moves(
        self, at: tuple[str, str, str, str | None], plans: Sequence[HeadPlan]
    ) -> tuple[list[HeadPlan], list[tuple[HeadPlan, RowChange, tuple[str, tuple[Any, ...]]]]]:
        """Moving the heads to checkpoint `at` (thread, ns, id, parent): the plans to
        rewrite whole, and where the parent's value is known, (plan, how its rows change
        from the first change on, a compare-and-set (statement, parameters) moving the
        head only from the parent, returning a row when it did)."""
        thread_id, ns, cid, parent = at
        rewrite: list[HeadPlan] = []
        moves: list[tuple[HeadPlan, RowChange, tuple[str, tuple[Any, ...]]]] = []
        for plan in plans:
            ch, value, prev, written, remembered = plan
            if prev is None or parent is None:
                rewrite.append(plan)
                continue
            change = head_update(prev, value, unchanged_prefix(prev, value, written), self.serde)
            params = (cid, len(value), thread_id, ns, ch, parent, len(prev))
            move = (
                (self.dialect.sql(MOVE_HEAD), params)
                if remembered is None
                else (
                    self.dialect.sql(MOVE_HEAD_KNOWN),
                    (*params, thread_id, ns, parent, ch, remembered),
                )
            )
            moves.append((plan, change, move))
        return rewrite, moves

    def _move_heads(
        self,
        cur: Any,
        new_cursor: Callable[[], Any],
        at: tuple[str, str, str, str | None],
        plans: Sequence[HeadPlan],
    ) -> tuple[list[HeadPlan], list[tuple[HeadPlan, Any]]]:
        """`_head_moves` run on `cur`, each compare-and-set on a `new_cursor()`. Returns
        the plans to rewrite whole, and each (plan, check) whose `fetchone()` None means
        the head was elsewhere (a branch, another writer): rewrite it too
        (`_rewrite_heads`)."""
        thread_id, ns = at[:2]
        rewrite, moves = self._head_moves(at, plans)
        checks: list[tuple[HeadPlan, Any]] = []
        for plan, change, move in moves:
            write_rows(cur, self.dialect, (thread_id, ns, plan[0]), change)
            check = new_cursor()
            check.execute(*move)
            checks.append((plan, check))
        return rewrite, checks

    def _rewrite_heads(self, cur: Any, at: tuple[str, str, str], plans: Sequence[HeadPlan]) -> None:
        """The heads of `plans` at checkpoint `at` (thread, ns, id), rows whole."""
        thread_id, ns, cid = at
        for ch, value, *_ in plans:
            write_rows(
                cur, self.dialect, (thread_id, ns, ch), head_update(None, value, None, self.serde)
            )
            cur.execute(self.dialect.sql(UPSERT_HEAD), (thread_id, ns, ch, cid, len(value)))

    def _apply(self, ch: str, value: Any, writes: Sequence[PendingWrite]) -> Any:
        """`DeltaChannel.replay_writes`: the last Overwrite resets, the rest reduce."""
        values = [v for _, _, v in writes]
        start = 0
        for i, v in enumerate(values):
            is_overwrite, overwrite_value = get_overwrite(v)
            if is_overwrite:
                value = list(overwrite_value) if overwrite_value is not None else []
                start = i + 1
        remaining = values[start:]
        return (
            self.reducers[ch](value if value is not None else [], remaining) if remaining else value
        )

    # -- reads ---------------------------------------------------------------------------
    def _stock_history(
        self, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The stock saver's replay of the history."""
        return super().get_delta_channel_history(config=config, channels=channels)  # type: ignore[misc]  # a mixin: the stock saver follows in the MRO

    def _replayed(self, ch: str, config: RunnableConfig, checkpoint_id: str) -> Any:
        """The value of `ch` at a checkpoint, replayed the stock way."""
        stock = self._stock_history(
            {"configurable": {**config["configurable"], "checkpoint_id": checkpoint_id}}, [ch]
        )[ch]
        return self._apply(ch, unwrap(stock.get("seed", [])), stock["writes"])

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Registered channels from the cache or `_compute`, handed to LangGraph as a seed
        with no writes to replay; the others the stock way."""
        cached = [ch for ch in channels if ch in self.reducers]
        other = [ch for ch in channels if ch not in self.reducers]
        out: dict[str, DeltaChannelHistory] = {}
        if other:
            out.update(self._stock_history(config, other))
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
            out[ch] = {"writes": [], "seed": DeltaSnapshot(list(entry.value))}
        return out

    def delete_thread(self, thread_id: str) -> None:
        self.clear_cache(thread_id)
        super().delete_thread(thread_id)  # type: ignore[misc]  # a mixin: the stock saver's follows in the MRO
        if self.side_tables:
            with self._tx() as cur:
                for sql in DELETE_HEAD:
                    cur.execute(self.dialect.sql(sql), (str(thread_id),))

    def _forget_answer(self, at: tuple[str, str, str]) -> None:
        """Delete the resume value stored at checkpoint `at` (thread, namespace, id)."""
        with self._tx() as cur:
            cur.execute(
                self.dialect.sql(
                    f"DELETE FROM {self.writes_table} WHERE thread_id = ? AND checkpoint_ns = ? "
                    "AND checkpoint_id = ? AND task_id = ? AND channel = ?"
                ),
                (*at, NULL_TASK_ID, RESUME),
            )

    def _task_path(self) -> str:
        return "task_path"

    def _update_index(self, cur: Any, update: IndexUpdate) -> None:
        if update:
            cur.execute(self.dialect.sql(update[0]), update[1])

    def _writes_at(
        self, thread_id: str, ns: str, checkpoint_ids: list[str], channel: str
    ) -> dict[str, list[PendingWrite]]:
        """The channel's writes stored at each checkpoint, in replay order."""
        rows: list[Any] = []
        for at in range(0, len(checkpoint_ids), IDS_PER_QUERY):
            part = checkpoint_ids[at : at + IDS_PER_QUERY]
            rows += self._rows(
                writes_at_sql(
                    self.dialect, self.writes_table, self.value_column, self._task_path(), len(part)
                ),
                (thread_id, ns, channel, *part),
            )
        out: dict[str, list[PendingWrite]] = {}
        for cid, task_id, _, type_tag, value, _ in sorted(
            rows, key=lambda r: writes_sort_key(r[5] or "", r[1], r[2])
        ):
            out.setdefault(cid, []).append(
                (task_id, channel, self.serde.loads_typed((type_tag, value)))
            )
        return out

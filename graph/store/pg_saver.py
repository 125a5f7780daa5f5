"""Gatehouse's Postgres checkpointer: the stock `PostgresSaver` and its tables, with a
materialised head, a warm cache and the thread index (as saver.py). A checkpoint's
statements (the stock upserts, the head's new rows, a compare-and-set of the head) go
in one statement (data-modifying CTEs), its own transaction, a step's writes too: one
round trip and one execution each, rows in one part. Reads: `get_tuple` brings the head
beside the checkpoint (a run's first read of a thread another process wrote last), else
the cache, else the head when it is the checkpoint asked for, else the stock replay.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from functools import cached_property
from typing import Any

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row, tuple_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from gatehouse.graph.store.delta_reads import (
    ABSENT,
    DeltaReads,
    Entry,
    HeadPlan,
    IndexUpdate,
    Known,
    StaleWrites,
    WriteAt,
    checkpoint_row,
    checkpoint_row_sql,
    saved_config,
)
from gatehouse.graph.store.dialect import POSTGRES, in_one, one_statement
from gatehouse.graph.store.head import HeadUnreadable, decode, head_part, head_update, row_parts
from gatehouse.graph.store.langgraph_private import (
    DeltaSnapshot,
    pg_connection,
    pg_dump_blobs,
    pg_dump_writes,
    pg_load_checkpoint_tuple,
)

CHECKPOINT_ROW = checkpoint_row_sql(POSTGRES, "checkpoint_writes")
HeadElsewhere = psycopg.errors.DivisionByZero
# A checkpoint's head (`h{i}`) beside a read of it (`c`), as columns `h{i}_count`,
# `h{i}_n` and `h{i}_data` (arrays), unless its value is cached here: (channel, the
# checkpoints cached).
_HEAD_BESIDE = """ LEFT JOIN LATERAL (
    SELECT h.count, array(SELECT b.n FROM gatehouse_head_blocks b WHERE b.thread_id = h.thread_id
        AND b.checkpoint_ns = h.checkpoint_ns AND b.channel = h.channel ORDER BY b.pos) AS n,
        array(SELECT b.data FROM gatehouse_head_blocks b WHERE b.thread_id = h.thread_id
        AND b.checkpoint_ns = h.checkpoint_ns AND b.channel = h.channel ORDER BY b.pos) AS data
    FROM gatehouse_heads h WHERE h.thread_id = c.thread_id AND h.checkpoint_ns = c.checkpoint_ns
        AND h.channel = %s AND h.checkpoint_id = c.checkpoint_id
        AND NOT h.checkpoint_id = ANY(%s::text[])
) AS h{i} ON true"""


def with_heads(read: str, channels: int) -> str:
    """The checkpoint `read` with the heads of `channels` channels beside it."""
    columns = "".join(
        f", h{i}.count AS h{i}_count, h{i}.n AS h{i}_n, h{i}.data AS h{i}_data"
        for i in range(channels)
    )
    joins = "".join(_HEAD_BESIDE.format(i=i) for i in range(channels))
    return f"SELECT c.*{columns} FROM ({read}) AS c{joins}"


# One channel's head at a checkpoint: (thread, namespace, checkpoint id, channel, []).
HEAD_AT = with_heads(
    "SELECT %s::text AS thread_id, %s::text AS checkpoint_ns, %s::text AS checkpoint_id", 1
)


# The types of the columns that vary from row to row, after those alike in every row.
BLOB_COLUMNS = (2, ("text", "text", "text", "bytea"))
WRITE_COLUMNS = (5, ("int", "text", "text", "bytea"))


@contextmanager
def _in_transaction(conn: Any) -> Iterator[None]:
    """Around statements sent between the caller's own BEGIN and COMMIT in its pipelines
    (`conn.transaction()` waits for the server at each: two round trips more). Anything
    raised rolls back: a saver given one connection has no pool to do it."""
    try:
        yield
    except BaseException:
        if conn.info.transaction_status in (TransactionStatus.INTRANS, TransactionStatus.INERROR):
            with suppress(Exception):  # a broken connection: nothing to roll back
                conn.rollback()
        raise


# The stock read joins a checkpoint's channel versions to the thread's blobs; a planner
# without statistics (a new database) hashes every blob of the thread (3,900 for 17 at
# 300 turns). A lateral LIMIT 1 subquery cannot be flattened: one key lookup per channel.
_STOCK_BLOB_JOIN = """        from jsonb_each_text(checkpoint -> 'channel_versions')
        inner join checkpoint_blobs bl
            on bl.thread_id = checkpoints.thread_id
            and bl.checkpoint_ns = checkpoints.checkpoint_ns
            and bl.channel = jsonb_each_text.key
            and bl.version = jsonb_each_text.value"""
_BLOB_LOOKUPS = """        from jsonb_each_text(checkpoint -> 'channel_versions') as cv(key, value)
        cross join lateral (
            select b.channel, b.type, b.blob from checkpoint_blobs b
            where b.thread_id = checkpoints.thread_id
                and b.checkpoint_ns = checkpoints.checkpoint_ns
                and b.channel = cv.key
                and b.version = cv.value
            limit 1
        ) as bl"""


class GatehousePostgresSaver(DeltaReads, PostgresSaver):
    """`PostgresSaver` with a materialised head and a cache of the DeltaChannels."""

    remembers_writes = True
    dialect = POSTGRES
    writes_table, value_column = "checkpoint_writes", "blob"
    # Unchanged if a LangGraph release words its query differently (tested).
    SELECT_SQL = PostgresSaver.SELECT_SQL.replace(_STOCK_BLOB_JOIN, _BLOB_LOOKUPS)

    @cached_property
    def _one_at_a_time(self) -> AbstractContextManager[Any]:
        """The stock lock when the saver has one connection; none with a pool, where each
        call checks out its own: the lock made a process's runs queue for each other's
        round trips and commits (issue 58)."""
        return nullcontext() if isinstance(self.conn, ConnectionPool) else self.lock

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        """A cursor in a transaction sent in one pipeline with its BEGIN and COMMIT."""
        with (
            self._one_at_a_time,
            pg_connection(self.conn) as conn,
            _in_transaction(conn),
            conn.pipeline(),
            conn.cursor(binary=True, row_factory=tuple_row) as cur,
        ):
            cur.execute("BEGIN")
            yield cur
            cur.execute("COMMIT")

    # -- writes ------------------------------------------------------------------------
    def _put_checkpoint(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id, ns, parent, plans = self._begin_put(config, checkpoint)
        # As PostgresSaver.put: plain values inline in the checkpoint row, the rest as blobs
        # (a DeltaSnapshot's marked True inline).
        values = checkpoint["channel_values"]
        blob_values = {
            k: v
            for k, v in values.items()
            if not (v is None or isinstance(v, str | int | float | bool))
        }
        inline = {k: v for k, v in values.items() if k not in blob_values}
        inline.update({k: True for k, v in blob_values.items() if isinstance(v, DeltaSnapshot)})
        copy = {**checkpoint, "channel_values": inline}
        meta = Jsonb(get_serializable_checkpoint_metadata(config, metadata))
        cid = checkpoint["id"]
        blob_versions = {k: v for k, v in new_versions.items() if k in blob_values}
        blobs = pg_dump_blobs(self, thread_id, ns, blob_values, blob_versions)
        row = (thread_id, ns, cid, parent, Jsonb(copy), meta)
        index_row = (
            checkpoint_row(thread_id, plans, checkpoint) if not ns and self.side_tables else None
        )
        try:
            self._write_checkpoint(blobs, row, plans, index_row, whole=False)
        except HeadElsewhere:  # rolled back: a branch, or another writer came
            if any(plan[4] is not None for plan in plans):
                raise StaleWrites from None  # the writes remembered may not be all
            self._write_checkpoint(blobs, row, plans, index_row, whole=True)
        return saved_config(config, ns, checkpoint)

    def _write_checkpoint(
        self,
        blobs: Sequence[tuple[Any, ...]],
        row: tuple[Any, ...],
        plans: Sequence[HeadPlan],
        index_row: tuple[Any, ...] | None,
        *,
        whole: bool,
    ) -> None:
        """One statement (its own transaction, one round trip): the blobs, the checkpoint
        `row`, the heads (moved from the parent by compare-and-sets that abort it, a
        division by zero, when one finds the head elsewhere; else, `whole`, rewritten)
        and the index row. No part reads what another writes: the compare-and-set counts
        the parent's writes, the index row this checkpoint's (put_writes')."""
        thread_id, ns, cid, parent = row[:4]
        parts = [in_one(self.UPSERT_CHECKPOINT_BLOBS_SQL, blobs, BLOB_COLUMNS)] if blobs else []
        parts.append((self.UPSERT_CHECKPOINTS_SQL, row))
        at = (thread_id, ns, cid, parent)
        rewrite, moves = (list(plans), []) if whole else self._head_moves(at, plans)
        checks: list[int] = []
        for plan, change, move in moves:
            parts += row_parts((thread_id, ns, plan[0]), change)
            checks.append(len(parts))
            parts.append(move)
        for ch, value, *_ in rewrite:
            key = (thread_id, ns, ch)
            parts += row_parts(key, head_update(None, value, None, self.serde))
            parts.append(head_part(key, cid, len(value)))
        if index_row is not None:
            parts.append((CHECKPOINT_ROW, index_row))
        self._run(*one_statement(parts, checks))

    def _save_writes(
        self, at: WriteAt, writes: Sequence[tuple[str, Any]], index_update: IndexUpdate
    ) -> None:
        """The rows and the index's update in one statement."""
        rows = pg_dump_writes(self, *at, writes)
        if all(w[0] in WRITES_IDX_MAP for w in writes):  # the stock saver's upsert: the last wins
            query, rows = self.UPSERT_CHECKPOINT_WRITES_SQL, list({r[5]: r for r in rows}.values())
        else:  # its insert: the first wins
            query, rows = (
                self.INSERT_CHECKPOINT_WRITES_SQL,
                list({r[5]: r for r in rows[::-1]}.values()),
            )
        parts = [in_one(query, rows, WRITE_COLUMNS)] if rows else []
        if index_update:
            parts.append((POSTGRES.sql(index_update[0]), index_update[1]))
        if parts:
            self._run(*(parts[0] if len(parts) == 1 else one_statement(parts)))

    def _run(self, sql: str, params: Sequence[Any]) -> None:
        """One statement: its own transaction (the connections autocommit). In a
        pipeline: outside one, psycopg prepares a statement new to the connection in a
        round trip of its own (Parse, Sync: a transaction more; +2 a turn in turns 2-4
        by tests/test_postgres_work_per_turn.py), and app CPU measured the same."""
        with (
            self._one_at_a_time,
            pg_connection(self.conn) as conn,
            conn.pipeline(),
            conn.cursor(binary=True, row_factory=tuple_row) as cur,
        ):
            cur.execute(sql, params)

    # -- reads ---------------------------------------------------------------------------
    def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with (
            self._one_at_a_time,
            pg_connection(self.conn) as conn,
            conn.cursor(binary=True, row_factory=tuple_row) as cur,
        ):
            cur.execute(sql, params)
            return cur.fetchall()

    def _read_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The stock read and, in the same round trip, the delta channels' heads when
        they are at the checkpoint read and their values not cached (a run's first read
        of a thread another process wrote last)."""
        conf = config["configurable"]
        thread_id, ns, cid = (
            conf["thread_id"],
            conf.get("checkpoint_ns", ""),
            get_checkpoint_id(config),
        )
        key = (str(thread_id), str(ns))
        if cid:  # as PostgresSaver.get_tuple
            args: tuple[Any, ...] = (thread_id, ns, cid)
            where = "WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = %s"
        else:
            args = (thread_id, ns)
            where = (
                "WHERE thread_id = %s AND checkpoint_ns = %s ORDER BY checkpoint_id DESC LIMIT 1"
            )
        channels = list(self.reducers) if self.side_tables else []
        cached = self._cached_ids(key)
        heads = [param for ch in channels for param in (ch, cached)]
        with (
            self._one_at_a_time,
            pg_connection(self.conn) as conn,
            conn.cursor(binary=True, row_factory=dict_row) as cur,
        ):
            cur.execute(with_heads(self.SELECT_SQL + where, len(channels)), (*args, *heads))
            value = cur.fetchone()
        if value is None:
            return None
        if value["checkpoint"]["v"] < 4 and value["parent_checkpoint_id"]:
            return PostgresSaver.get_tuple(self, config)  # its migration of old pending sends
        saved: CheckpointTuple = pg_load_checkpoint_tuple(self, value)
        for i, ch in enumerate(channels):
            head = (value[f"h{i}_count"], value[f"h{i}_n"], value[f"h{i}_data"])
            if (entry := self._head_entry(*head)) is not None:
                self._put(key, value["checkpoint_id"], ch, entry)
        self._remember_read(
            key, value["checkpoint_id"], value["pending_writes"], saved.pending_writes
        )
        return saved

    def _remember_read(
        self, key: tuple[str, str], cid: str, raw: Any, writes: Sequence[PendingWrite] | None
    ) -> None:
        """The delta channels' writes a read found, as if this process had written them
        (`put` checks the parent still holds as many), with their task paths from `raw`
        (the stock read's rows: task id, channel, type, value, task path, idx)."""
        order = sorted(
            ((w[4].decode(), w[0].decode(), int(w[5]), w[1].decode()) for w in raw or ()),
            key=lambda w: writes_sort_key(w[0], w[1], w[2]),
        )
        if [w[1::2] for w in order] != [w[:2] for w in writes or ()]:
            return  # not the stock read's rows: `put` reads the writes back
        known: list[Known] = [
            (*at, value)
            for at, (_, _, value) in zip(order, writes or (), strict=True)
            if at[3] in self.reducers
        ]
        with self._cache_lock:
            mine = self._known.get(key)
            if mine is not None and mine[0] == cid and mine[2]:
                return  # this process wrote it: it knows more
        self._remember(key, None)  # what it saved there is in `known`
        self._remember(key, cid, known)

    def _head_entry(self, count: int | None, n: list[int], data: list[bytes]) -> Entry | None:
        """The value of a head read beside a checkpoint (`with_heads`); None when there
        is none or it does not decode (then the history is replayed)."""
        if count is None:
            return None
        try:
            return Entry(decode(list(zip(n, data, strict=True)), count, self.serde), ABSENT)
        except HeadUnreadable:
            return None

    def _compute(
        self, thread_id: str, ns: str, checkpoint_id: str, ch: str, config: RunnableConfig
    ) -> Entry:
        at: tuple[Any, ...] = (thread_id, ns, checkpoint_id, ch, [])
        rows = self._rows(HEAD_AT, at) if self.side_tables else []
        entry = self._head_entry(*rows[0][3:]) if rows else None
        if entry is None:
            entry = Entry(self._replayed(ch, config, checkpoint_id), ABSENT)
        self._put((thread_id, ns), checkpoint_id, ch, entry)
        return entry

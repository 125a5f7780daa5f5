"""Gatehouse's SQLite checkpointer: zlib-compressed blobs (type tag `<type>+zlib`), a
materialised head (head.py) and a warm cache (delta_reads.py).

With `DeltaChannel` a checkpoint stores only what its step wrote, and the stock
`SqliteSaver` replays every ancestor's writes on each read: O(thread length). Here a
checkpoint not known is read by walking up to the nearest known one (the head, a cached
value, a snapshot) and applying only the writes in between (bench/cold.py).

Results equal the stock saver's (tests/test_storage_equivalence.py); the tables are the
stock ones (read them with `serde=compact_serde()`), and the head's are only a shortcut:
missing, stale or unreadable, ignored.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from gatehouse.graph.store.delta_reads import (
    ABSENT,
    DeltaReads,
    Entry,
    IndexUpdate,
    WriteAt,
    checkpoint_row,
    checkpoint_row_sql,
    saved_config,
    unwrap,
)
from gatehouse.graph.store.dialect import SQLITE
from gatehouse.graph.store.head import HEAD_TABLES, HeadUnreadable, decode
from gatehouse.graph.store.langgraph_private import sqlite_has_task_path
from gatehouse.graph.store.plain import READ_BLOCKS, READ_HEAD
from gatehouse.graph.store.reader import TREE_INDEX
from gatehouse.graph.store.threads import THREADS_INDEX, THREADS_TABLE

# The checkpoints walked up from a target, target first: (id, parent id, own value).
Chain = list[tuple[str, str | None, Any]]
# Checkpoints walked up looking for a known one before replaying the stock way instead.
MAX_WALK = 256
# Smaller blobs are stored as they are: zlib would not pay for itself.
COMPRESS_MIN_BYTES = 160
# zlib's fastest level: ~5x less CPU than the default (6) on checkpoint blobs, which are
# written a dozen times a turn, for a few percent more bytes.
COMPRESS_LEVEL = 1


def compress(data: bytes) -> bytes:
    """zlib with a window no larger than `data` needs: the default state (~260 KB) is
    allocated on every call, ten times the cost of compressing a turn's small blobs.
    Any zlib decompressor reads a smaller window (the header names it)."""
    wbits = min(15, max(9, len(data).bit_length()))
    packer = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, wbits, wbits - 7)
    return packer.compress(data) + packer.flush()


class ZlibCodec:
    """A `CipherProtocol` that compresses: `EncryptedSerializer` tags each blob with the
    codec and keeps LangGraph's msgpack allowlist working."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        if len(plaintext) >= COMPRESS_MIN_BYTES:
            packed = compress(plaintext)
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


HEAD_SCHEMA = ";\n".join(map(SQLITE.ddl, HEAD_TABLES))
CHECKPOINT_ROW = checkpoint_row_sql(SQLITE, "writes")


class GatehouseSqliteSaver(DeltaReads, SqliteSaver):
    """`SqliteSaver` with compressed blobs, a materialised head and cached reads of the
    DeltaChannels in `reducers` (channel -> reducer; or the graph registers them)."""

    dialect = SQLITE
    writes_table, value_column = "writes", "value"

    def default_serde(self) -> Any:
        return compact_serde()

    def setup(self) -> None:
        if self.is_setup:
            return
        super().setup()
        try:
            self.conn.executescript(
                f"{HEAD_SCHEMA};\n{THREADS_TABLE.format(real='REAL')};\n{THREADS_INDEX};\n{TREE_INDEX};"
            )
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc):
                raise
            self.side_tables = False

    # -- writes ------------------------------------------------------------------------
    def _put_checkpoint(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """`SqliteSaver.put`, with the head and the index row in the same transaction."""
        thread_id, ns, parent, plans = self._begin_put(config, checkpoint)
        type_, blob = self.serde.dumps_typed(checkpoint)
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False).encode(
            "utf-8", "ignore"
        )
        with self.cursor() as cur:
            cur.execute(
                "INSERT OR REPLACE INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
                "parent_checkpoint_id, type, checkpoint, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (thread_id, ns, checkpoint["id"], parent, type_, blob, meta),
            )
            cid = checkpoint["id"]
            rewrite, checks = self._move_heads(
                cur, self.conn.cursor, (thread_id, ns, cid, parent), plans
            )
            rewrite += [plan for plan, check in checks if check.fetchone() is None]
            self._rewrite_heads(cur, (thread_id, ns, cid), rewrite)
            if not ns and self.side_tables:
                cur.execute(CHECKPOINT_ROW, checkpoint_row(thread_id, plans, checkpoint))
        return saved_config(config, ns, checkpoint)

    def _save_writes(
        self, at: WriteAt, writes: Sequence[tuple[str, Any]], index_update: IndexUpdate
    ) -> None:
        replace = all(w[0] in WRITES_IDX_MAP for w in writes)
        dumps = self.serde.dumps_typed
        rows = [(*at, WRITES_IDX_MAP.get(ch, i), ch, *dumps(v)) for i, (ch, v) in enumerate(writes)]
        with self.cursor() as cur:
            cur.executemany(
                f"INSERT OR {'REPLACE' if replace else 'IGNORE'} INTO writes (thread_id, checkpoint_ns, "
                "checkpoint_id, task_id, task_path, idx, channel, type, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            self._update_index(cur, index_update)

    # -- reads ------------------------------------------------------------------------
    def _head(self, thread_id: str, ns: str, ch: str) -> tuple[str, int] | None:
        rows = self._rows(READ_HEAD, (thread_id, ns, ch)) if self.side_tables else []
        return (rows[0][0], rows[0][1]) if rows else None

    def _head_value(self, thread_id: str, ns: str, ch: str, head: tuple[str, int]) -> Entry | None:
        """The value the head rows hold; None when they do not decode."""
        rows = self._rows(READ_BLOCKS, (thread_id, ns, ch))
        try:
            return Entry(decode(rows, head[1], self.serde), ABSENT)
        except HeadUnreadable:
            return None

    def _compute(
        self, thread_id: str, ns: str, checkpoint_id: str, ch: str, config: RunnableConfig
    ) -> Entry:
        key = (thread_id, ns)
        head = self._head(thread_id, ns, ch)
        if head is not None and head[0] == checkpoint_id:
            entry = self._head_value(thread_id, ns, ch, head)
            if entry is not None:
                self._put(key, checkpoint_id, ch, entry)
                return entry
            head = None
        chain: Chain = []
        base: Entry | None = None
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
                chain.append((cid, parent_id, values.get(ch, ABSENT)))
                if parent_id is None:
                    base = Entry([], ABSENT)  # before the first step: empty
                    break
                if (base := self._get(key, parent_id, ch)) is not None:
                    break
                if head is not None and parent_id == head[0]:
                    break  # the head: loaded below, outside this cursor
                if len(chain) > 1 and chain[-1][2] is not ABSENT:
                    base = Entry([], ABSENT)  # a snapshot on the way: start there
                    break
                if len(chain) >= MAX_WALK:
                    break  # far from anything known (time travel): the stock replay
                cid = parent_id
        if base is None and head is not None and chain and chain[-1][1] == head[0]:
            base = self._head_value(thread_id, ns, ch, head)
        if not chain:
            return Entry([], ABSENT)
        own = chain[0][2]
        if base is None:
            value = self._replayed(ch, config, checkpoint_id)
        else:
            value = self._rolled_forward(thread_id, ns, ch, base, chain)
        entry = Entry(value, own)
        self._put(key, checkpoint_id, ch, entry)
        return entry

    def _rolled_forward(self, thread_id: str, ns: str, ch: str, base: Entry, chain: Chain) -> Any:
        """The value at `chain[0]`: from the known ancestor `base` (or the latest snapshot
        on the way), with the writes after it applied."""
        value = base.current()
        steps = list(reversed(chain))
        parents = [parent for _, parent, _ in steps if parent is not None]
        for i in range(len(steps) - 2, -1, -1):
            if steps[i][2] is not ABSENT:  # the latest snapshot on the way
                value = unwrap(steps[i][2])
                parents = [cid for cid, _, _ in steps[i:-1]]
                break
        writes = self._writes_at(thread_id, ns, parents, ch)
        return self._apply(ch, value, [w for p in parents for w in writes.get(p, ())])

    def _tx(self) -> AbstractContextManager[Any]:
        return self.cursor()

    def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self.cursor(transaction=False) as cur:
            return list(cur.execute(sql, params).fetchall())

    def _task_path(self) -> str:
        return "task_path" if sqlite_has_task_path(self) else "''"

"""The SQLite file's write-ahead log stays small on disk while it is open (issue 36:
storage on disk, WAL included): it is folded into the database every 256 pages and cut
back to 1 MB after, where SQLite's defaults let it grow to ~4 MB and keep that size."""

from __future__ import annotations

import os
import random
from pathlib import Path

from gatehouse.graph import ScriptedModel, Session, ai, build_graph, tool_call
from gatehouse.graph.store import open_storage
from gatehouse.graph.store.sqlite import WAL_BYTES
from tests.test_builtin_hooks import POLICY, TOOLS

# A transaction may add its own pages past the limit before the next checkpoint.
SLACK = 256 * 1024


def test_a_long_thread_keeps_the_wal_under_its_limit(tmp_path: Path) -> None:
    db = tmp_path / "gatehouse.sqlite"
    storage = open_storage(str(db))
    # Every turn: a free tool call with a 20 KB argument (that does not compress) and its
    # result, then an answer.
    rng = random.Random(0)
    script = [
        m
        for i in range(60)
        for m in (
            ai("", tool_call("search", {"query": rng.randbytes(10_000).hex()}, f"s{i}")),
            "ok",
        )
    ]
    graph = build_graph(
        model=ScriptedModel(script=script, fallback="done"),
        tools=TOOLS,
        checkpointer=storage.checkpointer,
        policy=POLICY,
    )
    session = Session(graph, storage, TOOLS)
    wal = Path(f"{db}-wal")
    largest = 0
    for i in range(60):
        run = session.send("t", f"question {i}")
        run.collect()
        assert run.status == "completed"
        largest = max(largest, wal.stat().st_size)
    # Far more than the limit went through the log (the database holds it)...
    assert os.path.getsize(db) > 4 * WAL_BYTES
    # ...and the log never kept more than the limit and one transaction's pages.
    assert largest <= WAL_BYTES + SLACK
    session.close()

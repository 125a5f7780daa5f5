"""A large inbox stays instant (issue 58): the cards of many paused threads are read
in one query, not one per card, by the Session's inbox, the web inbox's first page and
the terminal's `pending` / `threads`. (The timings at 1,000 and 10,000 paused threads
on Postgres are bench/load.py's; here, what makes them flat.)"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gatehouse.graph import Session
from gatehouse.ui.term import readonly
from tests.support.crash_worker import open_session

PAUSED = 300


def clone(db: Path, source: str, count: int) -> None:
    """`count` copies (`inbox-1` ...) of the thread `source` in every table with threads."""
    with sqlite3.connect(db) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in names:
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            if "thread_id" not in columns:
                continue
            chosen = ", ".join("'inbox-' || g.x" if c == "thread_id" else c for c in columns)
            conn.execute(
                f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "
                f"WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < ?) "
                f"SELECT {chosen} FROM {table}, g WHERE thread_id = ?",
                (count, source),
            )


@pytest.fixture
def inbox(tmp_path: Path) -> Iterator[tuple[Session, Path]]:
    db = tmp_path / "gatehouse.sqlite"
    session = open_session(str(db), str(tmp_path / "counter.txt"))
    assert session.send("seed", "hello").collect()[-1].status == "awaiting_approval"
    assert session.send("done", "free: look").collect()[-1].status == "completed"
    clone(db, "seed", PAUSED - 1)
    try:
        yield session, db
    finally:
        session.close()


def counting(monkeypatch: pytest.MonkeyPatch, db: Any) -> list[str]:
    """The statements `db` (a reader's database) runs from now on."""
    seen: list[str] = []
    real = db.rows

    def rows(sql: str, params: Any = ()) -> Any:
        seen.append(sql)
        return real(sql, params)

    monkeypatch.setattr(db, "rows", rows)
    return seen


def test_the_sessions_inbox_reads_every_card_in_one_query(
    inbox: tuple[Session, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    session, _ = inbox
    waiting = session.thread_list().awaiting_approval
    assert len(waiting) == PAUSED and "done" not in {i.thread_id for i in waiting}
    assert session.storage.reader is not None
    seen = counting(monkeypatch, session.storage.reader._db)
    cards = session.thread_list().pending_cards()
    assert len(cards) == PAUSED and {p.kind for _, p in cards} == {"approval"}
    assert len(seen) == 1  # the cards: one query for all of them
    # The web inbox's first page: its 50 cards, in the same one query.
    seen.clear()
    page = session.thread_list().pending_many([i.thread_id for i in waiting[:50]])
    assert len(seen) == 1 and all(p is not None for p in page.values()) and len(page) == 50
    # The same cards as one `pending` each would read.
    assert page["inbox-7"] == session.view("inbox-7").pending
    # An id given twice, or one with no thread, is one card or none (the ids drive the query).
    seen.clear()
    again = session.thread_list().pending_many(["inbox-7", "inbox-7", "nobody"])
    assert len(seen) == 1 and again == {"inbox-7": page["inbox-7"], "nobody": None}


def test_cards_read_in_several_queries_are_those_read_one_by_one(
    inbox: tuple[Session, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past 500 threads the cards come in a query per 500, each read while the one
    before is decoded: every card is still its own thread's, none lost or swapped."""
    session, _ = inbox
    ids = [f"nobody-{i}" for i in range(1200)]
    real = [i.thread_id for i in session.thread_list().awaiting_approval]
    for at, thread_id in zip((0, 499, 500, 999, 1000, 1199), real, strict=False):
        ids.insert(at, thread_id)  # at each chunk's edges
    assert session.storage.reader is not None
    seen = counting(monkeypatch, session.storage.reader._db)
    cards = session.thread_list().pending_many(ids)
    assert len(seen) == 3 and list(cards) == ids
    assert {t: p for t, p in cards.items() if p is not None} == {
        t: session.view(t).pending for t in real[:6]
    }


def test_the_terminals_pending_and_threads_read_in_a_few_queries(
    inbox: tuple[Session, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, db = inbox
    from gatehouse.graph.store import reader as reader_module

    queries: list[str] = []
    real_open = reader_module.open_reader

    def open_counted(url: str, **kw: Any) -> Any:
        opened = real_open(url, **kw)
        monkeypatch.setattr(opened._db, "rows", _recorder(opened._db.rows, queries))
        return opened

    monkeypatch.setattr(readonly.graph, "open_reader", open_counted)
    readonly.pending(str(db), as_json=True)
    listed = json.loads(capsys.readouterr().out)
    assert len(listed) == PAUSED and {c["kind"] for c in listed} == {"approval"}
    assert len(queries) <= 4, queries  # crash check, the list, the cards: not one per card
    queries.clear()
    readonly.threads(str(db), as_json=True, limit=PAUSED + 10)
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == PAUSED + 1 and sum(r["pending"] for r in rows) == PAUSED
    assert len(queries) <= 3, queries


def _recorder(rows: Any, into: list[str]) -> Any:
    def record(sql: str, params: Any = ()) -> Any:
        into.append(sql)
        return rows(sql, params)

    return record


def test_a_cards_interrupt_is_read_without_its_response_schema() -> None:
    """`interrupts_in` skips the answer's schema (most of a card's bytes) and reads the
    same ids and values as a whole read, whatever the value holds."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.types import Interrupt

    from gatehouse.graph.store.plain import interrupts_in, interrupts_of, loads

    serde = JsonPlusSerializer()
    trap = {"args": {"note": "\xafresponse_schema", "response_schema": [1, {"x": "y" * 300}]}}
    for value in ({"action_requests": []}, trap, "plain", None):
        for schema in (None, {"type": "object", "title": "response_schema"}):
            for many in (1, 2):
                stored = serde.dumps_typed(
                    [Interrupt(value, f"id-{i}", response_schema=schema) for i in range(many)]
                )
                whole = interrupts_of(loads(*stored))
                assert interrupts_in(*stored) == whole
                assert [i for i, _ in whole] == [f"id-{i}" for i in range(many)]

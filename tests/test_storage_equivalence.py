"""Issue 8: the compact message storage changes nothing a thread contains.

Gatehouse stores messages in a `DeltaChannel` and reads them through a warm cache
(`graph.saver`). Threads are written and read in separate processes
(fresh interpreter, cold cache) and compared:
- with the optimisation vs without it (the `add_messages` channel of before);
- the caching saver vs the stock `SqliteSaver`, at every checkpoint of the history;
- a thread begun before the change and continued after it;
- time travel, `Session.undo` and `Session.fork` on a long thread.

Run as a script, this file is the worker the tests start:
    python tests/test_storage_equivalence.py run|dump|travel DB VARIANT ...
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
THREAD = "eq-thread"
REJECT = {"decisions": [{"type": "reject", "message": "not this one"}]}


# -- worker (runs in a subprocess) -------------------------------------------------
def _session(db: str, variant: str, reader: str = "cached") -> Any:
    """variant: delta (the default) | baseline (add_messages) | snap3 (a DeltaChannel
    snapshot every 3 updates, to cover snapshots); reader: cached | stock."""

    from langgraph.checkpoint.sqlite import SqliteSaver

    from bench.workload import TOOLS, scripted_model, use_add_messages_state, use_snapshot_frequency
    from gatehouse.graph import Session, build_graph
    from gatehouse.graph.store import connect_sqlite, open_storage
    from gatehouse.graph.store.saver import compact_serde

    if variant == "baseline":
        use_add_messages_state()
    elif variant == "snap3":
        use_snapshot_frequency(3)
    storage = open_storage(db)
    if reader == "stock":
        storage.checkpointer = SqliteSaver(connect_sqlite(db), serde=compact_serde())
    built = build_graph(model=scripted_model(60), tools=TOOLS, checkpointer=storage.checkpointer)
    return Session(built, storage, TOOLS)


def _turns(session: Any, first: int, last: int) -> None:
    from bench.workload import APPROVE, user_text

    for turn in range(first, last + 1):
        run = session.send(THREAD, user_text(turn))
        run.collect()
        assert run.status == "awaiting_approval", run.status
        run = session.resume(THREAD, REJECT if turn % 4 == 3 else APPROVE)
        run.collect()
        assert run.status == "completed", run.status


def _message(m: Any) -> dict[str, Any]:
    return {
        "type": m.type,
        "id": m.id,
        "content": m.content,
        "tool_calls": getattr(m, "tool_calls", None),
        "tool_call_id": getattr(m, "tool_call_id", None),
        "status": getattr(m, "status", None),
    }


def _dump(session: Any) -> dict[str, Any]:
    config = {"configurable": {"thread_id": THREAD}}
    history = []
    for snap in session.agent.get_state_history(config):
        # Each checkpoint read on its own, as time travel does (not the history walk's values).
        state = session.agent.get_state(snap.config)
        history.append(
            {
                "next": list(state.next),
                "messages": [_message(m) for m in state.values.get("messages", [])],
                "interrupts": [i.value for i in state.interrupts],
            }
        )
    return {"messages": [_message(m) for m in session.view(THREAD).messages], "history": history}


def _travel(session: Any) -> dict[str, Any]:
    """Undo the last turn, fork an early user message, read an old checkpoint."""
    from gatehouse.graph.protocol.operations import Undo
    from gatehouse.graph.service.transcript import message_view

    before = session.view(THREAD).messages
    removed = session.submit(Undo(THREAD)).result().removed
    after_undo = session.view(THREAD).messages
    old = next(
        s
        for s in session.agent.get_state_history({"configurable": {"thread_id": THREAD}})
        if len(s.values.get("messages", [])) == 10 and not s.next
    )
    run = session.fork(THREAD, 5, "a different second question")
    run.collect()
    forked = session.view(THREAD).messages
    return {
        "before": len(before),
        "removed": removed,
        "after_undo": [message_view(m) for m in after_undo]
        == [message_view(m) for m in before[: len(after_undo)]],
        "after_undo_len": len(after_undo),
        "old_checkpoint_len": len(session.agent.get_state(old.config).values["messages"]),
        "fork_status": run.status,
        "forked_prefix_kept": [m.id for m in forked[:5]] == [m.id for m in before[:5]],
        "forked_text": forked[5].content,
        "forked_len": len(forked),
        "pending_after_fork": session.view(THREAD).pending is not None,
    }


def worker(argv: list[str]) -> None:
    command, db, variant, *rest = argv
    session = _session(db, variant, rest[0] if command == "dump" and rest else "cached")
    try:
        if command == "run":
            _turns(session, int(rest[0]), int(rest[1]))
            out: Any = {"ok": True}
        elif command == "dump":
            out = _dump(session)
        elif command == "travel":
            out = _travel(session)
        else:
            raise SystemExit(f"unknown command {command}")
    finally:
        session.close()
    print(json.dumps(out))


# -- tests ---------------------------------------------------------------------------
def _call(*args: str) -> Any:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _without_ids(dump: dict[str, Any]) -> dict[str, Any]:
    def strip(ms: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in m.items() if k != "id"} for m in ms]

    return {
        "messages": strip(dump["messages"]),
        "history": [{**h, "messages": strip(h["messages"])} for h in dump["history"]],
    }


def _write(db: Path | str, variant: str, *spans: tuple[int, int]) -> None:
    for first, last in spans:  # each span in a new process
        _call("run", str(db), variant, str(first), str(last))


@pytest.mark.slow
def test_thread_contents_identical_with_and_without_delta_storage(tmp_path: Path) -> None:
    delta, base = tmp_path / "delta.sqlite", tmp_path / "base.sqlite"
    _write(delta, "delta", (1, 4), (5, 8))
    _write(base, "baseline", (1, 4), (5, 8))
    cached = _call("dump", str(delta), "delta", "cached")
    again = _call("dump", str(delta), "delta", "cached")
    stock = _call("dump", str(delta), "delta", "stock")
    without = _call("dump", str(base), "baseline", "cached")
    assert len(cached["messages"]) == 8 * 5
    # The same ids and contents in every process and through either saver.
    assert cached == again == stock
    # The same thread as without the optimisation (ids are random per run).
    assert _without_ids(cached) == _without_ids(without)
    # And it is smaller on disk.
    assert delta.stat().st_size < base.stat().st_size


@pytest.mark.slow
def test_snapshots_and_cache_agree_with_stock_saver(tmp_path: Path) -> None:
    db = tmp_path / "snap.sqlite"
    _write(db, "snap3", (1, 3), (4, 6))
    cached = _call("dump", str(db), "snap3", "cached")
    stock = _call("dump", str(db), "snap3", "stock")
    assert cached == stock
    assert len(cached["messages"]) == 6 * 5


@pytest.mark.slow
def test_thread_begun_before_the_change_reads_and_continues_the_same(tmp_path: Path) -> None:
    migrated, base = tmp_path / "migrated.sqlite", tmp_path / "base.sqlite"
    _write(migrated, "baseline", (1, 3))
    _write(migrated, "delta", (4, 6))
    _write(base, "baseline", (1, 6))
    got = _call("dump", str(migrated), "delta", "cached")
    stock = _call("dump", str(migrated), "delta", "stock")
    want = _call("dump", str(base), "baseline", "cached")
    assert got == stock
    assert _without_ids(got) == _without_ids(want)


@pytest.mark.slow
def test_time_travel_undo_and_fork_on_a_long_thread(tmp_path: Path) -> None:
    _travel_on(tmp_path / "long.sqlite")


@pytest.mark.slow
@pytest.mark.postgres
def test_time_travel_undo_and_fork_on_a_long_thread_on_postgres(postgres_url: str) -> None:
    """Postgres writes a checkpoint's head rows in one statement: the undo's rewrite
    from a middle block (the thread shorter) and the fork's branch, rewritten whole once
    its compare-and-set aborted, read back by a fresh process through the head."""
    _travel_on(postgres_url)
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        heads = conn.execute(
            "SELECT h.count, (SELECT coalesce(sum(b.n), 0) FROM gatehouse_head_blocks b "
            "WHERE b.thread_id = h.thread_id AND b.checkpoint_ns = h.checkpoint_ns "
            "AND b.channel = h.channel) FROM gatehouse_heads h WHERE h.thread_id = %s",
            (THREAD,),
        ).fetchall()
    # The head's rows hold its count of messages (else reads replay the history).
    assert len(heads) == 1 and heads[0][0] == heads[0][1] > 0, heads


def _travel_on(db: Path | str) -> None:
    _write(db, "delta", (1, 30))
    out = _call("travel", str(db), "delta")
    assert out["before"] == 150
    assert out["removed"] == 5 and out["after_undo_len"] == 145 and out["after_undo"]
    assert out["old_checkpoint_len"] == 10
    # fork replaces user message 5 (turn 2) and runs on: until the next approval.
    assert out["fork_status"] == "awaiting_approval" and out["pending_after_fork"]
    assert out["forked_prefix_kept"] and out["forked_text"] == "a different second question"
    # 5 kept + the new question + the call message + the free call's result (it ran
    # beside the review; get_state shows such finished sibling writes).
    assert out["forked_len"] == 8
    # A fresh process sees the same forked thread.
    again = _call("dump", str(db), "delta", "cached")
    assert len(again["messages"]) == 8
    assert again["messages"][5]["content"] == "a different second question"


def test_merge_messages_matches_add_messages_in_any_batching() -> None:
    import random

    from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages

    from gatehouse.graph.agent.message_merge import merge_messages

    rng = random.Random(8)
    for _ in range(200):
        writes: list[list[Any]] = []
        want: list[Any] = []  # add_messages, one step at a time
        for step in range(rng.randint(1, 40)):
            live = [m.id for m in want]
            roll = rng.random()
            if live and roll < 0.1:
                batch: list[Any] = [RemoveMessage(id=rng.choice(live))]
            elif live and roll < 0.2:
                batch = [AIMessage(f"edit {step}", id=rng.choice(live))]
            elif roll < 0.23:
                batch = [
                    RemoveMessage(id=REMOVE_ALL_MESSAGES),
                    HumanMessage(f"after {step}", id=f"a{step}"),
                ]
            else:
                batch = [
                    HumanMessage(f"text {step}.{k}", id=f"m{step}.{k}")
                    for k in range(rng.randint(1, 3))
                ]
            writes.append(batch)
            want = add_messages(want, batch)
        one_by_one: list[Any] = []
        for batch in writes:
            if one_by_one and rng.random() < 0.3:
                # LangGraph hands the reducer shallow copies of the channel's list.
                one_by_one = list(one_by_one)
            one_by_one = merge_messages(one_by_one, [batch])
        cut = rng.randint(0, len(writes))
        split = merge_messages(merge_messages([], writes[:cut]), writes[cut:])
        assert [(m.id, m.content) for m in one_by_one] == [(m.id, m.content) for m in want]
        assert [(m.id, m.content) for m in split] == [(m.id, m.content) for m in want]


def test_merge_messages_reads_an_edited_copy_afresh() -> None:
    """A list with the same length as one merged before, but one message swapped for
    another, must not borrow that list's id -> position index."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph.message import add_messages

    from gatehouse.graph.agent.message_merge import merge_messages

    history = merge_messages([], [[HumanMessage(f"m{i}", id=f"m{i}") for i in range(40)]])
    edited = list(history)
    edited[3], edited[7] = edited[7], edited[3]  # same objects, another order
    update = [AIMessage("new text", id="m3")]
    assert [m.content for m in merge_messages(edited, [update])] == [
        m.content for m in add_messages(edited, update)
    ]


if __name__ == "__main__":
    worker(sys.argv[1:])

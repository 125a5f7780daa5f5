"""Issue 18: a thread read in a process that has never seen it, fast and right.

The saver keeps a materialised head (the messages at a thread's latest checkpoint,
graph/store/head.py) and the thread index; `graph.open_reader` reads threads without
LangGraph. Here, against the stock savers' replay of the history: reads through the
head equal the replay after every kind of turn, after undo, fork and compaction, at
every old checkpoint (time travel), and when the head is stale or damaged (it is
only ever a shortcut). The reader answers what the Session answers. The saver lists
threads that no Session ran (Studio, the SDK, a raw `graph.invoke`). A large file
opens without reading every page, and damage still gets a clear error.

Timing targets live in bench/cold.py (BENCHMARKS.md), not here.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from gatehouse.graph import (
    Compaction,
    ScriptedModel,
    Session,
    StorageError,
    ai,
    build_graph,
    open_reader,
    tool_call,
)
from gatehouse.graph.protocol.operations import Compact, Delete, Undo
from gatehouse.graph.protocol.pauses import pause_from
from gatehouse.graph.store import open_storage
from gatehouse.graph.store.saver import compact_serde
from gatehouse.graph.store.sqlite import QUICK_CHECK_FULL_BYTES
from tests.support.core_fixtures import Ledger, make_tools

APPROVE = {"decisions": [{"type": "approve"}]}
REJECT = {"decisions": [{"type": "reject", "message": "not that one"}]}
RESPOND = {"decisions": [{"type": "respond", "message": "pretend it went out"}]}


def gated(n: int) -> Any:
    """A model turn with a gated call and a free one beside it."""
    return ai(
        "",
        tool_call("send_email", {"to": f"a{n}@x.io", "body": f"mail {n}"}, f"mail-{n}"),
        tool_call("lookup", {"key": f"k{n}"}, f"look-{n}"),
    )


# Turn by turn: approve, reject, respond, a free call only, plain text.
SCRIPT = [
    gated(1),
    "sent one",
    gated(2),
    "fine, not two",
    gated(3),
    "three answered",
    ai("", tool_call("lookup", {"key": "free"}, "look-free")),
    "looked up",
    "just text",
] + [x for n in range(4, 40) for x in (gated(n), f"done {n}")]


def build(db: str, tmp: Path, script: list[Any] | None = None, **kwargs: Any) -> Session:
    ledger = Ledger(tmp / "ledger.jsonl")
    tools = make_tools(ledger)
    storage = open_storage(db)
    graph = build_graph(
        model=ScriptedModel(script=script or SCRIPT),
        tools=tools,
        checkpointer=storage.checkpointer,
        journal=storage.journal,
        **kwargs,
    )
    return Session(graph, storage, tools)


def stock_graph(db: str, tmp: Path, *, postgres: bool = False) -> Any:
    """The same graph on the stock saver: reads replay the history."""
    if postgres:
        import psycopg
        from psycopg.rows import dict_row

        saver: Any = PostgresSaver(
            psycopg.connect(db, autocommit=True, prepare_threshold=0, row_factory=dict_row)
        )
    else:
        saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False), serde=compact_serde())
    return build_graph(
        model=ScriptedModel(script=SCRIPT),
        tools=make_tools(Ledger(tmp / "l2.jsonl")),
        checkpointer=saver,
    )


def view(state: Any) -> dict[str, Any]:
    return {
        "messages": [
            (m.type, m.id, m.content, getattr(m, "tool_calls", None))
            for m in state.values.get("messages", [])
        ],
        "next": state.next,
        "interrupts": [(i.id, i.value) for i in state.interrupts],
    }


def same_everywhere(
    db: str, tmp: Path, thread: str, *, postgres: bool = False, history: bool = True
) -> int:
    """A fresh Gatehouse saver (nothing cached: the head, or a walk) and the stock
    saver read the same thread the same, at the head and at every old checkpoint."""
    config = {"configurable": {"thread_id": thread}}
    fresh = build(db, tmp)
    stock = stock_graph(db, tmp, postgres=postgres)
    try:
        assert view(fresh.agent.get_state(config)) == view(stock.get_state(config))
        if not history:
            return 1
        checked = 0
        for snapshot in stock.get_state_history(config):
            assert view(fresh.agent.get_state(snapshot.config)) == view(
                stock.get_state(snapshot.config)
            ), snapshot.config
            checked += 1
        return checked
    finally:
        fresh.close()


def drive(session: Session, thread: str, answers: list[Any], *, strict: bool = True) -> None:
    """One turn per answer (None: the turn must not pause); `strict=False` answers
    whatever pauses with the next answer."""
    for n, answer in enumerate(answers):
        run = session.send(thread, f"request {n}")
        run.collect()
        if not strict and run.status == "completed":
            continue
        if answer is not None:
            assert run.status == "awaiting_approval", run.status
            run = session.resume(thread, answer)
            run.collect()
        assert run.status == "completed", run.status


def test_head_reads_equal_the_stock_replay_after_every_kind_of_turn(tmp_path: Path) -> None:
    db = str(tmp_path / "gh.db")
    session = build(db, tmp_path)
    # Enough turns for the head to span several blocks of rows (32 messages each).
    drive(session, "t", [APPROVE, REJECT, RESPOND, None, None] + [APPROVE, REJECT, RESPOND] * 4)
    session.send("t", "one more").collect()  # paused: a finished free call beside the review
    shown = len(session.view("t").messages)
    session.close()
    assert same_everywhere(db, tmp_path, "t") > 80
    with sqlite3.connect(db) as conn:
        count = conn.execute("SELECT count FROM gatehouse_heads WHERE thread_id = 't'").fetchone()[
            0
        ]
        blocks = conn.execute(
            "SELECT count(*), sum(n) FROM gatehouse_head_blocks WHERE thread_id = 't'"
        ).fetchone()
    # The messages at the latest checkpoint: all but the free call's result, a pending
    # write of the paused step (get_state shows it; the checkpoint's value does not).
    assert count == blocks[1] == shown - 1 and count > 64 and blocks[0] == -(-count // 32)


def test_deleting_a_thread_deletes_its_head(tmp_path: Path) -> None:
    """The head rows go with the thread (graph/store/head.py DELETE_HEAD), and a thread
    started again under the same id shows only its own messages."""
    db = str(tmp_path / "gh.db")
    session = build(db, tmp_path, script=["a reply"])
    session.send("t", "hello").collect()
    session.send("u", "keep me").collect()
    session.submit(Delete("t"))
    with sqlite3.connect(db) as conn:
        left = [
            conn.execute(f"SELECT count(*) FROM {table} WHERE thread_id = ?", (thread,)).fetchone()[
                0
            ]
            for table in ("gatehouse_heads", "gatehouse_head_blocks")
            for thread in ("t", "u")
        ]
    assert left == [0, 1, 0, 1]
    session.send("t", "again").collect()
    session.close()
    assert [m.content for m in open_reader(db).transcript("t") or []] == [
        "again",
        "a reply",
    ]  # no "hello"


def test_head_follows_undo_fork_and_compaction(tmp_path: Path) -> None:
    db = str(tmp_path / "gh.db")
    summariser = ScriptedModel(script=["SUMMARY of the early turns"])
    session = build(
        db, tmp_path, hooks={"before_llm": [Compaction(summariser, max_tokens=10**9, keep_turns=1)]}
    )
    drive(session, "t", [APPROVE, REJECT, RESPOND, None])
    assert session.submit(Undo("t")).result().removed > 0
    same_everywhere(db, tmp_path, "t")
    assert (
        session.fork("t", 0, "a different first request").collect()[-1].status
        == "awaiting_approval"
    )
    same_everywhere(db, tmp_path, "t")
    session.resume("t", APPROVE).collect()
    drive(
        session,
        "t",
        [REJECT, APPROVE, APPROVE, RESPOND, APPROVE, REJECT, APPROVE, APPROVE] * 2,
        strict=False,
    )
    assert len(session.view("t").messages) > 40  # past a block of rows
    assert (
        session.submit(Compact("t")).result().compacted is not None
    )  # inserts the summary mid-history: the head rows are rewritten
    assert same_everywhere(db, tmp_path, "t") > 20
    fresh = build(db, tmp_path)
    assert fresh.view("t").messages[0].content == "a different first request"
    assert any("SUMMARY of the early turns" in m.content for m in fresh.view("t").messages)
    fresh.close()
    session.close()


def test_a_stale_or_damaged_head_is_only_a_shortcut(tmp_path: Path) -> None:
    db = str(tmp_path / "gh.db")
    session = build(db, tmp_path)
    drive(session, "t", [APPROVE, REJECT])
    session.close()
    # A stock saver goes on with the thread and never moves the head.
    stock = stock_graph(db, tmp_path)
    config = {"configurable": {"thread_id": "t"}}
    stock.invoke({"messages": [HumanMessage("from elsewhere")]}, config)
    assert stock.get_state(config).interrupts
    reader = open_reader(db)
    assert reader.transcript("t") is None  # the reader says it cannot tell alone
    pause = reader.pending("t")
    want = stock.get_state(config).interrupts[0]
    assert pause == pause_from("t", want.id, want.value)
    reader.close()
    same_everywhere(db, tmp_path, "t")  # a fresh Gatehouse saver walks from the stale head
    stock.invoke(Command(resume={want.id: APPROVE}), config)
    same_everywhere(db, tmp_path, "t", history=False)
    # Head rows that do not decode: the history is replayed instead.
    session = build(db, tmp_path)
    session.send("t", "and now").collect()
    session.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute(
            "UPDATE gatehouse_head_blocks SET data = x'c1c1c1' WHERE thread_id = 't' AND pos = 0"
        ).rowcount
    same_everywhere(db, tmp_path, "t", history=False)


def test_the_reader_answers_what_the_session_answers(tmp_path: Path) -> None:
    db = str(tmp_path / "gh.db")
    session = build(db, tmp_path)
    drive(session, "done", [APPROVE, RESPOND])
    session.send("paused", "first").collect()
    # An outcome-unknown pause: the journal says the approved call started, never ended.
    session.send("crashed", "first").collect()
    call = session.view("crashed").pending.actions[0]
    session.storage.journal.start(
        "crashed", {"id": call.tool_call_id, "name": call.name, "args": call.args}
    )
    assert session.resume("crashed", APPROVE).collect()[-1].status == "awaiting_approval"
    reader = open_reader(db)
    for thread in ("done", "paused", "crashed"):
        state = session.agent.get_state({"configurable": {"thread_id": thread}})
        pauses = [pause_from(thread, i.id, i.value) for i in state.interrupts]
        assert reader.pending(thread) == next(iter(pauses), None)
        assert reader.transcript(thread) == session.view(thread).transcript
        assert reader.usage(thread) == session.view(thread).usage and reader.usage(thread)
        assert reader.thread(thread) == session.view(thread).info
    assert reader.pending("crashed").kind == "outcome_unknown"
    assert [t.thread_id for t in reader.threads()] == [
        t.thread_id for t in session.thread_list().threads
    ]
    assert [t.thread_id for t in reader.awaiting()] == [
        t.thread_id for t in session.thread_list().awaiting_approval
    ]
    assert reader.exists("done") and not reader.exists("nope") and reader.pending("nope") is None
    reader.close()
    session.close()
    missing = open_reader(str(tmp_path / "never-created.db"))
    assert missing.threads() == [] and missing.pending("t") is None
    assert not (tmp_path / "never-created.db").exists()


def test_a_thread_no_session_ran_is_listed_with_its_pending_approval(tmp_path: Path) -> None:
    """What LangGraph Studio or the SDK do: talk to the compiled graph directly."""
    db = str(tmp_path / "gh.db")
    session = build(db, tmp_path)
    graph, config = session.agent, {"configurable": {"thread_id": "studio"}}
    graph.invoke({"messages": [HumanMessage("Email the team please")]}, config)
    reader = open_reader(db)
    info = reader.thread("studio")
    assert info is not None and info.title == "Email the team please"
    assert info.status == "awaiting_approval" and info.pending_since is not None
    assert [t.thread_id for t in reader.awaiting()] == ["studio"]
    interrupt = graph.get_state(config).interrupts[0]
    assert reader.pending("studio") == pause_from("studio", interrupt.id, interrupt.value)
    graph.invoke(Command(resume={interrupt.id: APPROVE}), config)
    info = reader.thread("studio")
    assert info is not None and info.status == "completed" and info.pending_since is None
    assert reader.awaiting() == [] and reader.pending("studio") is None
    reader.close()
    session.close()


def _damage_page(db: str, table: str) -> None:
    with sqlite3.connect(db) as conn:
        page = conn.execute(
            "SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,)
        ).fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    with open(db, "r+b") as f:
        f.seek((page - 1) * size)
        f.write(b"\xff" * size)


def test_a_large_file_opens_without_reading_every_page_and_damage_still_names_it(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "big.db")
    # Over the size past which the start-up check reads only the small tables: 40 turns
    # of 32 KB messages. (The person's messages are big, not the model's replies: a
    # scripted reply streams in 4-character chunks.)
    session = build(db, tmp_path, script=[f"answer {i}" for i in range(100)])
    for i in range(40):
        session.send("t", f"message {i} " + "y" * 32_000).collect()
    session.close()
    assert Path(db).stat().st_size > QUICK_CHECK_FULL_BYTES
    damaged_history = str(tmp_path / "history.db")
    Path(damaged_history).write_bytes(Path(db).read_bytes())
    _damage_page(damaged_history, "gatehouse_head_blocks")
    storage = open_storage(damaged_history)  # the big tables are not read at start
    storage.close()
    reader = open_reader(damaged_history)
    with pytest.raises(StorageError, match="history.db"):
        reader.transcript("t")
    reader.close()
    damaged_index = str(tmp_path / "index.db")
    Path(damaged_index).write_bytes(Path(db).read_bytes())
    _damage_page(damaged_index, "gatehouse_threads")
    with pytest.raises(StorageError, match="index.db"):
        open_storage(damaged_index)


@pytest.mark.slow
@pytest.mark.postgres
def test_postgres_head_reader_and_index(tmp_path: Path, postgres_url: str) -> None:
    session = build(postgres_url, tmp_path)
    drive(session, "t", [APPROVE, REJECT, RESPOND, None])
    session.send("t", "paused here").collect()
    assert session.submit(Undo("t")).result().removed > 0
    session.send("t", "after undo").collect()
    assert same_everywhere(postgres_url, tmp_path, "t", postgres=True) > 20
    reader = open_reader(postgres_url)
    assert reader.transcript("t") == session.view("t").transcript
    state = session.agent.get_state({"configurable": {"thread_id": "t"}})
    assert reader.pending("t") == next(
        (pause_from("t", i.id, i.value) for i in state.interrupts), None
    )
    assert reader.usage("t") == session.view("t").usage
    graph, config = session.agent, {"configurable": {"thread_id": "studio"}}
    graph.invoke({"messages": [HumanMessage("Email the team please")]}, config)
    info = reader.thread("studio")
    assert (
        info is not None
        and info.status == "awaiting_approval"
        and info.title == "Email the team please"
    )
    interrupt = graph.get_state(config).interrupts[0]
    assert reader.pending("studio") == pause_from("studio", interrupt.id, interrupt.value)
    reader.close()
    session.close()


def test_head_rows_hold_any_message_and_read_back_without_langgraph() -> None:
    """Plain messages restore into their class; any other is kept by LangGraph's
    serializer, as the checkpoints keep it; the reader's plain view reads both."""
    from langchain_core.messages import AIMessage, ToolMessage

    from gatehouse.graph.protocol.threads import view_of_fields
    from gatehouse.graph.store.head import decode, head_update
    from gatehouse.graph.store.plain import block_fields

    serde = compact_serde()
    odd = AIMessage("odd", id="o", additional_kwargs={"pair": (1, 2)})  # a tuple is not plain data
    messages = [ToolMessage(f"r{i}", tool_call_id=f"c{i}", id=f"t{i}") for i in range(40)] + [odd]
    _, blocks, _ = head_update(None, messages, None, serde)
    assert [n for _, n, _ in blocks] == [32, 9]
    back = decode([(n, data) for _, n, data in blocks], len(messages), serde)
    assert back[:40] == messages[:40] and back[40] == serde.loads_typed(serde.dumps_typed(odd))
    views = [view_of_fields(f) for _, n, data in blocks for f in block_fields(n, data)]
    assert [v.content for v in views] == [m.content for m in messages]
    assert views[40].role == "assistant" and views[0].tool_call_id == "c0"
    # Appending fills the last block, then opens new ones.
    extend, more, delete_from = head_update(
        messages, [*messages, *messages[:30]], len(messages), serde
    )
    assert (
        extend is not None
        and extend[:2] == (1, 23)
        and [b[:2] for b in more] == [(2, 7)]
        and delete_from == -1
    )


def test_head_rows_keep_which_fields_a_message_was_given() -> None:
    """`model_fields_set` survives the head (what `model_dump(exclude_unset=True)` and
    LangChain's merges read): stored as None when every field was given, as names when
    some were not, and rows written before the None form still read."""
    import ormsgpack
    from langchain_core.messages import AIMessage, HumanMessage

    from gatehouse.graph.store.head import decode, encode

    serde = compact_serde()
    given = HumanMessage("hi", id="h")
    every = HumanMessage.model_validate(given.model_dump())  # every field given
    assert given.model_fields_set != every.model_fields_set == set(every.__dict__)
    assert ormsgpack.unpackb(encode(every, serde))[3] is None
    assert ormsgpack.unpackb(encode(given, serde))[3] == sorted(given.model_fields_set)
    old_form = ormsgpack.packb(["ai", AIMessage("a", id="a").__dict__, {}, ["content", "id"]])
    rows = [(3, encode(every, serde) + encode(given, serde) + old_form)]
    back = decode(rows, 3, serde)
    assert [m.model_fields_set for m in back] == [
        every.model_fields_set,
        given.model_fields_set,
        {"content", "id"},
    ]
    assert back[:2] == [every, given] and back[2].content == "a"


def test_blobs_compress_with_a_window_their_size_and_read_back_either_way() -> None:
    """A blob is compressed with a window no larger than it needs (cheap to set up for
    the small blobs of a turn); it reads back through the codec and through plain
    `zlib.decompress` (an older Gatehouse), and a blob compressed the old way (zlib's
    default window) still reads."""
    import os
    import zlib

    from gatehouse.graph.store.saver import COMPRESS_MIN_BYTES, ZlibCodec, compress

    codec = ZlibCodec()
    for size in (0, 1, COMPRESS_MIN_BYTES - 1, COMPRESS_MIN_BYTES, 511, 512, 4096, 70_000):
        data = (os.urandom(size // 8).hex().encode() + b"turn " * size)[:size]
        name, stored = codec.encrypt(data)
        assert codec.decrypt(name, stored) == data, size
        if name == "zlib":
            assert zlib.decompress(stored) == data
            assert len(stored) <= len(zlib.compress(data, 1)) + 8, size  # no worse to speak of
        assert zlib.decompress(compress(data)) == data
        if size >= COMPRESS_MIN_BYTES:
            assert codec.decrypt("zlib", zlib.compress(data)) == data  # written before
    assert zlib.decompress(compress(b"x" * 1000))[:1] == b"x"
    # The window the header names: 2**(8 + CINFO) bytes, at least 512 and at most 32 KB.
    assert compress(b"x" * 300)[0] >> 4 == 9 - 8
    assert compress(b"x" * 100_000)[0] >> 4 == 15 - 8


def test_the_reader_and_the_session_say_alike_whether_a_run_still_holds_its_thread(
    tmp_path: Path,
) -> None:
    """One lease rule (graph/store/leases.py `Leases._free`) for the Session and the reader
    without LangGraph (`gatehouse threads`): a thread marked running shows as running
    only while a live holder's lease stands."""
    import os
    import socket
    import subprocess
    import sys
    import time

    db = str(tmp_path / "g.db")
    session = build(db, tmp_path, ["hi"])
    session.send("t1", "hello").collect()
    session.storage.index.touch("t1", status="running")
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    here, later = socket.gethostname(), time.time() + 60
    holders = {
        "no lease": (None, "interrupted"),
        "this process": (f"{here}|{os.getpid()}|x", "running"),
        "a dead process here": (f"{here}|{dead.stdout.strip()}|x", "interrupted"),
        "a process elsewhere": ("elsewhere|1|x", "running"),
        "released": ("", "interrupted"),
    }
    reader = open_reader(db)
    try:
        for what, (owner, shown) in holders.items():
            with sqlite3.connect(db) as conn:
                conn.execute("DELETE FROM gatehouse_leases")
                if owner is not None:
                    conn.execute("INSERT INTO gatehouse_leases VALUES ('t1', ?, ?)", (owner, later))
            seen = (session.view("t1").info.status, reader.thread("t1").status)
            assert seen == (shown, shown), what
    finally:
        reader.close()
        session.close()

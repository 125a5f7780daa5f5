"""Compaction's count of the model view, kept with the thread (issue 36): a process
that has never seen a thread counts only what was added since the last model call,
and the number is always LangChain's count of the whole view, whatever happened to
the history in between (graph/agent/builtin_hooks/token_prefix.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import RunnableConfig

from gatehouse.graph import ScriptedModel, Session, ai, build_graph, tool_call
from gatehouse.graph.agent.builtin_hooks import Compaction, token_memo
from gatehouse.graph.agent.builtin_hooks import compaction as compaction_module
from gatehouse.graph.agent.history import is_summary, model_view
from gatehouse.graph.store import open_storage
from tests.test_builtin_hooks import POLICY, TOOLS

THREAD = "t"
CONFIG: RunnableConfig = {"configurable": {"thread_id": THREAD}}


@dataclass
class Calls:
    """Each model call's view as Compaction counted it: how many messages LangChain's
    estimate was given, and the count the hook decided on."""

    counted: list[int] = field(default_factory=list)
    before: list[int] = field(default_factory=list)
    views: list[list[BaseMessage]] = field(default_factory=list)

    def reset(self) -> None:
        self.counted.clear()
        self.before.clear()
        self.views.clear()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Calls]:
    seen = Calls()
    real_count_view = compaction_module.count_view

    def count_view(view: Sequence[Any], record: Any, count: Any) -> Any:
        def counting(messages: Sequence[Any]) -> int:
            seen.counted[-1] += len(messages)
            return count(messages)

        seen.counted.append(0)
        seen.views.append(list(view))
        tokens, kept = real_count_view(view, record, counting)
        seen.before.append(tokens)
        return tokens, kept

    monkeypatch.setattr(compaction_module, "count_view", count_view)
    yield seen


def new_process() -> None:
    """What a new process starts with: nothing counted in memory."""
    token_memo._counts.clear()


def session_on(db: Path, script: list[Any], compaction: Compaction) -> Session:
    """A Session opened afresh on `db` (its own storage, graph and message objects)."""
    storage = open_storage(str(db))
    graph = build_graph(
        model=ScriptedModel(script=script, fallback="done"),
        tools=TOOLS,
        checkpointer=storage.checkpointer,
        policy=POLICY,
        hooks={"before_llm": [compaction]},
    )
    return Session(graph, storage, TOOLS)


def ask(session: Session, text: str) -> str:
    """Send `text`, run to the end; how the run ended."""
    run = session.send(THREAD, text)
    run.collect()
    return str(run.status)


def turn(i: int) -> list[Any]:
    """A turn's replies: a search (a free tool), then an answer."""
    return [ai("", tool_call("search", {"query": f"query {i} " * 5}, f"s{i}")), f"answer {i}"]


def exact(calls: Calls) -> None:
    """Every count the hook decided on is LangChain's count of the whole view."""
    assert calls.before and calls.before == [count_tokens_approximately(v) for v in calls.views]


def test_a_cold_resume_counts_only_the_new_messages(tmp_path: Path, calls: Calls) -> None:
    db = tmp_path / "db"
    script = [m for i in range(6) for m in turn(i)]
    first = session_on(db, script, Compaction(ScriptedModel(fallback="s"), max_tokens=10**9))
    for i in range(5):
        assert ask(first, f"question {i} " * 20) == "completed"
    history = len(first.view(THREAD).messages)
    assert history == 20
    first.close()
    # Each model call counted what came after the previous one: the first call its
    # question, the next the AI call and its result, the next turn's first call the
    # previous answer and its question.
    assert calls.counted[:3] == [1, 2, 2]

    new_process()
    calls.reset()
    # The script continues where the thread is (turn k answers the k-th AI message).
    cold = session_on(db, script, Compaction(ScriptedModel(fallback="s"), max_tokens=10**9))
    assert ask(cold, "question 5") == "completed"
    # Two model calls: the last answer and the new question, then the call and its
    # result: 2 messages each, not the 20 of the thread.
    assert calls.counted == [2, 2]
    assert [len(v) for v in calls.views] == [history + 1, history + 3]
    exact(calls)
    cold.close()


def test_an_edit_of_an_earlier_message_is_counted_again(tmp_path: Path, calls: Calls) -> None:
    db = tmp_path / "db"
    script = [m for i in range(5) for m in turn(i)]
    session = session_on(db, script, Compaction(ScriptedModel(fallback="s"), max_tokens=10**9))
    for i in range(3):
        session.send(THREAD, f"question {i}").collect()
    messages = session.view(THREAD).messages
    graph = session.agent

    # A raw update_state replaces the first question by id with a longer one.
    graph.update_state(
        CONFIG,
        {"messages": [HumanMessage("a much longer question " * 30, id=messages[0].id)]},
        as_node="finish",
    )
    new_process()
    calls.reset()
    session.send(THREAD, "question 3").collect()
    assert calls.counted[0] == len(calls.views[0]) == len(messages) + 1  # all counted again
    assert calls.counted[1] == 2  # then only what came after
    exact(calls)

    # The hardest edit for a cheap check: an AI message keeps its id, its (empty) text
    # and its number of calls, only a call's arguments grow.
    messages = session.view(THREAD).messages
    call = next(m for m in messages if isinstance(m, AIMessage) and m.tool_calls)
    changed = call.model_copy(
        update={"tool_calls": [{**call.tool_calls[0], "args": {"query": "x" * 400}}]}
    )
    graph.update_state(CONFIG, {"messages": [changed]}, as_node="finish")
    new_process()
    calls.reset()
    session.send(THREAD, "question 4").collect()
    assert calls.counted[0] == len(calls.views[0])  # all counted again
    exact(calls)
    assert calls.before[0] > count_tokens_approximately([*messages, HumanMessage("question 4")])
    session.close()


def test_after_a_compaction_the_kept_count_is_the_new_views(tmp_path: Path, calls: Calls) -> None:
    db = tmp_path / "db"
    summariser = ScriptedModel(script=["SUMMARY of the early turns"])
    script = [m for i in range(6) for m in turn(i)]
    compaction = Compaction(summariser, max_tokens=10**9, keep_turns=1)
    session = session_on(db, script, compaction)
    for i in range(3):
        session.send(THREAD, f"question {i} " * 20).collect()
    compaction.max_tokens = 50  # the next model call compacts
    events = session.send(THREAD, "question 3").collect()
    assert [e.type for e in events].count("compacted") == 1
    compaction.max_tokens = 10**9
    state = session.agent.get_state(CONFIG).values
    view = list(model_view(state["messages"]))
    assert is_summary(view[0])
    kept = state["hook_thread"]["compaction"]["counted"]
    # What the model was sent after the summary (its reply came after the count).
    assert kept[0] == len(view) - 1 and kept[2] == count_tokens_approximately(view[:-1])
    assert state["hook_thread"]["compaction"]["compactions"] == 1

    new_process()
    calls.reset()
    session.send(THREAD, "question 4").collect()
    # The reply after the summary and the new question: the rest was kept.
    assert calls.counted[0] == 2 and is_summary(calls.views[0][0])
    exact(calls)
    session.close()


def test_the_raw_compiled_graph_carries_the_count_too(tmp_path: Path, calls: Calls) -> None:
    db = tmp_path / "db"
    script = [m for i in range(4) for m in turn(i)]

    def graph_on_db() -> Any:
        storage = open_storage(str(db))
        compaction = Compaction(ScriptedModel(fallback="s"), max_tokens=10**9)
        graph = build_graph(
            model=ScriptedModel(script=script, fallback="done"),
            tools=TOOLS,
            checkpointer=storage.checkpointer,
            policy=POLICY,
            hooks={"before_llm": [compaction]},
        )
        return storage, graph

    storage, graph = graph_on_db()
    for i in range(3):
        graph.invoke({"messages": [HumanMessage(f"question {i}")]}, CONFIG)
    length = len(graph.get_state(CONFIG).values["messages"])
    storage.close()

    new_process()
    calls.reset()
    storage, graph = graph_on_db()
    graph.invoke({"messages": [HumanMessage("question 3")]}, CONFIG)
    assert calls.counted == [2, 2] and len(calls.views[0]) == length + 1
    exact(calls)
    # A time-travel resume from an older checkpoint: its own kept count, or a recount.
    history = list(graph.get_state_history(CONFIG))
    older = next(s for s in history if s.next and 4 <= len(s.values["messages"]) < length)
    new_process()
    calls.reset()
    graph.invoke(None, older.config)
    exact(calls)
    storage.close()


def test_a_custom_counter_gets_the_whole_view_and_nothing_is_kept(tmp_path: Path) -> None:
    given: list[int] = []

    def mine(messages: Sequence[BaseMessage]) -> int:
        given.append(len(messages))
        return 1

    session = session_on(
        tmp_path / "db", [m for i in range(3) for m in turn(i)], Compaction(count_tokens=mine)
    )
    for i in range(2):
        session.send(THREAD, f"question {i}").collect()
    assert given == [1, 3, 5, 7]  # not additive, perhaps: always the whole view
    hook_thread = session.agent.get_state(CONFIG).values.get("hook_thread") or {}
    assert "counted" not in (hook_thread.get("compaction") or {})
    session.close()


def test_keep_count_off_stores_nothing_and_counts_the_whole_view(tmp_path: Path) -> None:
    compaction = Compaction(ScriptedModel(fallback="s"), max_tokens=10**9, keep_count=False)
    session = session_on(tmp_path / "db", [m for i in range(3) for m in turn(i)], compaction)
    for i in range(2):
        assert ask(session, f"question {i}") == "completed"
    hook_thread = session.agent.get_state(CONFIG).values.get("hook_thread") or {}
    assert "counted" not in (hook_thread.get("compaction") or {})
    session.close()


def test_a_kept_count_that_does_not_match_is_ignored(tmp_path: Path) -> None:
    from gatehouse.graph.agent.builtin_hooks.token_prefix import count_view, record_of

    view = [
        HumanMessage("hi", id="1"),
        AIMessage("", id="2", tool_calls=[{"name": "search", "args": {"q": "aaaa"}, "id": "c"}]),
    ]
    given: list[int] = []

    def count(messages: Sequence[Any]) -> int:
        given.append(len(messages))
        return count_tokens_approximately(messages)

    full = count_tokens_approximately(view)
    record = record_of(view, full)
    assert record is not None and count_view(view, record, count) == (full, record)
    assert given == []  # nothing new: nothing counted
    quoted = view[1].model_copy(
        update={"tool_calls": [{"name": "search", "args": {"q": "\n\n\n\n"}, "id": "c"}]}
    )  # an argument of the same length, but repr() escapes it: a longer estimate
    for wrong in (
        [*record[:3], record[3] ^ 1],  # another signature
        [record[0], record[1] - 1, *record[2:]],  # another length
        [*record[:2], record[2] + 1, record[3], 0],  # malformed
        {"upto": 2},
        None,
    ):
        assert count_view(view, wrong, count)[0] == full and given[-1] == 2
    changed = [view[0], quoted]
    assert count_tokens_approximately(changed) != full
    assert count_view(changed, record, count)[0] == count_tokens_approximately(changed)
    assert given[-1] == 2

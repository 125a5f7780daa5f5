"""The built-in hooks (issue 4): budget, compaction, system context, require tool, judge."""

from __future__ import annotations

import runpy
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from gatehouse.graph import DecisionError, ScriptedModel, Session, ai, build_graph, tool_call
from gatehouse.graph.agent.builtin_hooks import (
    AnswerJudge,
    Budget,
    Compaction,
    RequireTool,
    SystemContext,
    parse_grade,
)
from gatehouse.graph.agent.builtin_hooks.compaction import is_summary
from gatehouse.graph.protocol.operations import Compact
from gatehouse.graph.store import open_storage

ROOT = Path(__file__).resolve().parents[1]


@tool
def search(query: str) -> str:
    """Search the notes."""
    return f"found {query}"


@tool
def run_tests() -> str:
    """Run the test suite."""
    return "12 passed"


@tool
def deploy(service: str) -> str:
    """Deploy (asks a person)."""
    return f"deployed {service}"


TOOLS = [search, run_tests, deploy]
POLICY = {"search": False, "run_tests": False, "deploy": True}


def make(tmp_path: Path, model: Any, hooks: dict[str, list[Any]]) -> Session:
    storage = open_storage(str(tmp_path / "db"))
    graph = build_graph(
        model=model, tools=TOOLS, checkpointer=storage.checkpointer, policy=POLICY, hooks=hooks
    )
    return Session(graph, storage, TOOLS)


def searches(n: int) -> list[AIMessage]:
    return [ai("", tool_call("search", {"query": f"q{i}"}, f"s{i}")) for i in range(n)]


def pairs_intact(messages: list[Any]) -> bool:
    calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    answers = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return calls == answers


# -- budget ------------------------------------------------------------------------


def test_budget_stops_a_run_at_its_model_call_limit_and_the_next_run_starts_fresh(
    tmp_path: Path,
) -> None:
    budget = Budget(max_model_calls=2)
    session = make(tmp_path, ScriptedModel(script=searches(10)), {"before_llm": [budget]})
    events = session.send("t", "research").collect()
    assert events[-1].status == "stopped"
    assert events[-1].reason.startswith(
        "Budget reached: this run used 2 model calls (limit 2 model calls)"
    )
    assert sum(1 for e in events if e.type == "usage" and e.total_tokens) == 2
    assert pairs_intact(session.view("t").messages)
    # A new message is a new run: two more calls.
    events = session.send("t", "go on").collect()
    assert events[-1].status == "stopped"
    assert sum(1 for e in events if e.type == "usage" and e.total_tokens) == 2


def test_budget_token_limit_per_run(tmp_path: Path) -> None:
    session = make(
        tmp_path, ScriptedModel(script=searches(10)), {"before_llm": [Budget(max_tokens=60)]}
    )
    events = session.send("t", "research " * 40).collect()  # ~100 tokens in the first call
    assert events[-1].status == "stopped" and "tokens (limit 60 tokens)" in events[-1].reason
    assert sum(1 for e in events if e.type == "usage" and e.total_tokens) == 1


def test_budget_prices_tokens_from_the_table_and_stops_on_cost(tmp_path: Path) -> None:
    prices = {"acme-large": (1_000_000.0, 2_000_000.0)}  # $1 per input token, $2 per output token
    budget = Budget(max_cost=150.0, prices=prices, model="acme-large")
    session = make(
        tmp_path, ScriptedModel(script=searches(10)), {"before_llm": [budget], "on_exit": [budget]}
    )
    events = session.send("t", "hello").collect()
    usage = session.view("t").usage
    expected = usage["input_tokens"] * 1.0 + usage["output_tokens"] * 2.0
    assert usage["cost"] == pytest.approx(expected)
    costs = [e.cost for e in events if e.type == "usage" and e.cost]
    assert sum(costs) == pytest.approx(expected)  # usage events add up to the total
    assert (
        events[-1].status == "stopped"
        and "$" in events[-1].reason
        and "limit $150.0000" in events[-1].reason
    )


def test_budget_on_exit_prices_the_last_call_without_stopping(tmp_path: Path) -> None:
    budget = Budget(max_cost=0.0001, prices={"m": (1.0, 1.0)}, model="m")
    session = make(
        tmp_path,
        ScriptedModel(script=["short answer"]),
        {"before_llm": [budget], "on_exit": [budget]},
    )
    events = session.send("t", "hi").collect()
    assert events[-1].status == "completed"  # on_exit never stops a finished answer
    assert session.view("t").usage["cost"] > 0


def test_budget_thread_limits_span_runs(tmp_path: Path) -> None:
    budget = Budget(thread_max_model_calls=3)
    session = make(tmp_path, ScriptedModel(fallback="ok"), {"before_llm": [budget]})
    for _ in range(3):
        assert session.send("t", "again").collect()[-1].status == "completed"
    events = session.send("t", "once more").collect()
    assert events[-1].status == "stopped" and "this thread used 3 model calls" in events[-1].reason
    assert "new thread" in events[-1].reason
    # Another thread has its own budget.
    assert session.send("u", "hello").collect()[-1].status == "completed"


def test_budget_price_lookup() -> None:
    budget = Budget()
    assert budget.price_of("gpt-4o-mini-2024-07-18") == budget.prices["gpt-4o-mini"]
    assert budget.price_of("gpt-4o-2024-08-06") == budget.prices["gpt-4o"]
    assert budget.price_of("unknown-model") is None
    with pytest.raises(ValueError, match="no price"):
        Budget(max_cost=1.0, model="unknown-model")


# -- compaction ---------------------------------------------------------------------


def test_compaction_summarises_old_turns_keeps_recent_ones_and_reports_tokens(
    tmp_path: Path,
) -> None:
    summariser = ScriptedModel(script=["SUMMARY: searched q0 and q1, answered twice."])
    compaction = Compaction(summariser, max_tokens=10**9, keep_turns=2)
    second_turn = ai("", tool_call("search", {"query": "q1"}, "s1"))
    # Turn k answers the k-th AI message; after compaction there are fewer of them.
    script = [
        *searches(1),
        "answer one",
        lambda m: "answer three" if is_summary(m[1]) else second_turn,
        "answer two",
    ]
    model = ScriptedModel(script=script)
    session = make(tmp_path, model, {"before_llm": [compaction]})
    session.send("t", "first " * 50).collect()
    session.send("t", "second " * 50).collect()
    before = session.view("t").messages
    assert len(before) == 8

    compaction.max_tokens = 100  # the next model call is past the threshold
    events = session.send("t", "third").collect()
    compacted = [e for e in events if e.type == "compacted"]
    assert len(compacted) == 1
    assert (
        compacted[0].tokens_before > 100
        and compacted[0].tokens_after < compacted[0].tokens_before - 50
    )
    assert compacted[0].messages_removed == 4  # the first turn: human, ai+call, tool, ai

    after = session.view("t").messages
    # The person's history stays whole: the first turn, then the summary where the
    # model's view starts, then the last two turns verbatim (same ids), then the answer.
    assert [m.id for m in after[:4]] == [m.id for m in before[:4]]
    assert is_summary(after[4]) and "SUMMARY: searched q0" in after[4].content
    assert [m.id for m in after[5:9]] == [m.id for m in before[4:]]
    assert after[-2].content == "third" and after[-1].content == "answer three"
    assert pairs_intact(after)
    # The model's request starts at the summary: the first turn is not sent.
    assert not any("first first" in str(m.content) for m in model.inputs[-1])
    # The model saw the summary instead of the old turn; the summariser saw the old turn.
    assert "SUMMARY" in model.inputs[-1][1].content
    assert "q0" in summariser.inputs[0][-1].content


def test_compaction_never_splits_a_tool_call_from_its_result() -> None:
    compaction = Compaction(ScriptedModel(script=["s"]), max_tokens=0, keep_turns=1)
    history: list[Any] = [
        HumanMessage("a", id="h1"),
        AIMessage("", id="a1", tool_calls=[tool_call("search", {"query": "x"}, "c1")]),
    ]
    # A person's message slipped in before the tool result (a steer): the cut cannot
    # fall between the call and its result, so it moves before the call.
    history += [
        HumanMessage("steer", id="h2"),
        ToolMessage("r", tool_call_id="c1", id="t1"),
        AIMessage("done", id="a2"),
    ]
    assert compaction.cut_index(history) == 1
    for keep in (1, 2, 3):
        compaction.keep_turns = keep
        cut = compaction.cut_index(history)
        assert pairs_intact(history[cut:]) and pairs_intact(history[:cut])


def test_compaction_is_a_no_op_below_the_threshold_or_with_nothing_old(tmp_path: Path) -> None:
    compaction = Compaction(ScriptedModel(script=["s"]), max_tokens=10**9, keep_turns=2)
    state = {"messages": [HumanMessage("hi", id="1"), AIMessage("hello", id="2")]}
    update = compaction.run(state)
    # The history is left alone; the hook only keeps what it counted (token_prefix.py).
    assert update is not None and set(update) == {"hook_thread"}
    assert compaction.run({**state, **update}) is None  # counted already: nothing new to keep
    assert compaction.compact(state, force=True) is None  # only one turn: nothing to summarise


def test_compact_now_in_the_session_api(tmp_path: Path) -> None:
    compaction = Compaction(ScriptedModel(script=["SUMMARY"]), max_tokens=10**9, keep_turns=1)
    session = make(tmp_path, ScriptedModel(fallback="ok"), {"before_llm": [compaction]})
    for text in ("one", "two", "three"):
        session.send("t", text).collect()
    event = session.submit(Compact("t")).result().compacted
    assert event is not None and event.type == "compacted" and event.messages_removed == 4
    messages = session.view("t").messages
    assert [m.content for m in messages if not is_summary(m)] == [
        "one",
        "ok",
        "two",
        "ok",
        "three",
        "ok",
    ]
    assert is_summary(messages[4]) and [m.content for m in messages[5:]] == ["three", "ok"]
    # The thread goes on normally afterwards.
    assert session.send("t", "four").collect()[-1].status == "completed"
    assert (
        session.submit(Compact("t")).result().compacted.messages_removed == 3
    )  # old summary + turn "three"


def test_compact_now_refuses_while_an_approval_is_pending(tmp_path: Path) -> None:
    compaction = Compaction(ScriptedModel(script=["SUMMARY"]), max_tokens=10**9, keep_turns=1)
    model = ScriptedModel(script=["ok", ai("", tool_call("deploy", {"service": "web"}, "d1"))])
    session = make(tmp_path, model, {"before_llm": [compaction]})
    session.send("t", "hello").collect()
    assert session.send("t", "deploy").collect()[-1].status == "awaiting_approval"
    with pytest.raises(DecisionError):
        session.submit(Compact("t"))
    plain = make(tmp_path / "other", ScriptedModel(fallback="ok"), {})
    with pytest.raises(ValueError, match="no Compaction hook"):
        plain.submit(Compact("t"))


# -- system context ---------------------------------------------------------------------


def test_system_context_gives_date_and_workspace_without_piling_into_history(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "readme.md").write_text("hi")
    (workspace / "src").mkdir()
    (workspace / ".hidden").write_text("x")
    times = iter([datetime(2030, 1, 2, 9, 30, tzinfo=UTC), datetime(2030, 1, 2, 9, 31, tzinfo=UTC)])
    context = SystemContext(workspace, clock=lambda: next(times))
    model = ScriptedModel(script=searches(1), fallback="done")
    session = make(tmp_path, model, {"before_llm": [context]})
    session.send("t", "what is here?").collect()

    systems = [call[0].content for call in model.inputs]
    assert len(systems) == 2
    assert "2030-01-02 09:30" in systems[0] and "2030-01-02 09:31" in systems[1]
    assert all(s.count("Current date and time") == 1 for s in systems)
    assert "src/, readme.md" in systems[0] and ".hidden" not in systems[0]
    assert "1 files, 1 folders" in systems[0]
    stored = session.view("t").messages
    assert not any(isinstance(m, SystemMessage) or "Current date" in str(m.content) for m in stored)


def test_system_context_summary_is_short(tmp_path: Path) -> None:
    for i in range(30):
        (tmp_path / f"f{i:02}.txt").write_text("")
    text = SystemContext(
        tmp_path, max_entries=5, clock=lambda: datetime.now(timezone(timedelta(hours=2)))
    ).text()
    assert "f00.txt, f01.txt, f02.txt, f03.txt, f04.txt, … and 25 more" in text
    assert "does not exist yet" in SystemContext(tmp_path / "missing").text()


# -- require tool -----------------------------------------------------------------------


def test_require_tool_keeps_the_run_going_until_the_tool_ran(tmp_path: Path) -> None:
    model = ScriptedModel(
        script=["Fixed it.", ai("", tool_call("run_tests", {}, "r1")), "Fixed; tests pass."]
    )
    session = make(tmp_path, model, {"on_exit": [RequireTool("run_tests", max_reminders=2)]})
    events = session.send("t", "fix the bug").collect()
    assert events[-1].status == "completed"
    assert [e.source for e in events if e.type == "notice"] == ["require_tool:run_tests"]
    contents = [m.content for m in session.view("t").messages]
    assert "call the `run_tests` tool" in contents[2]
    assert contents[-1] == "Fixed; tests pass."


def test_require_tool_stops_after_k_reminders_and_resets_per_run(tmp_path: Path) -> None:
    model = ScriptedModel(fallback="I am done.")
    session = make(tmp_path, model, {"on_exit": [RequireTool("run_tests", max_reminders=2)]})
    events = session.send("t", "fix it").collect()
    assert events[-1].status == "stopped"
    assert "without calling run_tests (2 reminders given)" in events[-1].reason
    reminders = [m for m in session.view("t").messages if m.additional_kwargs.get("gatehouse_hook")]
    assert len(reminders) == 2
    assert len(model.inputs) == 3
    # A new message starts a new run with a fresh count.
    session.send("t", "try again").collect()
    assert len(model.inputs) == 6


def test_require_tool_does_not_count_a_failed_or_earlier_call(tmp_path: Path) -> None:
    hook = RequireTool("run_tests")
    failed = [
        HumanMessage("go"),
        AIMessage("", tool_calls=[tool_call("run_tests", {}, "r")]),
        ToolMessage("boom", tool_call_id="r", name="run_tests", status="error"),
    ]
    assert not hook.called(failed)
    ok = [*failed[:2], ToolMessage("12 passed", tool_call_id="r", name="run_tests")]
    assert hook.called(ok)
    assert not hook.called([*ok, AIMessage("done"), HumanMessage("new request")])


# -- answer judge -------------------------------------------------------------------------


def grading(*replies: str) -> ScriptedModel:
    queue = iter(replies)
    return ScriptedModel(script=[lambda messages: next(queue)])


def test_judge_continues_with_the_critique_until_the_grade_passes(tmp_path: Path) -> None:
    judge_model = grading("GRADE: 3/10\nCRITIQUE: Missing the year.", "GRADE: 8\nCRITIQUE: fine")
    model = ScriptedModel(script=["Paris.", "Paris, in 2024."])
    session = make(
        tmp_path, model, {"on_exit": [AnswerJudge(judge_model, threshold=7, max_rounds=3)]}
    )
    events = session.send("t", "Where and when?").collect()
    assert events[-1].status == "completed"
    notices = [e.text for e in events if e.type == "notice"]
    assert notices == ["Answer judge: 3/10 (needs 7)", "Answer judge: 8/10 (needs 7)"]
    messages = session.view("t").messages
    assert "Missing the year." in messages[2].content and messages[-1].content == "Paris, in 2024."
    # The judge saw the request and the answer.
    assert (
        "Where and when?" in judge_model.inputs[0][-1].content
        and "Paris." in judge_model.inputs[0][-1].content
    )


def test_judge_gives_up_after_k_rounds_and_keeps_the_answer(tmp_path: Path) -> None:
    judge_model = ScriptedModel(script=["GRADE: 2/10\nCRITIQUE: wrong"])
    model = ScriptedModel(fallback="meh")
    session = make(
        tmp_path, model, {"on_exit": [AnswerJudge(judge_model, threshold=7, max_rounds=2)]}
    )
    events = session.send("t", "q").collect()
    assert events[-1].status == "completed"
    assert len(model.inputs) == 3 and len(judge_model.inputs) == 3
    assert "keeping it after 2 revision(s)" in [e.text for e in events if e.type == "notice"][-1]


def test_judge_without_a_readable_grade_keeps_the_answer(tmp_path: Path) -> None:
    session = make(
        tmp_path,
        ScriptedModel(fallback="answer"),
        {"on_exit": [AnswerJudge(grading("looks fine to me"))]},
    )
    events = session.send("t", "q").collect()
    notices = [e for e in events if e.type == "notice"]
    assert events[-1].status == "completed" and "no readable grade" in notices[-1].text


@pytest.mark.parametrize(
    "text, grade",
    [
        ("GRADE: 7/10", 7.0),
        ("grade=3.5", 3.5),
        ("Score 8 / 20, decent", 4.0),
        ("GRADE: 14", 10.0),
        ("no", None),
    ],
)
def test_parse_grade(text: str, grade: float | None) -> None:
    assert parse_grade(text)[0] == grade


# -- the documented examples run ------------------------------------------------------------


@pytest.mark.parametrize(
    "example, expected",
    [
        ("hooks_budget.py", "stopped: Budget reached"),
        ("hooks_compaction.py", "compacted:"),
        ("hooks_system_context.py", "Current date and time"),
        ("hooks_require_tool.py", "completed - Fixed; 12 tests pass."),
        ("hooks_judge.py", "completed - Paris hosted the Summer Olympics in 2024."),
        ("hooks_after_llm.py", "reply_rejected: the reply was not a JSON object"),
        ("hooks_after_llm.py", 'completed - {"answer": "Paris"}'),
    ],
)
def test_examples_run(example: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    # Executed as scripts (`__main__`), in this process to keep the suite fast.
    runpy.run_path(str(ROOT / "examples" / example), run_name="__main__")
    assert expected in capsys.readouterr().out


def test_exit_hooks_defer_to_an_earlier_decision(tmp_path: Path) -> None:
    judge_model = grading("GRADE: 9/10\nCRITIQUE: ok")
    model = ScriptedModel(
        script=["done", ai("", tool_call("run_tests", {}, "r1")), "tested and done"]
    )
    hooks = {"on_exit": [RequireTool("run_tests"), AnswerJudge(judge_model)]}
    events = make(tmp_path, model, hooks).send("t", "fix").collect()
    assert events[-1].status == "completed"
    assert len(judge_model.inputs) == 1  # only the final answer was graded, not the one sent back

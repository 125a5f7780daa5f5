"""Issue 35 items 3, 4, 5 and 7: whole-message events (`assistant_message`,
`turn_complete`, `part_started`), `message_replaced` after an editing `after_llm`
hook (event stream, terminal, web), `reject_missing` on every client path, and
`messages()` read mid-run agreeing with the events already handed out."""

from __future__ import annotations

import asyncio
import io
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.types import Command
from rich.console import Console
from streamlit.testing.v1 import AppTest

from gatehouse.graph import (
    AsyncSession,
    DecisionError,
    ScriptedModel,
    Session,
    ai,
    build_graph,
    hook,
    tool_call,
)
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.store import open_storage
from gatehouse.tools.files import make_file_tools
from gatehouse.tools.workspace import Workspace
from tests.support.core_fixtures import Ledger, make_tools


def session_with(
    tmp_path: Path,
    script: list[Any],
    hooks: dict[str, Any] | None = None,
    tools: list[Any] | None = None,
) -> tuple[Session, ScriptedModel]:
    (tmp_path / "ws").mkdir(parents=True, exist_ok=True)
    model = ScriptedModel(script=script)
    storage = open_storage(str(tmp_path / "gatehouse.db"))
    tools = tools if tools is not None else make_file_tools(Workspace(tmp_path / "ws"))
    graph = build_graph(
        model=model,
        tools=tools,
        checkpointer=storage.checkpointer,
        hooks=hooks,
        journal=storage.journal,
        decisions=storage.decisions,
        outputs=storage.outputs,
    )
    return Session(graph, storage, tools), model


def of(events: list[ev.Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


# -- item 5: assistant_message, turn_complete, part_started -----------------------------------


def test_every_reply_has_its_whole_message_and_the_turn_its_size(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("alpha\n")
    script = [
        ai(
            "<think>read it first</think>Reading a.txt.",
            tool_call("read_file", {"path": "a.txt"}, "r1"),
            tool_call("list_files", {}, "l1"),
        ),
        "It says alpha.",
    ]
    session, _ = session_with(tmp_path, script)
    events = session.send("t", "what is in a.txt?").collect()
    replies = of(events, ev.AssistantMessage)
    assert [r.text for r in replies] == ["Reading a.txt.", "It says alpha."]
    assert replies[0].tool_calls == ["read_file", "list_files"] and replies[1].tool_calls == []
    stored = [m for m in session.view("t").messages if isinstance(m, AIMessage)]
    assert [r.message_id for r in replies] == [m.id for m in stored]
    # The deltas of each reply carry its id.
    for reply in replies:
        text = "".join(d.text for d in of(events, ev.TextDelta) if d.message_id == reply.message_id)
        assert text == reply.text
    [done] = of(events, ev.TurnComplete)
    assert done.status == "completed" and done.history_size == len(session.view("t").messages) == 5
    assert events.index(done) < events.index(of(events, ev.RunFinished)[0])

    # Parts of the first reply, indexed in the order they start: reasoning, text, two calls.
    first = [p for p in of(events, ev.PartStarted) if p.message_id == replies[0].message_id]
    assert [(p.index, p.part_kind, p.tool_name, p.call_id) for p in first] == [
        (0, "reasoning", None, None),
        (1, "text", None, None),
        (2, "tool_call", "read_file", "r1"),
        (3, "tool_call", "list_files", "l1"),
    ]
    # Each part's deltas come after its part_started and before the next one's.
    kinds = [
        e.type
        for e in events
        if e.type in ("part_started", "reasoning_delta", "text_delta")
        and getattr(e, "message_id", None) == replies[0].message_id
    ]
    assert kinds[0] == "part_started" and kinds.index("text_delta") > kinds.index("part_started", 1)


def test_no_turn_complete_while_paused_and_one_when_stopped(tmp_path: Path) -> None:
    script = [ai("", tool_call("write_file", {"path": "x.md", "content": "x"}, "w1")), "never"]
    session, _ = session_with(tmp_path, script)
    paused = session.send("t", "write x").collect()
    assert paused[-1].status == "awaiting_approval" and not of(paused, ev.TurnComplete)
    rejected = session.resume("t", {"decisions": [{"type": "reject", "message": "no"}]}).collect()
    [done] = of(rejected, ev.TurnComplete)
    assert done.history_size == len(session.view("t").messages)

    @hook
    def stop_now(state):
        return {"stop_reason": "Budget reached."}

    stopped_session, _ = session_with(tmp_path / "s", ["x"], {"before_llm": [stop_now]})
    events = stopped_session.send("t", "hi").collect()
    [done] = of(events, ev.TurnComplete)
    assert (
        done.status == "stopped"
        and done.history_size == len(stopped_session.view("t").messages) == 2
    )


# -- item 3: an after_llm hook that redacts the reply -----------------------------------------

SECRET = re.compile(r"sk-[A-Za-z0-9]{8,}")


@hook
def redact(state):
    reply = state["messages"][-1]
    if isinstance(reply.content, str) and SECRET.search(reply.content):
        reply.content = SECRET.sub("[redacted]", reply.content)  # in place, the Haystack way


def test_a_redacting_after_llm_hook_replaces_the_streamed_message(tmp_path: Path) -> None:
    session, _ = session_with(
        tmp_path, ["The key is sk-abcdefgh12345678, keep it safe."], {"after_llm": [redact]}
    )
    events = session.send("t", "what is the key?").collect()
    streamed = "".join(e.text for e in of(events, ev.TextDelta))
    assert "sk-abcdefgh12345678" in streamed  # it did stream: hence the replacement
    [replaced] = of(events, ev.MessageReplaced)
    assert replaced.text == "The key is [redacted], keep it safe." and not replaced.removed
    assert replaced.message_id == of(events, ev.TextDelta)[0].message_id
    assert of(events, ev.AssistantMessage)[0].text == replaced.text
    assert events[-1].text == replaced.text  # run_finished's final text too
    assert session.view("t").messages[-1].content == replaced.text
    assert events.index(replaced) < events.index(of(events, ev.AssistantMessage)[0])
    # A reply the hook does not touch gets no replacement.
    assert not of(session.send("t", "thanks").collect(), ev.MessageReplaced)


def test_a_hook_that_removes_the_reply_says_so(tmp_path: Path) -> None:
    from langchain_core.messages import RemoveMessage

    @hook
    def drop(state):
        return {"messages": [RemoveMessage(id=state["messages"][-1].id), AIMessage("(withheld)")]}

    session, _ = session_with(tmp_path, ["secret stuff"], {"after_llm": [drop]})
    events = session.send("t", "hi").collect()
    [replaced] = of(events, ev.MessageReplaced)
    assert replaced.removed and replaced.text == ""
    assert [m.content for m in session.view("t").messages] == ["hi", "(withheld)"]


def _screen(output: str, width: int) -> list[str]:
    """What a terminal shows for `output` (text, \\n, \\r, cursor up, clear to end):
    enough of a VT100 to check an in-place replacement."""
    rows: list[list[str]] = [[]]
    row = col = 0
    for token in re.findall(r"\x1b\[(\d*)([AJ])|(\r)|(\n)|(.)", output, flags=re.S):
        n, code, cr, nl, ch = token
        if code == "A":
            row = max(0, row - int(n or 1))
        elif code == "J":
            del rows[row][col:]
            del rows[row + 1 :]
        elif cr:
            col = 0
        elif nl or ch and col >= width:
            row, col = row + 1, 0
        if nl or ch:
            while len(rows) <= row:
                rows.append([])
        if ch:
            line = rows[row]
            line.extend(" " * (col - len(line)))
            line[col : col + 1] = [ch]
            col += 1
    return ["".join(r).rstrip() for r in rows]


@pytest.mark.parametrize("tty", [True, False])
def test_the_terminal_shows_the_replaced_text(tmp_path: Path, tty: bool) -> None:
    from gatehouse.ui.term.render import EventRenderer

    session, _ = session_with(
        tmp_path, ["The key is sk-abcdefgh12345678, keep it safe."], {"after_llm": [redact]}
    )
    out = io.StringIO()
    renderer = EventRenderer(Console(file=out, force_terminal=tty, width=24, color_system=None))
    for event in session.send("t", "key?"):
        renderer.handle(event)
    shown = "\n".join(_screen(out.getvalue(), 24))
    if tty:  # replaced in place: the secret is gone from the screen
        assert "sk-abc" not in shown and "[redacted]" in shown.replace("\n", "")
    else:  # a pipe cannot take text back: it says the reply changed and prints the kept text
        assert "changed by a hook" in shown and shown.rstrip().endswith("keep it safe.")


def _live_redaction_script() -> None:
    import streamlit as st

    from gatehouse.graph.protocol import events as ev
    from gatehouse.ui.web.live_run import LiveView

    with st.chat_message("assistant"):
        view = LiveView()
        for event in (
            ev.TextDelta(thread_id="t", text="The key is sk-abcdefgh", message_id="m1"),
            ev.TextDelta(thread_id="t", text="12345678.", message_id="m1"),
        ):
            view.feed(event)
        view.flush()
        view.feed(ev.MessageReplaced(thread_id="t", message_id="m1", text="The key is [redacted]."))
        view.feed(ev.ToolStarted(thread_id="t", call_id="c1", name="list_files"))
        view.flush()


def test_the_web_live_view_shows_the_replaced_text() -> None:
    at = AppTest.from_function(_live_redaction_script, default_timeout=30).run()
    assert not at.exception
    shown = [m.value for m in at.markdown]
    assert any("The key is [redacted]." in m for m in shown), shown
    assert not any("sk-abcdefgh" in m for m in shown), shown


# -- item 4: reject_missing ------------------------------------------------------------------


def two_calls(tmp_path: Path) -> tuple[Session, Ledger]:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    script = [
        ai(
            "",
            tool_call("send_email", {"to": "a@x", "body": "1"}, "e1"),
            tool_call("send_email", {"to": "b@x", "body": "2"}, "e2"),
        ),
        "ok",
    ]
    session, _ = session_with(tmp_path, script, tools=make_tools(ledger))
    session.send("t", "mail both").collect()
    return session, ledger


def results(session: Session) -> dict[str, str]:
    return {
        m.tool_call_id: str(m.content)
        for m in session.view("t").messages
        if isinstance(m, ToolMessage)
    }


def test_without_reject_missing_a_partial_answer_is_refused(tmp_path: Path) -> None:
    session, ledger = two_calls(tmp_path)
    with pytest.raises(DecisionError, match="no decision for tool call"):
        session.resume("t", {"decisions": {"e1": {"type": "approve"}}})
    assert session.view("t").pending is not None and ledger.count("send_email") == 0


@pytest.mark.parametrize("how", ["parameter", "field", "reason", "null"])
def test_reject_missing_rejects_what_the_answer_leaves_out(tmp_path: Path, how: str) -> None:
    session, ledger = two_calls(tmp_path)
    if how == "parameter":
        run = session.resume("t", {"decisions": {"e1": {"type": "approve"}}}, reject_missing=True)
    elif how == "field":
        run = session.resume(
            "t", {"decisions": {"e1": {"type": "approve"}}, "reject_missing": True}
        )
    elif how == "reason":
        run = session.resume(
            "t", {"decisions": {"e1": {"type": "approve"}}}, reject_missing="only a@x today"
        )
    else:
        run = session.resume(
            "t", {"decisions": [{"type": "approve"}, None], "reject_missing": True}
        )
    assert run.collect()[-1].status == "completed"
    assert [e["args"]["to"] for e in ledger.entries()] == ["a@x"]
    found = results(session)
    assert found["e1"] == "sent to a@x" and "declined" in found["e2"]
    if how == "reason":
        assert "only a@x today" in found["e2"]
    [record] = [r for r in session.view("t").audit() if r.tool_call_id == "e2"]
    assert record.decision == "reject"


def test_reject_missing_through_a_raw_command_and_async_session(tmp_path: Path) -> None:
    session, ledger = two_calls(tmp_path)
    pending = session.view("t").pending
    config = {"configurable": {"thread_id": "t"}}
    session.agent.invoke(
        Command(
            resume={
                pending.interrupt_id: {
                    "decisions": {"e2": {"type": "approve"}},
                    "reject_missing": True,
                }
            }
        ),
        config,
    )
    assert [e["args"]["to"] for e in ledger.entries()] == ["b@x"]
    assert "declined" in results(session)["e1"]

    other, other_ledger = two_calls(tmp_path / "async")

    async def main() -> str | None:
        run = await AsyncSession(other).resume(
            "t", {"decisions": {"e1": {"type": "approve"}}}, reject_missing=True
        )
        await run.collect()
        return run.status

    assert asyncio.run(main()) == "completed" and other_ledger.count("send_email") == 1


def test_a_raw_command_without_reject_missing_changes_nothing(tmp_path: Path) -> None:
    session, ledger = two_calls(tmp_path)
    pending = session.view("t").pending
    with pytest.raises(Exception, match="no decision for tool call"):
        session.agent.invoke(
            Command(resume={pending.interrupt_id: {"decisions": {"e2": {"type": "approve"}}}}),
            {"configurable": {"thread_id": "t"}},
        )
    assert (
        session.view("t").pending.interrupt_id == pending.interrupt_id
        and ledger.count("send_email") == 0
    )


# -- item 7: messages() read mid-run -----------------------------------------------------------


def ten_reads_script(n: int = 10) -> list[Any]:
    calls = [tool_call("read_file", {"path": f"f{i}.txt"}, f"r{i}") for i in range(n)]
    return [
        ai("Reading all.", *calls[: n // 2]),
        ai("And the rest.", *calls[n // 2 :]),
        "All read.",
    ]


def check_reads(session: Session, events: Any) -> int:
    checked = 0
    for event in events:
        if isinstance(event, ev.ToolFinished):
            found = [
                m
                for m in session.view("t").messages
                if isinstance(m, ToolMessage) and m.tool_call_id == event.call_id
            ]
            assert len(found) == 1 and found[0].content == event.output, event
            checked += 1
        elif isinstance(event, ev.AssistantMessage):
            assert any(
                m.id == event.message_id and m.content == event.text
                for m in session.view("t").messages
            )
        elif isinstance(event, ev.TurnComplete):
            assert len(session.view("t").messages) == event.history_size
    return checked


def test_a_mid_run_read_sees_every_result_already_announced(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    for i in range(10):
        (tmp_path / "ws" / f"f{i}.txt").write_text(f"file {i}\n")
    session, _ = session_with(tmp_path, ten_reads_script())
    assert check_reads(session, session.send("t", "read them all")) == 10
    # The same holds for a run driven in the background (the web app's Runner path).
    session2, _ = session_with(tmp_path / "bg", ten_reads_script())
    for i in range(10):
        (tmp_path / "bg" / "ws" / f"f{i}.txt").write_text(f"file {i}\n")
    run = session2.send("t", "read them all").start()
    cursor = checked = 0
    while not (run.done and cursor >= len(run.events)):
        new = run.wait(cursor)
        cursor += len(new)
        checked += check_reads(session2, new)
    assert checked == 10


def test_a_mid_run_read_through_async_session(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    for i in range(10):
        (tmp_path / "ws" / f"f{i}.txt").write_text(f"file {i}\n")
    session, _ = session_with(tmp_path, ten_reads_script())

    async def main() -> int:
        asession = AsyncSession(session)
        run = await asession.start("t", "read them all")
        checked = 0
        async for event in run:
            if isinstance(event, ev.ToolFinished):
                messages = await asession.view("t").messages
                assert any(
                    isinstance(m, ToolMessage) and m.tool_call_id == event.call_id for m in messages
                )
                checked += 1
        return checked

    assert asyncio.run(main()) == 10


def test_a_redaction_hook_from_gatehouse_toml_under_async_session(tmp_path: Path) -> None:
    from gatehouse.graph import open_session
    from gatehouse.graph.service.config import load_settings

    (tmp_path / "ws").mkdir()
    (tmp_path / "gatehouse.toml").write_text(
        'db = "g.db"\nworkspace = "ws"\n[hooks]\nafter_llm = ["tests.support.haystack_hooks:Redact"]\n'
    )
    settings = load_settings(tmp_path / "gatehouse.toml", env={})

    async def main() -> list[ev.Event]:
        session = AsyncSession(
            open_session(settings, model=ScriptedModel(script=["use sk-abcdefgh12345678 here"]))
        )
        run = await session.start("t", "key?")
        events = await run.collect()
        assert (await session.view("t").messages)[-1].content == "use [redacted] here"
        await session.close()
        return events

    events = asyncio.run(main())
    [replaced] = of(events, ev.MessageReplaced)
    assert replaced.text == "use [redacted] here" and events[-1].text == "use [redacted] here"


def test_an_event_the_agent_emits_is_built_unvalidated_but_its_names_are_checked() -> None:
    """`emit` builds events without pydantic's validator (a per-process cost of each
    kind's first event), yet a misspelt or missing field is still an error, and the
    event is the one a validated construction gives, through JSON too."""
    from gatehouse.graph.protocol import events as ev

    made = ev.ToolStarted.trusted(thread_id="t", call_id="c1", name="read_file", args={"p": 1})
    checked = ev.ToolStarted(
        thread_id="t", call_id="c1", name="read_file", args={"p": 1}, ts=made.ts
    )
    assert made == checked and ev.parse_event(made.to_json()) == checked
    with pytest.raises(TypeError, match="no field nmae"):
        ev.ToolStarted.trusted(thread_id="t", call_id="c1", nmae="read_file")
    with pytest.raises(TypeError, match="needs name"):
        ev.ToolStarted.trusted(thread_id="t", call_id="c1")


def test_history_size_counts_what_the_reducer_keeps() -> None:
    """The size a turn's end reports equals the length of the reducer's result, for
    appends, removals, re-additions and repeats (history_size uses the reducer's index)."""
    import random

    from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage

    from gatehouse.graph.agent.message_merge import merge_messages
    from gatehouse.graph.agent.run_end import history_size

    rng = random.Random(7)
    for _ in range(200):
        history = [HumanMessage(f"m{i}", id=f"id{i}") for i in range(rng.randint(0, 30))]
        added: list[Any] = []
        for _ in range(rng.randint(0, 6)):
            mid = f"id{rng.randint(0, 40)}"
            added.append(
                RemoveMessage(id=mid)
                if rng.random() < 0.3 and any(m.id == mid for m in [*history, *added])
                else AIMessage("x", id=mid)
            )
        assert history_size(history, added) == len(merge_messages(history, [added])), added


def test_trusted_events_are_the_validated_events_of_every_kind() -> None:
    """`trusted` builds what validation builds: equal, the same JSON and repr (fields in
    the same order), defaults filled (each event its own `ts`), for every event kind."""
    from typing import Literal, get_args, get_origin

    from pydantic_core import PydanticUndefined

    samples: dict[str, Any] = {
        "thread_id": "t",
        "run_id": "r",
        "call_id": "c1",
        "name": "read_file",
        "args": {"p": 1},
        "text": "hi",
        "message": "m",
        "interrupt_id": "i1",
        "attempt": 1,
        "max_retries": 3,
        "delay_s": 0.5,
        "reason": "busy",
        "index": 0,
        "message_id": "m1",
        "history_size": 4,
        "operation": "undo",
        "tokens_before": 900,
        "tokens_after": 300,
        "request": {"action_requests": [], "review_configs": []},
    }
    tried = 0
    for kind in ev.EVENT_TYPES:
        fields = kind.model_fields
        given = {
            n: get_args(f.annotation)[0] if get_origin(f.annotation) is Literal else samples[n]
            for n, f in fields.items()
            if f.is_required() and (n in samples or get_origin(f.annotation) is Literal)
        }
        if any(f.is_required() and n not in given for n, f in fields.items()):
            raise AssertionError(f"no sample value for {kind.__name__}: add one above")
        made = kind.trusted(**given)
        checked = kind(**given, ts=made.ts)
        assert made == checked, kind
        assert made.to_json() == checked.to_json() and repr(made) == repr(checked), kind
        assert made.ts != PydanticUndefined and made.model_fields_set == set(given)
        assert get_args(fields["type"].annotation) == (made.type,)
        tried += 1
    assert tried == len(ev.EVENT_TYPES)

"""Long conversations and operations (issue 22), through the Session a front end
uses, on a real SQLite file: compaction on by default (also with the offline demo
model), tool outputs stored aside and read back in ranges, tracing options, the
final text on `run_finished`, export/import, undo and fork while paused, and the
decision audit log.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.types import Command

from gatehouse.graph import (
    AwaitingDecision,
    DecisionRecord,
    ImportRefused,
    ScriptedModel,
    Session,
    Settings,
    ai,
    load_settings,
    open_session,
    tool_call,
)
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.operations import Compact, Delete, ImportThread, Undo

BIG_LINES = 2_000


def settings(tmp: Path, **extra: Any) -> Settings:
    (tmp / "ws").mkdir(parents=True, exist_ok=True)
    return Settings(db=str(tmp / "gatehouse.db"), workspace=str(tmp / "ws"), **extra)


def big_file(tmp: Path) -> str:
    text = "".join(f"row {i:04d}: " + "value " * 10 + "\n" for i in range(BIG_LINES))
    (tmp / "ws" / "big.txt").write_text(text)
    return text


def of(events: list[ev.Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def finished(events: list[ev.Event]) -> ev.RunFinished:
    return of(events, ev.RunFinished)[-1]


def tool_results(messages: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in messages if isinstance(m, ToolMessage)]


# -- compaction ------------------------------------------------------------------------


def test_compaction_is_on_by_default_and_the_demo_model_writes_the_summary(tmp_path: Path) -> None:
    assert Settings().compaction is True
    # The default configuration, with a threshold a short demo thread crosses.
    session = open_session(settings(tmp_path, compaction_max_tokens=150))
    try:
        run = session.send(None, "list files")
        run.collect()
        tid = run.thread_id
        (tmp_path / "ws" / "notes.md").write_text("milk\n" * 50)
        first = session.view(tid).messages[0]
        session.send(tid, "read notes.md").collect()
        events = session.send(tid, "list files").collect()
        [compacted] = of(events, ev.Compacted)
        assert compacted.tokens_after < compacted.tokens_before and compacted.messages_removed >= 4

        view = session.view(tid).transcript
        [summary] = [m for m in view if m.summary]
        assert summary.role == "user"
        # The offline demo wrote a plain summary of what happened.
        assert '"list files"' in summary.content and "list_files ×" in summary.content
        assert finished(events).status == "completed"
        # Only the model's view was summarised: the person's history keeps the first turn.
        assert session.view(tid).messages[0].id == first.id
        # The full history stays in the checkpoints: time travel still shows it.
        older = [
            s.values["messages"]
            for s in session.agent.get_state_history({"configurable": {"thread_id": tid}})
        ]
        assert any(msgs and msgs[0].id == first.id and len(msgs) >= 6 for msgs in older)
        # And the thread goes on.
        assert finished(session.send(tid, "list files").collect()).status == "completed"
    finally:
        session.close()


def test_compact_now_with_the_default_configuration_also_when_automatic_compaction_is_off(
    tmp_path: Path,
) -> None:
    config = tmp_path / "gatehouse.toml"
    config.write_text("[compaction]\nenabled = false\nmax_tokens = 10\nkeep_turns = 1\n")
    loaded = load_settings(config, env={})
    assert (loaded.compaction, loaded.compaction_max_tokens, loaded.compaction_keep_turns) == (
        False,
        10,
        1,
    )
    session = open_session(
        settings(tmp_path, compaction=False, compaction_max_tokens=10, compaction_keep_turns=1)
    )
    try:
        tid = session.new_thread_id()
        for _ in range(3):
            assert not of(
                session.send(tid, "list files").collect(), ev.Compacted
            )  # off: never on its own
        event = session.submit(Compact(tid)).result().compacted
        assert event is not None and event.messages_removed == 8
        view = session.view(tid).transcript
        assert [m.summary for m in view].index(True) == 8 and len(view) == 13
        assert [m.content for m in view[9:10]] == ["list files"]
    finally:
        session.close()


def test_compaction_summarises_with_the_cheaper_model_named_in_config(tmp_path: Path) -> None:
    from tests.support.openai_server import FakeOpenAI

    def answer(body: dict[str, Any]) -> str:
        return "SUMMARY by the small model" if body["model"] == "small-model" else "an answer " * 20

    with FakeOpenAI([answer] * 50) as server:
        session = open_session(
            settings(
                tmp_path,
                base_url=server.base_url,
                api_key="k",
                model="big-model",
                compaction_model="small-model",
                compaction_max_tokens=120,
                compaction_keep_turns=1,
            )
        )
        try:
            tid = session.new_thread_id()
            for text in ("one " * 40, "two " * 40, "three"):
                events = session.send(tid, text).collect()
            assert of(events, ev.Compacted)
            summaries = [
                r
                for r in server.requests
                if r["messages"][0]["content"].startswith("Summarise the conversation")
            ]
            assert summaries and {r["model"] for r in summaries} == {"small-model"}
            assert {r["model"] for r in server.requests if r not in summaries} == {"big-model"}
            assert any(
                m.summary and "SUMMARY by the small model" in m.content
                for m in session.view(tid).transcript
            )
            # The big model's last request starts at the summary, not at "one one …".
            last = [r for r in server.requests if r not in summaries][-1]
            assert "SUMMARY by the small model" in str(last["messages"]) and "one one" not in str(
                last["messages"]
            )
        finally:
            session.close()


def test_compaction_changes_only_what_the_model_is_sent(tmp_path: Path) -> None:
    """Issue 32, item 1: the person's history, the exports and the transcript stay
    whole; a marker sits where the model's view was summarised; the model's next
    request carries the summary, not the old turns."""

    def reply(messages: list[BaseMessage]) -> str:
        asked = messages[-1].additional_kwargs.get("gatehouse_summary_request")
        return (
            f"SUMMARY #{sum('SUMMARY' in str(m.content) for m in messages) + 1}" if asked else "ok"
        )

    model = ScriptedModel(script=[reply] * 400)
    session = open_session(
        settings(tmp_path, compaction=False, compaction_keep_turns=2), model=model
    )
    try:
        tid = session.new_thread_id()
        for i in range(12):
            session.send(tid, f"request {i:02d} " + "word " * 30).collect()
        before = session.view(tid).messages
        md_before, json_before = (
            session.view(tid).export(),
            json.loads(session.view(tid).export("json")),
        )

        done = session.submit(Compact(tid)).result().compacted
        assert (
            done is not None
            and done.messages_removed == 20
            and done.tokens_after < done.tokens_before
        )
        after = session.view(tid).messages
        summaries = [i for i, m in enumerate(after) if m.additional_kwargs.get("gatehouse_summary")]
        assert summaries == [20]  # the marker: just before the two turns kept verbatim
        assert [m.id for i, m in enumerate(after) if i != 20] == [m.id for m in before]
        view = session.view(tid).transcript
        assert (
            len(view) == len(before) + 1
            and view[20].summary
            and view[21].content.startswith("request 10")
        )

        md_after = session.view(tid).export()
        assert len(md_after) > len(md_before) and all(
            f"request {i:02d}" in md_after for i in range(12)
        )
        assert (
            md_after.index("request 09")
            < md_after.index("compacted: from here on")
            < md_after.index("request 10")
        )
        json_after = json.loads(session.view(tid).export("json"))
        assert [m for m in json_after["messages"] if not m.get("summary")] == json_before[
            "messages"
        ]

        session.send(tid, "request 12").collect()
        sent = " ".join(str(m.content) for m in model.inputs[-1])
        assert (
            "SUMMARY #1" in sent
            and "request 10" in sent
            and "request 11" in sent
            and "request 12" in sent
        )
        assert "request 00" not in sent and "request 09" not in sent

        # Again: the new summary covers the old one and the turns after it, the history stays whole.
        session.send(tid, "request 13").collect()
        again = session.submit(Compact(tid)).result().compacted
        assert again is not None and again.messages_removed == 5  # summary, turns 10 and 11
        latest = session.view(tid).messages
        assert [m.content for m in latest if m.type == "human" and "SUMMARY" not in m.content] == [
            m.content for m in before if m.type == "human"
        ] + ["request 12", "request 13"]
        session.send(tid, "request 14").collect()
        sent = " ".join(str(m.content) for m in model.inputs[-1])
        assert "SUMMARY #2" in sent and "SUMMARY #1" not in sent and "request 10" not in sent
        assert "request 12" in sent and "request 14" in sent
    finally:
        session.close()


# -- tool-result offloading -------------------------------------------------------------


def read_more(messages: list[BaseMessage]) -> AIMessage:
    """After the big result: read lines 1500-1502 of it with the built-in tool."""
    stored = [m for m in messages if isinstance(m, ToolMessage)][-1]
    return ai(
        "",
        tool_call(
            "read_tool_output",
            {"call_id": stored.tool_call_id, "start_line": 1500, "end_line": 1502},
            "r1",
        ),
    )


def test_a_large_tool_output_is_stored_aside_and_the_model_reads_ranges(tmp_path: Path) -> None:
    model = ScriptedModel(
        script=[ai("", tool_call("read_file", {"path": "big.txt"}, "c1")), read_more, "Found it."]
    )
    session = open_session(settings(tmp_path), model=model)
    text = big_file(tmp_path)
    try:
        run = session.send(None, "what is on row 1499?")
        events = run.collect()
        tid = run.thread_id
        assert finished(events).status == "completed"  # the read tool ran without asking
        big, more = of(events, ev.ToolFinished)
        assert big.offloaded and big.total_chars == len(text) and not more.offloaded
        # The model got a head and a reference, not 200 kB.
        sent = [m for m in model.inputs[1] if isinstance(m, ToolMessage)][-1]
        assert len(sent.content) < 2_500 and "output stored aside" in sent.content
        assert 'read_tool_output(call_id="c1", start_line=' in sent.content
        assert sent.content.startswith("row 0000: ")
        # ... and read on with the built-in tool.
        got = [m for m in model.inputs[2] if isinstance(m, ToolMessage)][-1].content
        assert (
            got.startswith("lines 1500-1502 of 2,000:")
            and "row 1499: " in got
            and "row 1501: " in got
        )
        assert "row 1502" not in got
        # The whole output is one call away for a front end, and the transcript says so.
        assert session.view(tid).tool_output("c1") == text
        view = next(m for m in session.view(tid).transcript if m.tool_call_id == "c1")
        assert view.offloaded and view.total_chars == len(text)
        assert session.view(tid).tool_output("r1") == got  # not offloaded: the result itself
        assert session.view(tid).tool_output("nope") is None
        # Stored in the thread's own database, in its own table.
        with sqlite3.connect(tmp_path / "gatehouse.db") as db:
            assert db.execute(
                "SELECT chars FROM gatehouse_tool_outputs WHERE thread_id=?", (tid,)
            ).fetchall() == [(len(text),)]
        # Gone with the thread.
        session.submit(Delete(tid))
        assert session.view(tid).tool_output("c1") is None
    finally:
        session.close()


def test_reading_a_stored_output_by_pattern_and_by_characters(tmp_path: Path) -> None:
    pattern = lambda _m: ai(  # noqa: E731
        "", tool_call("read_tool_output", {"call_id": "c1", "pattern": "row 07(77|78)"}, "r1")
    )
    chars = lambda _m: ai(  # noqa: E731
        "", tool_call("read_tool_output", {"call_id": "c1", "start_char": 100, "end_line": 5}, "r2")
    )
    missing = lambda _m: ai("", tool_call("read_tool_output", {"call_id": "c9"}, "r3"))  # noqa: E731
    model = ScriptedModel(
        script=[
            ai("", tool_call("read_file", {"path": "big.txt"}, "c1")),
            pattern,
            chars,
            missing,
            "ok",
        ]
    )
    session = open_session(settings(tmp_path), model=model)
    text = big_file(tmp_path)
    try:
        run = session.send(None, "search it")
        run.collect()
        results = {m.tool_call_id: m for m in tool_results(session.view(run.thread_id).messages)}
        assert results["r1"].content.splitlines()[1:] == [
            f"778: {text.splitlines()[777]}",
            f"779: {text.splitlines()[778]}",
        ]
        assert (
            results["r2"].content.startswith("characters 100-6100 of")
            and text[100:6100] in results["r2"].content
        )
        assert (
            results["r3"].status == "error"
            and "no stored output for call 'c9'" in results["r3"].content
        )
    finally:
        session.close()


def test_offloading_is_configurable_and_can_be_switched_off(tmp_path: Path) -> None:
    config = tmp_path / "gatehouse.toml"
    config.write_text("[offload]\nthreshold_chars = 0\n")
    assert load_settings(config, env={}).offload_threshold_chars == 0
    model = ScriptedModel(script=[ai("", tool_call("read_file", {"path": "big.txt"}, "c1")), "ok"])
    session = open_session(settings(tmp_path, offload_threshold_chars=0), model=model)
    big_file(tmp_path)
    try:
        events = session.send(None, "read it").collect()
        [done] = of(events, ev.ToolFinished)
        assert not done.offloaded and "read_tool_output" not in session.agent_tools
        # Without offloading a result is cut at 50,000 characters, as before.
        assert "output cut at 50000 characters" in done.output
    finally:
        session.close()


# -- tracing ----------------------------------------------------------------------------


class Recorder(BaseCallbackHandler):
    """A local callback handler: what a tracer (LangSmith, OpenTelemetry) would get."""

    def __init__(self) -> None:
        self.chains: list[dict[str, Any]] = []
        self.models: list[dict[str, Any]] = []

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: Any,
        parent_run_id: Any = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        self.chains.append(
            {
                "root": parent_run_id is None,
                "name": kw.get("name"),
                "tags": tags or [],
                "metadata": metadata or {},
            }
        )

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: Any,
        parent_run_id: Any = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kw: Any,
    ) -> None:
        self.models.append({"tags": tags or [], "metadata": metadata or {}})


def test_send_resume_and_retry_take_callbacks_tags_and_metadata_with_the_thread_id(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        script=[ai("", tool_call("write_file", {"path": "a.md", "content": "x"}, "w1")), "done"]
    )
    session = open_session(settings(tmp_path), model=model)
    try:
        sent, resumed, retried = Recorder(), Recorder(), Recorder()
        run = session.send(
            None, "write a.md", callbacks=[sent], tags=["team:ops"], metadata={"customer": "acme"}
        )
        assert finished(run.collect()).status == "awaiting_approval"
        tid = run.thread_id
        session.resume(
            tid, {"decisions": [{"type": "approve"}]}, callbacks=[resumed], tags=["resume"]
        ).collect()
        session.retry(tid, callbacks=[retried], metadata={"attempt": 2}).collect()
        for recorder, tag in ((sent, "team:ops"), (resumed, "resume"), (retried, None)):
            [root] = [c for c in recorder.chains if c["root"]]
            assert root["metadata"]["thread_id"] == tid
            if tag:
                assert tag in root["tags"]
        assert [c["metadata"].get("customer") for c in sent.chains if c["root"]] == ["acme"]
        assert [c["metadata"].get("attempt") for c in retried.chains if c["root"]] == [2]
        # Every model call carries the thread too (LangSmith counts a thread's tokens
        # from the runs that have it).
        assert sent.models and resumed.models
        assert all(
            m["metadata"]["thread_id"] == tid and "team:ops" in m["tags"] for m in sent.models
        )
    finally:
        session.close()


def test_the_async_session_passes_tracing_and_audit_options_through(tmp_path: Path) -> None:
    import asyncio

    from gatehouse.graph import AsyncSession

    model = ScriptedModel(
        script=[ai("", tool_call("write_file", {"path": "a.md", "content": "x"}, "w1")), "done"]
    )

    async def main() -> None:
        session = AsyncSession(open_session(settings(tmp_path), model=model))
        try:
            recorder = Recorder()
            run = await session.start(None, "write a.md", callbacks=[recorder], tags=["async"])
            await run.collect()
            resumed = await session.resume(
                run.thread_id,
                {"decisions": [{"type": "approve"}]},
                source="websocket",
                actor="frank",
            )
            assert (await resumed.collect())[-1].text == "done"
            [root] = [c for c in recorder.chains if c["root"]]
            assert root["metadata"]["thread_id"] == run.thread_id and "async" in root["tags"]
            [record] = await session.view(run.thread_id).audit()
            assert (record.source, record.actor) == ("websocket", "frank")
        finally:
            await session.close()

    asyncio.run(main())


# -- the final text on run_finished -------------------------------------------------------


def test_run_finished_carries_the_final_text_and_its_message_id(tmp_path: Path) -> None:
    model = ScriptedModel(
        script=[
            "<think>easy</think>Hello there.",
            ai("Writing it.", tool_call("write_file", {"path": "a.md", "content": "x"}, "w1")),
            "Wrote a.md.",
        ]
    )
    session = open_session(settings(tmp_path), model=model)
    try:
        run = session.send(None, "hi")
        done = finished(run.collect())
        last = session.view(run.thread_id).messages[-1]
        assert (done.text, done.message_id) == ("Hello there.", last.id) and run.finished == done
        paused = finished(session.send(run.thread_id, "write a.md").collect())
        assert paused.status == "awaiting_approval" and paused.text == "Writing it."
        resumed = finished(
            session.resume(run.thread_id, {"decisions": [{"type": "approve"}]}).collect()
        )
        assert (
            resumed.text == "Wrote a.md."
            and resumed.message_id == session.view(run.thread_id).messages[-1].id
        )
    finally:
        session.close()


# -- export / import ------------------------------------------------------------------


def rich_thread(session: Session, tmp_path: Path) -> str:
    """A thread with free and gated calls (approved, edited, rejected, answered), an
    output stored aside, reasoning, a stop notice and a compaction summary."""
    big_file(tmp_path)
    tid = session.new_thread_id()
    session.send(tid, "hello").collect()
    session.send(tid, "start").collect()
    session.send(tid, "write two").collect()
    session.resume(
        tid,
        {
            "decisions": [
                {
                    "type": "edit",
                    "edited_action": {
                        "name": "write_file",
                        "args": {"path": "a.md", "content": "edited\n"},
                    },
                },
                {"type": "reject", "message": "not b"},
            ]
        },
    ).collect()
    session.send(tid, "delete").collect()
    session.resume(
        tid, {"decisions": [{"type": "respond", "message": "I deleted it myself."}]}
    ).collect()
    session.send(tid, "stop me").collect()
    return tid


def rich_model() -> ScriptedModel:
    # Each run stops at its model-call limit (1) after its calls; the stop notice is
    # Gatehouse's, not sent to the model, so each message's reply is the next entry.
    return ScriptedModel(
        script=[
            "Hi.",
            ai(
                "<think>look first</think>Looking.",
                tool_call("read_file", {"path": "big.txt"}, "c1"),
                tool_call("list_files", {}, "c2"),
            ),
            ai(
                "",
                tool_call("write_file", {"path": "a.md", "content": "a\n"}, "w1"),
                tool_call("write_file", {"path": "b.md", "content": "b\n"}, "w2"),
            ),
            ai("", tool_call("delete_file", {"path": "a.md"}, "d1")),
            ai("", tool_call("list_files", {}, "c3")),
        ]
    )


def test_export_json_imports_back_to_equal_messages(tmp_path: Path) -> None:
    session = open_session(
        settings(tmp_path / "one", max_model_calls=1, compaction_keep_turns=4), model=rich_model()
    )
    other = open_session(settings(tmp_path / "two"), model=ScriptedModel(fallback="Continuing."))
    try:
        tid = rich_thread(session, tmp_path / "one")
        assert session.submit(Compact(tid)).result().compacted is not None
        original = session.view(tid).messages
        kinds = {type(m).__name__ for m in original}
        assert kinds == {"HumanMessage", "AIMessage", "ToolMessage"}
        views = session.view(tid).transcript
        assert (
            any(v.summary for v in views)
            and any(v.notice for v in views)
            and any(v.offloaded for v in session.view(tid).transcript)
        )
        exported = session.view(tid).export("json")
        data = json.loads(exported)
        assert data["format"] == "gatehouse-thread" and data["tool_outputs"]

        # Into another database: the same id, equal messages, the stored outputs too.
        assert other.submit(ImportThread(exported)).result().thread_id == tid
        assert other.view(tid).messages == original
        assert other.view(tid).transcript == views
        offloaded = next(v for v in views if v.offloaded)
        assert other.view(tid).tool_output(offloaded.tool_call_id) == session.view(tid).tool_output(
            offloaded.tool_call_id
        )
        assert other.view(tid).info.title == session.view(tid).info.title
        assert other.view(tid).pending is None
        # It is a thread like any other: it goes on.
        assert finished(other.send(tid, "go on").collect()).text == "Continuing."

        # Into the same database: the id is taken, so a new one; a named id that is taken is refused.
        again = session.submit(ImportThread(exported)).result().thread_id
        assert again != tid and session.view(again).messages == original
        with pytest.raises(ImportRefused, match="already exists"):
            session.submit(ImportThread(exported, thread_id=tid))
        assert (
            session.submit(ImportThread(json.loads(exported), thread_id="chosen-id"))
            .result()
            .thread_id
            == "chosen-id"
        )

        # A hand-trimmed file with only the plain views imports too, to equal views.
        del data["lc_messages"]
        assert other.view(other.submit(ImportThread(data)).result().thread_id).transcript == views
    finally:
        session.close()
        other.close()


def test_an_import_that_would_break_tool_call_pairing_is_refused_and_writes_nothing(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        script=[ai("", tool_call("write_file", {"path": "a.md", "content": "x"}, "w1"))]
    )
    session = open_session(settings(tmp_path), model=model)
    try:
        run = session.send(None, "write a.md")
        run.collect()
        paused = json.loads(session.view(run.thread_id).export("json"))
        before = [t.thread_id for t in session.thread_list().threads]
        # A paused export imports only as a hand-over (tests/test_export_paused.py);
        # without the request it waited for, its open call is refused.
        with pytest.raises(ImportRefused, match="imports only under its own id"):
            session.submit(ImportThread(paused, thread_id="fresh"))
        with pytest.raises(
            ImportRefused, match=r"tool calls without results: \['write_file'\].*\"pending\""
        ):
            session.submit(ImportThread({**paused, "pending": None}, thread_id="fresh"))
        orphan = {**paused, "lc_messages": [m for m in paused["lc_messages"] if m["type"] != "ai"]}
        orphan["lc_messages"].append(
            {"type": "tool", "data": {"content": "x", "tool_call_id": "zz", "id": "t9"}}
        )
        with pytest.raises(ImportRefused, match="a tool result without its tool call"):
            session.submit(ImportThread(orphan, thread_id="fresh"))
        with pytest.raises(ImportRefused, match="not a JSON thread export"):
            session.submit(ImportThread("{nope", thread_id="fresh"))
        with pytest.raises(ImportRefused, match="appear more than once"):
            session.submit(
                ImportThread(
                    {**paused, "lc_messages": paused["lc_messages"][:1] * 2}, thread_id="fresh"
                )
            )
        assert [t.thread_id for t in session.thread_list().threads] == before
        assert not session.view("fresh").messages
    finally:
        session.close()


# -- undo and fork while paused ------------------------------------------------------------


def test_undo_and_fork_while_paused_are_refused_unless_forced(tmp_path: Path) -> None:
    model = ScriptedModel(
        script=[
            "first answer",
            ai("", tool_call("write_file", {"path": "a.md", "content": "x"}, "w1")),
        ]
        + ["second answer"] * 5
    )
    session = open_session(settings(tmp_path), model=model)
    try:
        tid = session.new_thread_id()
        session.send(tid, "hello").collect()
        session.send(tid, "write a.md").collect()
        pending = session.view(tid).pending
        assert pending is not None
        with pytest.raises(
            AwaitingDecision, match="waiting for a decision on write_file; undo would drop"
        ):
            session.submit(Undo(tid))
        with pytest.raises(AwaitingDecision, match="fork would drop"):
            session.fork(tid, 2, "something else")
        # Nothing changed: the same request is still pending and can be answered.
        assert (
            session.view(tid).pending.interrupt_id == pending.interrupt_id
            and len(session.view(tid).messages) == 4
        )

        assert session.submit(Undo(tid, force=True)).result().removed == 2
        assert session.view(tid).pending is None
        assert [m.content for m in session.view(tid).messages] == ["hello", "first answer"]
        assert not (tmp_path / "ws" / "a.md").exists()

        session.send(tid, "write a.md").collect()
        run = session.fork(tid, 0, "hello again", force=True)
        assert finished(run.collect()).status == "completed"
        assert [m.content for m in session.view(tid).messages] == ["hello again", "first answer"]
    finally:
        session.close()


def test_undo_after_compaction_restores_the_turn_before(tmp_path: Path) -> None:
    session = open_session(
        settings(tmp_path, compaction_keep_turns=1), model=ScriptedModel(fallback="ok")
    )
    try:
        tid = session.new_thread_id()
        for text in ("one", "two", "three"):
            session.send(tid, text).collect()
        session.submit(Compact(tid))
        session.send(tid, "four").collect()
        assert session.submit(Undo(tid)).result().removed == 2
        assert [
            m.content
            for m in session.view(tid).messages
            if not m.additional_kwargs.get("gatehouse_summary")
        ] == ["one", "ok", "two", "ok", "three", "ok"]
        assert session.view(tid).transcript[4].summary
        # Undo the compaction's own turn: back to the full history before it.
        session.submit(Undo(tid))
        assert [m.content for m in session.view(tid).messages] == ["one", "ok", "two", "ok"]
    finally:
        session.close()


# -- the decision audit log -----------------------------------------------------------------


def test_the_audit_log_records_who_decided_what_and_outlives_undo_fork_and_deletion(
    tmp_path: Path,
) -> None:
    script = [
        ai(
            "",
            tool_call("write_file", {"path": "a.md", "content": "one\ntwo\n"}, "w1"),
            tool_call("write_file", {"path": "b.md", "content": "b"}, "w2"),
            tool_call("delete_file", {"path": "c.md"}, "d1"),
        ),
        "done",
        ai("", tool_call("write_file", {"path": "x.md", "content": "x"}, "w3")),
    ] + ["ok"] * 10
    session = open_session(
        settings(tmp_path), model=ScriptedModel(script=script), source="web", actor="alice"
    )
    try:
        tid = session.new_thread_id()
        session.send(tid, "three things").collect()
        session.resume(
            tid,
            {
                "decisions": [
                    {
                        "type": "edit",
                        "edited_action": {
                            "name": "write_file",
                            "args": {"path": "a.md", "content": "one\n2\n"},
                        },
                    },
                    {"type": "approve", "always_allow": True},
                    {"type": "reject", "message": "keep c.md"},
                ]
            },
            actor="bob",
        ).collect()
        session.send(tid, "another").collect()  # write_file is always allowed now: no question
        # An automatic approval recorded by another part of the system shows as it is.
        session.storage.decisions.record(
            [
                DecisionRecord(
                    tid,
                    "review",
                    "w9",
                    "write_file",
                    "auto_approve",
                    {"path": "z"},
                    source="policy",
                    actor="rule:notes",
                    decided_at=1.0,
                )
            ]
        )

        records = session.view(tid).audit()
        assert [r.decided_at for r in records] == sorted(
            (r.decided_at for r in records), reverse=True
        )
        by_call = {r.tool_call_id: r for r in records}
        # w3 ran under the standing grant, with nobody asked: logged as such.
        assert set(by_call) == {"w1", "w2", "d1", "w3", "w9"}
        assert (by_call["w3"].question, by_call["w3"].decision) == ("standing", "always_allowed")
        edit = by_call["w1"]
        assert (edit.decision, edit.source, edit.actor) == ("edit", "web", "bob")
        assert (
            edit.requested_args == {"path": "a.md", "content": "one\ntwo\n"}
            and edit.args["content"] == "one\n2\n"
        )
        assert edit.changes() == {"content": {"requested": "one\ntwo\n", "ran": "one\n2\n"}}
        assert "-two\n+2" in edit.diff() and edit.to_dict()["diff"] == edit.diff()
        assert (by_call["w2"].decision, by_call["w2"].always_allow, by_call["w2"].actor) == (
            "approve",
            "*",
            "bob",
        )
        assert (by_call["d1"].decision, by_call["d1"].message) == ("reject", "keep c.md")
        assert by_call["w9"].decision == "auto_approve" and by_call["w9"].runs
        json.dumps([r.to_dict() for r in records])

        # The log outlives undo, fork and deleting the thread.
        session.submit(Undo(tid))
        session.fork(tid, 0, "again").collect()
        session.submit(Delete(tid))
        after = {r.tool_call_id for r in session.view(tid).audit()}
        assert after >= set(by_call)
        # The fork's reply repeats the first reply's ids (a scripted model): they are new
        # calls, given ids of their own, never covered by the decisions made for w1 / w2.
        assert after - set(by_call) and all(i.startswith("call_") for i in after - set(by_call))
        assert {r.tool_call_id for r in session.thread_list().audit()} >= set(by_call)
        assert len(session.thread_list().audit(2)) == 2
    finally:
        session.close()


def test_a_raw_resume_through_langgraph_server_records_its_authenticated_user(
    tmp_path: Path,
) -> None:
    model = ScriptedModel(
        script=[ai("", tool_call("write_file", {"path": "a.md", "content": "x"}, "w1")), "done"]
    )
    session = open_session(settings(tmp_path), model=model)
    try:
        config = {
            "configurable": {
                "thread_id": "srv",
                "assistant_id": "gatehouse",
                "langgraph_auth_user_id": "carol",
            }
        }
        session.agent.invoke({"messages": [HumanMessage("write")]}, config)
        [interrupt] = session.agent.get_state(config).interrupts
        session.agent.invoke(
            Command(resume={interrupt.id: {"decisions": [{"type": "approve"}]}}), config
        )
        [record] = session.view("srv").audit()
        assert (record.source, record.actor, record.decision) == (
            "langgraph-server",
            "carol",
            "approve",
        )
    finally:
        session.close()


# -- LangSmith by its environment variables, against a local stand-in ------------------------

TRACED_RUN = """
import sys
from gatehouse.graph import Settings, open_session
from langchain_core.tracers.langchain import wait_for_all_tracers
session = open_session(Settings(db=sys.argv[1], workspace=sys.argv[2]))
run = session.send(None, "list files", tags=["nightly"])
run.collect()
wait_for_all_tracers()
print(run.thread_id)
session.close()
"""


INFO = {
    "version": "0.0",
    "instance_flags": {},
    "batch_ingest_config": {
        "use_multipart_endpoint": True,
        "size_limit": 100,
        "size_limit_bytes": 20_971_520,
        "scale_up_qsize_trigger": 1000,
        "scale_up_nthreads_limit": 16,
        "scale_down_nempty_trigger": 4,
    },
}


class FakeLangSmith:
    """Accepts what the langsmith client posts (GET /info, POST /runs/multipart) and
    keeps each run's JSON parts."""

    def __init__(self) -> None:
        self.parts: dict[str, Any] = {}

    def __enter__(self) -> FakeLangSmith:
        import threading
        from email.parser import BytesParser
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        parts = self.parts

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._reply(json.dumps(INFO).encode())

            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
                for part in BytesParser().parsebytes(head + data).get_payload() or []:
                    name = part.get_param("name", header="content-disposition")
                    payload = part.get_payload(decode=True)
                    if name and payload:
                        parts[name] = json.loads(payload)
                self._reply(b"{}")

            do_PATCH = do_POST

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def test_langsmith_by_its_environment_variables_groups_runs_by_the_thread(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / "ws").mkdir()
    with FakeLangSmith() as langsmith:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OPENAI_", "GATEHOUSE_", "LANGSMITH_", "LANGCHAIN_"))
        }
        env.update(
            LANGSMITH_TRACING="true",
            LANGSMITH_ENDPOINT=langsmith.url,
            LANGSMITH_API_KEY="test-key",
            LANGSMITH_PROJECT="gatehouse-tests",
            PYTHONPATH=str(Path(__file__).resolve().parents[1]),
        )
        done = subprocess.run(
            [sys.executable, "-c", TRACED_RUN, str(tmp_path / "g.db"), str(tmp_path / "ws")],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        thread_id = done.stdout.strip().splitlines()[-1]
    runs = {
        name.split(".")[1]: body for name, body in langsmith.parts.items() if name.count(".") == 1
    }
    extras = {
        name.split(".")[1]: body
        for name, body in langsmith.parts.items()
        if name.endswith(".extra")
    }
    assert runs, langsmith.parts.keys()
    [root] = [r for r in runs.values() if not r.get("parent_run_id")]
    assert (
        root["name"] == "gatehouse"
        and root["session_name"] == "gatehouse-tests"
        and "nightly" in root["tags"]
    )
    # Every run, the model calls and tool calls included, carries the thread id.
    assert {extras[run_id]["metadata"]["thread_id"] for run_id in runs} == {thread_id}
    assert {r["run_type"] for r in runs.values()} >= {"chain", "llm", "tool"}

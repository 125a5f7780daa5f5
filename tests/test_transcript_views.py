"""`Session.transcript` reuses the views of unchanged messages (graph/service/reads.py,
issue 36: the web app's page after each turn of a 2,000-turn thread converted all
10,000 messages again). Whatever changes a thread, the transcript a Session returns
is exactly the one a fresh conversion of its messages gives, on a real SQLite file.
"""

from __future__ import annotations

from pathlib import Path

from gatehouse.graph import ScriptedModel, Settings, ai, open_session, tool_call
from gatehouse.graph.protocol.operations import Undo
from gatehouse.graph.service.reads import ViewCache
from gatehouse.graph.service.transcript import message_view

APPROVE = {"decisions": [{"type": "approve"}]}


def fresh(session: object, thread_id: str) -> list[object]:
    return [message_view(m) for m in session.view(thread_id).messages]  # type: ignore[attr-defined]


def test_every_change_to_a_thread_shows_in_its_transcript(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    model = ScriptedModel(
        script=[
            ai("first answer"),
            ai("", tool_call("write_file", {"path": "a.md", "content": "one"}, "w1")),
            ai("wrote it"),
        ]
    )
    session = open_session(
        Settings(db=str(tmp_path / "g.db"), workspace=str(tmp_path / "ws"), compaction=False),
        model=model,
    )
    try:
        session.send("t", "hello").collect()
        assert session.view("t").transcript == fresh(session, "t")
        assert [v.content for v in session.view("t").transcript] == ["hello", "first answer"]
        # Paused on an approval: the request is in the transcript, then its result.
        session.send("t", "write a.md").collect()
        assert session.view("t").transcript == fresh(session, "t")
        session.resume("t", APPROVE).collect()
        after = session.view("t").transcript
        assert after == fresh(session, "t")
        assert any(v.role == "tool" and v.tool_call_id == "w1" for v in after)
        # A message replaced at the same place (an undo, then another answer).
        session.submit(Undo("t"))
        undone = session.view("t").transcript
        assert undone == fresh(session, "t")
        assert [v.content for v in undone] == ["hello", "first answer"]
        # The scripted model answers by the history's length: the same call again.
        session.send("t", "again").collect()
        assert session.view("t").transcript == fresh(session, "t")
        session.resume("t", APPROVE).collect()
        assert session.view("t").transcript == fresh(session, "t")
        # A fork rewrites from an early message on.
        session.fork("t", 0, "hello, edited").collect()
        forked = session.view("t").transcript
        assert forked == fresh(session, "t")
        assert [v.content for v in forked] == ["hello, edited", "first answer"]
    finally:
        session.close()


def test_a_view_is_reused_only_for_a_message_with_the_same_fields() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    cache = ViewCache()
    one, two = HumanMessage("hi", id="1"), AIMessage("answer", id="2")
    first = cache.views("t", [one, two])
    assert [v.content for v in first] == ["hi", "answer"]
    # The same objects, a field set on one since (as a reducer may set an id): not reused.
    two.content = "changed in place"
    assert [v.content for v in cache.views("t", [one, two])] == ["hi", "changed in place"]
    # Equal fields in a new object: reused (the very same view object).
    again = cache.views("t", [HumanMessage("hi", id="1"), AIMessage("changed in place", id="2")])
    assert again[0] is first[0]
    # A different class with the same fields is a different message.
    assert cache.views("t", [AIMessage("hi", id="1")])[0].role == "assistant"

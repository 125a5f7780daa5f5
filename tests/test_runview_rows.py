"""How calls and decisions are drawn (issue 32 leftovers), without a browser:

- the decision log keeps a multi-line value's line breaks in the same `gh-pre` block
  the history uses (Streamlit rewrites a `<pre>` in Markdown, so the page's style never
  applied to it), escaped: what a person or model wrote is never read as HTML;
- a live call the person answered with "respond" (or rejected) is not left as a
  finished `st.status`, whose only finished states are a green tick (as if it ran) or
  an error: it is drawn as the history draws it, "↩ … · answered by you".
"""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Status

from gatehouse.graph.protocol.decisions import DecisionRecord
from gatehouse.ui.web.audit import record_html

TIMEOUT = 30


def test_decision_log_keeps_line_breaks_in_escaped_gh_pre_blocks() -> None:
    record = DecisionRecord(
        thread_id="t-1",
        question="review",
        tool_call_id="c1",
        tool="run_command",
        decision="edit",
        args={"command": "seq 1 3\necho <b>done</b>"},
        requested_args={"command": "seq 1 3"},
        message="line one\nline two <script>alert(1)</script>\n\nafter a blank line",
        decided_at=1.0,
    )
    row = record_html(record, None)
    assert "<pre" not in row
    blocks = re.findall(r'<div class="gh-pre"[^>]*>(.*?)</div>', row)
    assert len(blocks) == 3, row  # arguments, the edit's diff, the message
    args, diff, message = blocks
    # One line of the block per line of the value: newlines as character references, so
    # a blank line cannot end the HTML block and let the rest be read as Markdown.
    assert "\n" not in row
    assert (
        message
        == "line one&#10;line two &lt;script&gt;alert(1)&lt;/script&gt;&#10;&#10;after a blank line"
    )
    assert "&lt;b&gt;done&lt;/b&gt;" in args and "<b>" not in row and "<script>" not in row
    assert "-" in diff and "&#10;" in diff


def test_decision_log_shows_hidden_characters_escaped() -> None:
    record = DecisionRecord(
        thread_id="t-1",
        question="review",
        tool_call_id="c1",
        tool="write_file",
        decision="reject",
        args={},
        message="ok\x1b[31m red\u202e",
        decided_at=1.0,
    )
    [message] = re.findall(r'<div class="gh-pre"[^>]*>(.*?)</div>', record_html(record, None))
    assert "\x1b" not in message and "\u202e" not in message
    assert "\\x1b" in message or "\\u001b" in message.lower(), message


def _live_calls() -> None:
    """A live view fed the events of a run: a call answered before it started, one
    answered after it started (a journaled answer), one rejected, one that ran."""
    import streamlit as st

    from gatehouse.graph.protocol import events as ev
    from gatehouse.ui.web.live_run import LiveView

    view = LiveView()
    t = "t-1"
    with st.chat_message("assistant"):
        view.feed(
            ev.ToolFinished(
                thread_id=t,
                call_id="a",
                name="write_file",
                status="responded",
                output="The person answered instead: it is done",
            )
        )
        view.feed(
            ev.ToolStarted(thread_id=t, call_id="b", name="run_command", args={"command": "make"})
        )
        view.feed(
            ev.ToolFinished(
                thread_id=t,
                call_id="b",
                name="run_command",
                status="responded",
                output="built by hand",
            )
        )
        view.feed(
            ev.ToolFinished(
                thread_id=t,
                call_id="c",
                name="delete_file",
                status="rejected",
                output="Rejected: no",
            )
        )
        view.feed(ev.ToolStarted(thread_id=t, call_id="d", name="list_files", args={}))
        view.feed(
            ev.ToolFinished(
                thread_id=t,
                call_id="d",
                name="list_files",
                status="ok",
                output="a.md",
                duration_ms=12.0,
            )
        )
        view.flush()


def test_a_responded_call_is_never_drawn_live_as_a_call_that_ran() -> None:
    at = AppTest.from_function(_live_calls, default_timeout=TIMEOUT).run()
    assert not at.exception
    statuses = {s.label: s.state for s in at.get("status") if isinstance(s, Status)}
    # Only the call that ran is a finished status, with its tick.
    assert list(statuses.values()) == ["complete"], statuses
    assert "list\\_files · done" in next(iter(statuses))
    rows = [m.value for m in at.markdown if "gh-tool" in m.value]
    assert len(rows) == 3, rows
    assert "↩ write_file · answered by you" in rows[0] and "it is done" in rows[0]
    assert "✓" not in rows[0]
    # Started, then answered: its block became the same row, with its arguments.
    assert (
        "↩ run_command · answered by you" in rows[1]
        and "make" in rows[1]
        and "built by hand" in rows[1]
    )
    assert "✗ delete_file · rejected" in rows[2]


def test_decision_log_marks_an_answer_as_the_history_does_not_as_run() -> None:
    record = DecisionRecord(
        thread_id="t-1",
        question="review",
        tool_call_id="c1",
        tool="write_file",
        decision="respond",
        args={"path": "a.md"},
        message="done by hand",
        decided_at=1.0,
    )
    summary = re.search(r"<summary>(.*?)</summary>", record_html(record, None))
    assert summary is not None
    assert summary[1].startswith("↩ ") and "write_file · answered instead" in summary[1]
    assert "✓" not in summary[1]

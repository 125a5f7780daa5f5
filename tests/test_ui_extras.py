"""The web app's parts of issues 21, 22 and 24, through Streamlit's AppTest (no browser):
thinking and cut-off replies, compact now, whole offloaded outputs, undo while paused,
the decision log, and auto-approve per thread and per browser session.

Model-server cases use the real ChatOpenAI client against the local server that
speaks the OpenAI wire protocol (tests/support/openai_server.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.app_page import app_page
from tests.support.openai_server import FakeOpenAI
from tests.test_ui_apptest import TIMEOUT, _submit, _thread, app, env, said, send, texts

__all__ = ["env"]  # the fixture, shared with tests/test_ui_apptest.py

THOUGHT = "The user greets me. Keep it short."


@pytest.fixture
def openai_env(env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The app's model is the real ChatOpenAI client against a local server; the test
    sets the server's script (`server.script`)."""
    with FakeOpenAI() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("GATEHOUSE_MODEL", "gpt-test")
        monkeypatch.setenv("GATEHOUSE_MODEL_MAX_RETRIES", "0")
        yield server


def _assistant_markdown(at: AppTest) -> list[str]:
    return [m.value for c in at.get("chat_message") if c.name == "assistant" for m in c.markdown]


def _rows(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if "gh-tool" in m.value]


# -- issue 24: reasoning, cut-off replies ----------------------------------------------------
def test_reasoning_is_shown_collapsed_as_thinking_never_in_the_answer(openai_env: Any) -> None:
    openai_env.script = [{"content": "Hello there.", "reasoning": THOUGHT}]
    at = send(app(), "hi")
    assert not at.exception
    shown = _assistant_markdown(at)
    thinking = [m for m in shown if "gh-think" in m]
    assert len(thinking) == 1
    assert ">thinking</summary>" in thinking[0] and "<details" in thinking[0]  # collapsed, labelled
    assert "The user greets me." in thinking[0]
    assert [m for m in shown if "gh-think" not in m and "gh-copy" not in m] == ["Hello there."]
    [copy] = [m for m in shown if "gh-copy" in m]  # copying the answer copies no thinking
    assert 'data-copy="Hello there."' in copy and "greets" not in copy


def _live_thinking_script() -> None:
    import streamlit as st

    from gatehouse.graph.protocol import events as ev
    from gatehouse.ui.web.live_run import LiveView

    with st.chat_message("assistant"):
        view = LiveView()
        for event in (
            ev.ReasoningDelta(thread_id="t", text="Plan: greet "),
            ev.ReasoningDelta(thread_id="t", text="briefly."),
            ev.TextDelta(thread_id="t", text="Hi!"),
        ):
            view.feed(event)
        view.flush()


def test_live_reasoning_streams_into_a_collapsed_thinking_block() -> None:
    at = AppTest.from_function(_live_thinking_script, default_timeout=TIMEOUT).run()
    assert not at.exception
    [box] = at.expander
    assert box.label == "thinking" and not box.proto.expanded
    assert "Plan: greet briefly." in box.markdown[0].value
    answer = [m.value for m in at.markdown if m.value.startswith("Hi!")]
    assert answer and "Plan" not in answer[0]  # the answer, outside the block


def test_a_cut_off_reply_says_so_and_retry_asks_again(openai_env: Any) -> None:
    calls: list[int] = []

    def reply(request: dict[str, Any]) -> dict[str, Any] | str:
        calls.append(1)
        if len(calls) == 1:
            return {"content": "I wrote the file and everything is ready for you now.", "cut": True}
        return "Here is the whole answer."

    openai_env.script = [reply] * 3
    at = send(app(), "write it")
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert any("cut off before it finished" in w for w in warnings), warnings  # under the reply
    stopped = [i.value for i in at.info] + warnings
    assert any("Retry" in w and "cut off" in w for w in stopped), stopped  # why the run stopped
    at.button(key="retry-cut-off").click().run()
    assert not at.exception
    assert "Here is the whole answer." in _assistant_markdown(at)
    assert not any(b.key == "retry-cut-off" for b in at.button)


# -- issue 22: compact now, offloaded outputs, undo while paused, the decision log -----------
def test_compact_now_says_what_it_did(env: Path) -> None:
    at = send(app(), "list files")
    thread = _thread(at)
    at.button(key=f"compact-{thread}").click().run()
    assert any("Nothing old enough" in i.value for i in at.info)
    for text in ("read notes.md", "list files", "read notes.md"):
        at = send(at, text)
    at.button(key=f"compact-{thread}").click().run()
    assert not at.exception
    done = [s.value for s in at.success]
    assert any(s.startswith("Compacted:") and "Your history stays whole" in s for s in done), done
    assert "hello notes" in texts(at)  # the latest turns are kept as they were
    summary = [
        m.value
        for m in at.markdown
        if "The model&#x27;s view was summarised here" in m.value
        or "The model's view was summarised here" in m.value
    ]
    assert len(summary) == 1 and summary[0].startswith(
        "<details"
    )  # collapsed, not a message of yours
    users = [said(c) for c in at.get("chat_message") if c.name == "user"]
    # Every turn the person wrote is still drawn: compaction changed only the model's view.
    assert users == ["list files", "read notes.md", "list files", "read notes.md"]
    assert not any("summarised" in u for u in users)


def test_an_offloaded_output_loads_whole_only_on_its_own_page(env: Path) -> None:
    lines = [f"line {i:05d} of a long file" for i in range(2_000)]
    (env / "big.txt").write_text("\n".join(lines) + "\n")
    at = send(app(), "read big.txt")
    assert not at.exception
    [row] = _rows(at)
    assert "read_file · done" in row and "characters" in row
    assert "line 01999" not in row  # the chat page carries the head only
    assert "Show whole output" in row and 'target="_blank"' in row
    href = row.split('href="?', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    query = {k: v[0] for k, v in parse_qs(href).items()}
    assert query["view"] == "output" and query["thread"] == _thread(at)
    page = app_page(TIMEOUT)
    for key, value in query.items():
        page.query_params[key] = value
    page.run()
    assert not page.exception
    [whole] = [c.value for c in page.code]
    assert "line 00000" in whole and "line 01999 of a long file" in whole


def test_undo_while_paused_asks_first_then_drops_the_request(env: Path) -> None:
    at = send(app(), "list files")
    at = send(at, "write todo.md: buy milk")
    thread = _thread(at)
    assert "Approval needed" in texts(at)
    at.button(key=f"undo-{thread}").click().run()
    question = [w.value for w in at.warning if "Undo" in w.value]
    assert (
        question
        and "waiting for your decision" in question[0]
        and "drops that request" in question[0]
    )
    assert "Approval needed" in texts(at)  # nothing changed yet
    at.button(key=f"undo-{thread}-yes").click().run()
    assert not at.exception
    assert "Approval needed" not in texts(at) and "write todo.md" not in texts(at)
    assert "list files" in texts(at)
    assert not any("failed" in w.value for w in at.warning)
    assert not at.chat_input(key="prompt").disabled
    assert not (env / "todo.md").exists()


def test_decision_log_per_thread_and_across_threads(env: Path) -> None:
    at = send(app(), "write a.md: one")
    first = _thread(at)
    card = next(b.key for b in at.button if b.key.endswith("-submit")).removesuffix("-submit")
    at.radio(key=f"{card}-0-choice").set_value("edit").run()
    at.text_area(key=f"{card}-0-args").input('{"path": "a.md", "content": "EDITED\\n"}').run()
    _submit(at)
    assert (env / "a.md").read_text() == "EDITED\n"
    other = send(app(), "write b.md: two")
    card = next(b.key for b in other.button if b.key.endswith("-submit")).removesuffix("-submit")
    other.radio(key=f"{card}-0-choice").set_value("reject").run()
    other.text_input(key=f"{card}-0-reason").input("not b").run()
    _submit(other)

    at.button(key=f"audit-{first}").click().run()  # the thread's own log, from its sidebar
    assert not at.exception
    assert at.query_params["view"] in ("audit", ["audit"])
    [log] = _rows(at)
    assert "write_file · approved with edits · by" in log and "via web" in log
    assert "+EDITED" in log and "-one" in log  # the edit's diff: requested → ran
    assert "not b" not in log  # the other thread's decision is not in this thread's log
    at.segmented_control(key="audit-scope").set_value("all").run()
    [log] = _rows(at)
    assert "write_file · rejected" in log and "not b" in log and "approved with edits" in log


# -- issue 21: auto-approve ---------------------------------------------------------------------
def test_auto_approve_for_this_browser_does_not_reach_other_tabs(env: Path) -> None:
    mine = app()
    mine.toggle(key="auto-approve-tab-toggle").set_value(True).run()
    assert any(
        "Auto-approve is on" in w.value and "this browser session" in w.value for w in mine.warning
    )
    mine = send(mine, "write a.md: one")
    assert not mine.exception
    assert "Approval needed" not in texts(mine)
    assert (env / "a.md").read_text() == "one\n"
    [row] = _rows(mine)
    assert "write_file · done" in row and "auto-approved" in row  # visible as such in the history

    theirs = app()  # another person's tab on the same server
    assert not any("Auto-approve is on" in w.value for w in theirs.warning)
    assert theirs.toggle(key="auto-approve-tab-toggle").value is False
    theirs = send(theirs, "write b.md: two")
    assert "Approval needed" in texts(theirs)
    assert not (env / "b.md").exists()


def test_auto_approve_this_thread_holds_for_everyone_and_is_logged(env: Path) -> None:
    at = send(app(), "list files")
    thread = _thread(at)
    at.toggle(key=f"auto-approve-thread-{thread}").set_value(True).run()
    assert any("Auto-approve is on" in w.value and "for this thread" in w.value for w in at.warning)
    other = app_page(TIMEOUT)  # another tab on the thread sees it too
    other.query_params["thread"] = thread
    other.run()
    assert any("for this thread" in w.value for w in other.warning)
    assert other.toggle(key=f"auto-approve-thread-{thread}").value is True
    other = send(other, "write c.md: three")
    assert "Approval needed" not in texts(other)
    assert (env / "c.md").read_text() == "three\n"
    other.toggle(key=f"auto-approve-thread-{thread}").set_value(False).run()
    assert not any("Auto-approve is on" in w.value for w in other.warning)
    other.query_params["view"] = "audit"
    other.run()
    [log] = _rows(other)
    assert "auto-approve switched on for the thread" in log and "auto-approve switched off" in log
    assert "write_file · auto-approved" in log

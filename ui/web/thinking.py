"""What the model did besides answering: its reasoning (collapsed, dimmed), a reply cut
off, why a run stopped."""

from __future__ import annotations

from typing import Any

import streamlit as st

from gatehouse.graph import MessageView, Runner, Session, ThreadInfo
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.protocol.operations import Retry
from gatehouse.ui.web.auto_approve import submit_from_tab
from gatehouse.ui.web.safe_text import markdown
from gatehouse.ui.web.tool_blocks import html_text
from gatehouse.ui.web.unsent import calm

CUT_OFF_NOTE = (
    "This reply was cut off before it finished (the model's stream ended early); "
    "what is shown is all that arrived."
)
_DIM = "opacity: 0.7; font-size: 0.9em; white-space: pre-wrap; margin: 0.2rem 0 0.4rem"


def draw_thinking(message: MessageView) -> None:
    if message.reasoning:
        st.markdown(
            '<details class="gh-think"><summary style="opacity: 0.7">thinking</summary>'
            f'<div style="{_DIM}">{html_text(message.reasoning.strip())}</div></details>',
            unsafe_allow_html=True,
        )


class LiveThinking:
    """A live reply's reasoning: one collapsed expander, its text re-sent on flush."""

    def __init__(self) -> None:
        with st.expander("thinking", expanded=False, icon=":material/psychology:"):
            self._slot: Any = st.empty()
        self.text = ""
        self._dirty = False

    def add(self, event: ev.ReasoningDelta) -> None:
        self.text += event.text
        self._dirty = True

    def flush(self) -> None:
        if self._dirty:
            body = f'<div style="{_DIM}">{html_text(self.text.strip())}</div>'
            self._slot.markdown(body, unsafe_allow_html=True)
            self._dirty = False


def stopped_notes(
    session: Session,
    runner: Runner,
    thread_id: str,
    transcript: list[MessageView],
    info: ThreadInfo | None,
) -> None:
    """Under a stopped run's last turn: why, and Retry when the model's reply was cut off."""
    if info is None or info.status != "stopped":
        return
    last = next((m for m in reversed(transcript) if m.role == "assistant"), None)
    # The agent usually writes the reason into the thread as a notice (drawn with it).
    said = last is not None and last.notice and last.content.strip() == (info.reason or "").strip()
    if info.reason and not said:
        st.warning(markdown(info.reason), icon=":material/info:")
    reply = next((m for m in reversed(transcript) if m.role == "assistant" and not m.notice), None)
    if reply is not None and reply.cut_off:
        st.button(
            ":material/refresh: Retry",
            key="retry-cut-off",
            help="Ask the model again for this reply",
            on_click=calm(retry),
            args=(runner, thread_id),
        )


def retry(runner: Runner, thread_id: str) -> None:
    submit_from_tab(runner, Retry(thread_id), "Not retried")

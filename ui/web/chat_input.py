"""The chat input: drawn by the chat page in its place (ui/web/chat_page.py), and by a
server's first page before the page's code has loaded.

Loading the page's code (LangGraph, LangChain, the Session: ~0.8 s of imports, more on
a busy machine) was most of the time from `uv run gatehouse` to a usable input (issue
36). The input needs none of it: whether it is enabled, and its hint, follow from what
the thread waits for, which the LangGraph-free reader answers (graph/store/reader.py);
a message sent from it is taken by the callback of the next script run, which opens the
Session first if it is not open yet. So a server's first page draws the input first
and loads the rest after; the person can type while the thread is drawn.

Imports Streamlit and graph.protocol's plain types; the reads load graph.store.reader
(no LangGraph, no pydantic: tests/test_web_first_input.py).
"""

from __future__ import annotations

import sys

import streamlit as st

from graph.protocol.pauses import Pause
from graph.protocol.threads import ThreadInfo, thread_id_problem
from ui.web.unsent import GIVEN_BACK, keep_unsent

HINT = "Message Gatehouse (try: list files, or write todo.md: buy milk)"
# The module whose import loads the page's code (LangGraph among it): once it is loaded,
# drawing the input in its place costs nothing.
PAGE_MODULE = "ui.web.page"


def input_state(pending: Pause | None, info: ThreadInfo | None, running: bool) -> tuple[bool, str]:
    """Whether the chat input is disabled, and its hint (the reason when disabled):
    `pending` is what the thread waits for, `info` its ThreadInfo, `running` whether
    a run of this server is active on it."""
    if pending is not None:
        return True, "Answer the approval card above first: the run is paused on it."
    if not running and info is not None and info.status == "interrupted":
        return True, "The last run was interrupted: retry it (above) before sending a new message."
    if running:
        return False, "A run is active: a message sent now is queued and sent when it ends."
    return False, HINT


def draw_chat_input(
    thread_id: str | None, pending: Pause | None, info: ThreadInfo | None, running: bool
) -> None:
    disabled, hint = input_state(pending, info, running)
    if (back := st.session_state.pop(GIVEN_BACK, None)) is not None:
        st.session_state["prompt"] = back
    st.chat_input(hint, disabled=disabled, key="prompt", on_submit=_on_prompt, args=(thread_id,))


def _on_prompt(thread_id: str | None) -> None:
    text = str(st.session_state.get("prompt") or "").strip()
    if not text:
        return
    # The page's code, and the Session: already loaded unless the message was sent from
    # a first page that was still loading (then this waits for it, once).
    from ui.web.chat_page import send_prompt
    from ui.web.state import app_state

    try:
        state = app_state()
    except Exception as exc:  # noqa: BLE001 - the page says why it cannot start; keep the text
        keep_unsent(thread_id, text, exc)
        return
    send_prompt(state.session, state.runner, thread_id, text)


def early_chat_input() -> bool:
    """On a chat page drawn before the page's code has loaded in this server process
    (its first page): draw the chat input now, from the reader. True when drawn: the
    page must not draw it again. False (nothing drawn) on any other page, or when the
    thread cannot be read here: the page then draws the input, or why there is none."""
    if PAGE_MODULE in sys.modules:
        return False
    params = st.query_params
    if params.get("view", "chat") != "chat":
        return False
    thread_id = params.get("thread") or None
    try:
        pending: Pause | None = None
        info: ThreadInfo | None = None
        if thread_id is not None:
            if thread_id_problem(thread_id) is not None:
                return False  # the page draws "Thread not found"
            found = _read(thread_id)
            if found is None:
                return False  # not a thread: the page draws "Thread not found"
            pending, info = found
    except Exception:  # noqa: BLE001 - the page reads it again and shows any error
        return False
    # No run of this server can be active yet: its Runner starts with the page's code.
    draw_chat_input(thread_id, pending, info, running=False)
    return True


def _read(thread_id: str) -> tuple[Pause | None, ThreadInfo | None] | None:
    """What the thread waits for and its ThreadInfo; None when there is no such thread."""
    import graph

    reader = graph.open_reader(graph.load_settings().db)
    try:
        if not reader.exists(thread_id):
            return None
        return reader.pending(thread_id), reader.thread(thread_id)
    finally:
        reader.close()


__all__ = ["HINT", "draw_chat_input", "early_chat_input", "input_state"]

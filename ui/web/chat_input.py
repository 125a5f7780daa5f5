"""The chat input and what it sends, drawn by a server's first page before the page's
code (LangGraph: ~0.8 s of imports, issue 36) has loaded: its state comes from the
LangGraph-free reader, and a message is taken by the next run's callback, which opens
the Session. So this module imports only Streamlit and gatehouse.graph.protocol's plain types."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import streamlit as st

from gatehouse.graph.protocol.pauses import Pause
from gatehouse.graph.protocol.threads import ThreadInfo, thread_id_problem
from gatehouse.ui.web.unsent import GIVEN_BACK, keep_unsent

if TYPE_CHECKING:
    from gatehouse.graph import Runner

# Once this module (the page's code, LangGraph among it) is loaded, the input is drawn in its place.
PAGE_MODULE = "gatehouse.ui.web.page"


def input_state(pending: Pause | None, info: ThreadInfo | None, running: bool) -> tuple[bool, str]:
    """Whether the chat input is disabled, and its hint (the reason when disabled)."""
    if pending is not None:
        return True, "Answer the approval card above first: the run is paused on it."
    if not running and info is not None and info.status == "interrupted":
        return True, "The last run was interrupted: retry it (above) before sending a new message."
    if running:
        return False, "A run is active: a message sent now is queued and sent when it ends."
    return False, "Message Gatehouse (try: list files, or write todo.md: buy milk)"


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
    from gatehouse.ui.web.state import (
        app_state,  # opens the Session unless a first page already did
    )

    try:
        runner = app_state().runner
    except Exception as exc:  # noqa: BLE001 - the page says why it cannot start; keep the text
        keep_unsent(thread_id, text, exc)
        return
    if thread_id is not None:
        st.session_state.pop(f"notice-{thread_id}", None)
    else:
        thread_id = _new_thread(runner)
    try:
        deliver(runner, thread_id, text)
    except Exception as exc:  # noqa: BLE001 - storage: kept, retried by the page (ui/web/unsent.py)
        keep_unsent(thread_id, text, exc)


def _new_thread(runner: Runner) -> str:
    from gatehouse.ui.web.threads import open_thread

    thread_id = runner.session.new_thread_id()
    open_thread(thread_id)
    return thread_id


def deliver(runner: Runner, thread_id: str | None, text: str) -> None:
    """`Runner.send` (no `thread_id`: a new thread), a refusal said; raises only database errors."""
    from gatehouse.graph import DecisionError, RunInProgress
    from gatehouse.ui.web.auto_approve import tab_options

    thread_id = thread_id or _new_thread(runner)
    try:
        runner.send(thread_id, text, tab_options())
    except RunInProgress:
        st.session_state["flash"] = (
            "Not sent yet: a run is active on this thread in another process. "
            "Your message is queued below; send it when that run ends."
        )
    except (DecisionError, ValueError) as exc:
        st.session_state["flash"] = f"Not sent: {exc}. Your message: {text}"


def early_chat_input() -> bool:
    """On a server's first chat page, the chat input from the reader; True when drawn."""
    params = st.query_params
    if PAGE_MODULE in sys.modules or params.get("view", "chat") != "chat":
        return False
    thread_id = params.get("thread") or None
    found: tuple[Pause | None, ThreadInfo | None] | None = (None, None)
    if thread_id is not None:
        try:
            found = _read(thread_id)
        except Exception:  # noqa: BLE001 - the page reads it again and shows any error
            return False
    if found is None:
        return False  # not a thread: the page draws "Thread not found"
    # No run of this server can be active yet: its Runner starts with the page's code.
    draw_chat_input(thread_id, *found, running=False)
    return True


def _read(thread_id: str) -> tuple[Pause | None, ThreadInfo | None] | None:
    if thread_id_problem(thread_id) is not None:
        return None
    from gatehouse import graph

    reader = graph.open_reader(graph.load_settings().db)
    try:
        if not reader.exists(thread_id):
            return None
        return reader.pending(thread_id), reader.thread(thread_id)
    finally:
        reader.close()

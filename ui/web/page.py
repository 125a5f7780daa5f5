"""The pages once a person is signed in: chat, inbox, settings, audit, a call's whole
output, "thread not found". Importing this module loads LangGraph and the Session."""

from __future__ import annotations

import functools
import threading
from typing import Any

import streamlit as st

from gatehouse.graph import Session
from gatehouse.graph.protocol.display import visible
from gatehouse.graph.protocol.threads import shown_id, thread_id_problem
from gatehouse.ui.web.approval import LIVE_EDIT_SCRIPT
from gatehouse.ui.web.audit import audit_page
from gatehouse.ui.web.auto_approve import auto_approve_banner
from gatehouse.ui.web.chat_input import deliver, draw_chat_input
from gatehouse.ui.web.chat_page import chat_page, open_thread_now, stop_dock
from gatehouse.ui.web.desktop_notify import desktop_notifications
from gatehouse.ui.web.inbox import inbox_page
from gatehouse.ui.web.live_run import page_drawn, page_started
from gatehouse.ui.web.loading import page_loaded
from gatehouse.ui.web.safe_text import label, markdown
from gatehouse.ui.web.settings import settings_page
from gatehouse.ui.web.state import app_state
from gatehouse.ui.web.threads import current_thread, current_view, sidebar
from gatehouse.ui.web.unsent import UNSENT, retry_unsent, trouble_page


def draw_page(loading: Any, input_drawn: bool) -> None:
    """The page the URL names (`loading`: the loading slot; `input_drawn`: the input is drawn)."""
    st.html(LIVE_EDIT_SCRIPT, unsafe_allow_javascript=True)
    try:
        state = app_state()
    except Exception as exc:  # noqa: BLE001 - a readable page that retries, never a traceback
        page_loaded(loading)
        trouble_page(exc)
        return
    session, runner = state.session, state.runner
    if thread_not_found_page(session, current_thread()) or whole_output_page(session):
        page_loaded(loading)
        return
    seen = page_started(session, runner, current_thread())
    if session.info.get("demo"):
        st.info(
            "**Demo mode:** the offline demo model is answering (no account, no network). "
            "Set OPENAI_API_KEY or OPENAI_BASE_URL to use a real model.",
            icon=":material/science:",
        )
    auto_approve_banner(session, current_thread())
    if flash := st.session_state.pop("flash", None):
        st.warning(markdown(flash))  # may quote a message or an error: drawn safe
    if st.session_state.get(UNSENT):
        retry_unsent(lambda thread_id, text: deliver(runner, thread_id, text))
    view = current_view()
    now = open_thread_now(session, runner) if view == "chat" else None
    if now is not None and not input_drawn:
        stop_dock(runner, now)
        draw_chat_input(now.thread_id, now.pending, now.info, running=now.active is not None)
    sidebar(session, runner)
    desktop_notifications(session, current_thread())
    page_loaded(loading)  # before the page, which may follow a live run for minutes
    if view == "inbox":
        inbox_page(session, runner)
    elif view == "settings":
        settings_page(session)
    elif view == "audit":
        audit_page(session, current_thread())
    else:
        now = now or open_thread_now(session, runner)
        if chat_page(session, runner, now):
            # The input and sidebar were drawn while the run went on: one more run redraws them.
            st.rerun()
    page_drawn(session, runner, current_thread(), seen)
    _after_first_page()


def whole_output_page(session: Session) -> bool:
    """One tool call's whole output (`?view=output`); False on other pages."""
    params = st.query_params
    if params.get("view") != "output":
        return False
    thread_id, call_id = params.get("thread", ""), params.get("call", "")
    st.header(":material/description: Whole tool output")
    text = session.view(thread_id).tool_output(call_id) if thread_id and call_id else None
    if text is None:
        # Both come from the URL: a link someone sent can put anything there.
        st.error(f"No output for call {label(repr(call_id))} of thread {label(repr(thread_id))}.")
        return True
    st.caption(f"thread {label(thread_id)} · call {label(call_id)} · {len(text):,} characters")
    st.download_button(
        ":material/download: Download",
        text,
        file_name=f"{call_id}.txt",
        mime="text/plain",
        key="output-download",
    )
    st.code(visible(text), language="text")
    return True


def thread_not_found_page(session: Session, thread_id: str | None) -> bool:
    """Draw the page when `thread_id` (from the URL) is not a thread; False otherwise."""
    if thread_id is None:
        return False
    problem = thread_id_problem(thread_id)
    if problem is None and session.view(thread_id).exists:
        return False
    st.header(":material/search_off: Thread not found")
    st.error(
        "There is no thread with this id in this database (deleted, or a link from another "
        "installation). Nothing was created."
        if problem is None
        else f"This link's thread id is not valid: {problem.split('; this one is')[0]}. Nothing was created."
    )
    # The id as text that cannot render as markup or act on the page.
    st.code(shown_id(thread_id, limit=200), language=None, wrap_lines=True)
    st.button(
        ":material/add: Start a new thread",
        key="not-found-new",
        type="primary",
        on_click=st.query_params.clear,
    )
    return True


@functools.cache  # once per process (a rare second start only warms twice)
def _after_first_page() -> None:
    """After the first page: Streamlit's first non-ASCII alert compiles a regex of every
    emoji, ~0.25 s that landed in the first send's page run (issue 36). Not earlier: it
    then delayed the loading state ~1 s on a busy machine (bench.web's first_page)."""
    threading.Thread(target=_warm, name="gatehouse-warm", daemon=True).start()


def _warm() -> None:
    try:
        from streamlit.string_util import extract_leading_emoji

        extract_leading_emoji("… warm")  # `re` keeps the compiled expression
    except Exception:  # noqa: BLE001 - a later Streamlit without it: nothing to warm
        pass

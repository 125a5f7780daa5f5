"""The app's pages once a person is signed in: chat (the open thread, `?thread=...`),
the approvals inbox, settings, the audit log, a tool call's whole output.

Imported by ui/web/app.py after the sign-in check and, on a server's first page, after
the chat input is drawn (ui/web/chat_input.py): importing this module loads LangGraph
and the Session.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui.web.audit import audit_page
from ui.web.auto_approve import auto_approve_banner
from ui.web.chat_input import deliver, draw_chat_input
from ui.web.chat_page import chat_page, open_thread_now, stop_dock
from ui.web.desktop_notify import desktop_notifications
from ui.web.inbox import inbox_page
from ui.web.live_edit import LIVE_EDIT_SCRIPT
from ui.web.live_updates import page_drawn, page_started
from ui.web.loading import page_loaded
from ui.web.long_threads import whole_output_page
from ui.web.not_found import thread_not_found_page
from ui.web.safe_text import markdown
from ui.web.settings import settings_page
from ui.web.state import app_state
from ui.web.threads import current_thread, current_view, sidebar
from ui.web.unsent import trouble_page, unsent_banner
from ui.web.warm import after_first_page


def draw_page(loading: Any, input_drawn: bool) -> None:
    """Draw the page the URL names; `loading` is the loading state's slot, cleared once
    the page has content; `input_drawn`: the chat input is drawn already."""
    st.html(LIVE_EDIT_SCRIPT, unsafe_allow_javascript=True)
    try:
        state = app_state()
    except Exception as exc:  # noqa: BLE001 - a readable page that retries, never a traceback
        page_loaded(loading)
        trouble_page(exc)
        return
    # The one Runner of the server: each run this page starts carries this browser
    # session's options (ui/web/auto_approve.py: tab_options).
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
    unsent_banner(lambda thread_id, text: deliver(runner, thread_id, text))
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
            # The page followed a run to its end: the chat input and the sidebar were
            # drawn while it ran. One more (windowed, cheap) run draws them as they are.
            st.rerun()
    page_drawn(session, runner, current_thread(), seen)
    after_first_page()  # first-use costs, off the page's path (ui/web/warm.py)


__all__ = ["draw_page"]

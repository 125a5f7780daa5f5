"""Gatehouse in the browser: `gatehouse ui` (serves this script behind the sign-in guard of
ui/web/launch.py; flags in ui/web/serve.py).

Pages: chat (the open thread, `?thread=...`), the approvals inbox and settings.
Runs execute on the process-wide Runner (ui/web/state.py); this script only draws
the thread and attaches to a live run, so a click or a reload never touches a run.
"""

from __future__ import annotations

import sys
from pathlib import Path

# `streamlit run ui/web/app.py` puts ui/web/ on sys.path, not the project root.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import streamlit as st  # noqa: E402

from ui.web.loading import loading_state, page_loaded  # noqa: E402

# A local icon: a `:material/...:` page icon is fetched from fonts.gstatic.com.
ICON = str(Path(__file__).resolve().parent / "assets" / "icon.png")
# Drawn before the imports below (LangGraph among them: seconds on a cold, busy
# machine), so a first open shows "Loading Gatehouse…" rather than a blank page.
st.set_page_config(page_title="Gatehouse", page_icon=ICON, layout="wide")
LOADING = loading_state()

from graph import describe_error  # noqa: E402
from ui.web.audit import audit_page  # noqa: E402
from ui.web.auto_approve import auto_approve_banner  # noqa: E402
from ui.web.chat_page import chat_input_box, chat_page, open_thread_now  # noqa: E402
from ui.web.copy import COPY_SCRIPT, COPY_STYLE  # noqa: E402
from ui.web.desktop_notify import desktop_notifications  # noqa: E402
from ui.web.identity import signed_in  # noqa: E402
from ui.web.inbox import inbox_page  # noqa: E402
from ui.web.live_edit import LIVE_EDIT_SCRIPT  # noqa: E402
from ui.web.live_updates import page_drawn, page_started  # noqa: E402
from ui.web.long_threads import whole_output_page  # noqa: E402
from ui.web.not_found import thread_not_found_page  # noqa: E402
from ui.web.safe_text import markdown  # noqa: E402
from ui.web.serve import ACCENT  # noqa: E402
from ui.web.settings import settings_page  # noqa: E402
from ui.web.state import app_state  # noqa: E402
from ui.web.threads import current_thread, current_view, sidebar  # noqa: E402
from ui.web.warm import after_first_page  # noqa: E402

# Approve in the accent, never Streamlit's default red (also when served by a bare
# `streamlit run` without ui/web/serve.py's theme flag); Reject looks destructive.
_BUTTON_COLORS = f"""
button[data-testid="stBaseButton-primary"] {{ background-color: {ACCENT}; border-color: {ACCENT}; color: #fff; }}
button[data-testid="stBaseButton-primary"]:hover {{ filter: brightness(0.9); color: #fff; }}
[class*="st-key-inbox-reject-"] button {{ color: #b3261e; border-color: #b3261e80; }}
"""
# Streamlit's own "Running… Stop" (it stops the page script, not the run: the live
# view froze while the run went on); Gatehouse's Stop button stops the run.
STYLE = (
    """<style>
[data-testid="stStatusWidget"] { visibility: hidden; }
details.gh-tool { margin: 0.1rem 0; }
details.gh-tool summary { cursor: pointer; }
details.gh-tool .gh-pre { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 20rem; overflow: auto;
  margin: 0.2rem 0 0.4rem; padding: 0.4rem 0.6rem; border-radius: 0.4rem; background: rgba(151, 166, 195, 0.12);
  font-family: "Source Code Pro", ui-monospace, monospace; font-size: 0.85rem; line-height: 1.45; }
"""
    + _BUTTON_COLORS
    + COPY_STYLE
    + "</style>"
)


def main() -> None:
    st.set_page_config(page_title="Gatehouse", page_icon=ICON, layout="wide")
    st.html(STYLE)
    st.html(COPY_SCRIPT, unsafe_allow_javascript=True)
    if signed_in() is None:
        page_loaded(LOADING)
        return
    st.html(LIVE_EDIT_SCRIPT, unsafe_allow_javascript=True)
    try:
        state = app_state()
    except Exception as exc:  # noqa: BLE001 - a readable page, never a traceback
        page_loaded(LOADING)
        st.error(f"Gatehouse cannot start: {describe_error(exc)[0]}")
        st.button(":material/refresh: Retry", key="retry-start")
        return
    # The one Runner of the server: each run this page starts carries this browser
    # session's options (ui/web/auto_approve.py: tab_options).
    session, runner = state.session, state.runner
    if thread_not_found_page(session, current_thread()) or whole_output_page(session):
        page_loaded(LOADING)
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
    view = current_view()
    now = open_thread_now(session, runner) if view == "chat" else None
    if now is not None:
        chat_input_box(session, runner, now)
    sidebar(session, runner)
    desktop_notifications(session, current_thread())
    page_loaded(LOADING)  # before the page, which may follow a live run for minutes
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


def run() -> None:
    try:
        main()
    except Exception as exc:  # noqa: BLE001 - Streamlit's own control flow is BaseException
        message, _kind, _retryable = describe_error(exc)
        st.error(f"Something went wrong: {markdown(message)}")
        st.button(":material/refresh: Retry", key="retry-page")


run()

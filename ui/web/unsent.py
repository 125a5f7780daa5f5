"""When the database cannot be used: what a person typed is kept, the page says why in a
sentence and recovers by itself. Imports only Streamlit (ui/web/chat_input.py uses it
before LangGraph is loaded)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec

import streamlit as st

RETRY_S = 2.0
GIVEN_BACK = "gh-prompt-back"  # session state: text the next chat input starts with
UNSENT = "gh-unsent"  # session state: [(thread_id, text), ...], oldest first
REASON = "gh-unsent-reason"

P = ParamSpec("P")


def reason_of(exc: BaseException) -> str:
    """What went wrong, in a sentence a person reads (never a traceback)."""
    from gatehouse.graph import describe_error

    message, kind, _retryable = describe_error(exc)
    if kind == "storage":
        return (
            "The database cannot be used right now (another program may hold it "
            f"locked, or its server is unreachable). {message}"
        )
    return message


def keep_unsent(thread_id: str | None, text: str, exc: BaseException) -> None:
    """Keep `text` for `thread_id` (None: a new thread) in this browser session."""
    st.session_state.setdefault(UNSENT, []).append((thread_id, text))
    st.session_state[REASON] = reason_of(exc)


def calm(callback: Callable[P, Any]) -> Callable[P, None]:
    """`callback`, with an error it raises shown as a message on the page."""

    @functools.wraps(callback)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            callback(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - a message, never a traceback
            st.session_state["flash"] = f"Not done: {reason_of(exc)}"

    return guarded


def _draw_kept(waiting: list[tuple[str | None, str]], said: str) -> None:
    from gatehouse.ui.web.tool_blocks import said_html  # not at load: see the module docstring

    for _thread_id, text in waiting:
        with st.chat_message("user"):
            st.markdown(said_html(text), unsafe_allow_html=True)
            st.caption(f":material/schedule: {said}")


@st.fragment(run_every=RETRY_S)
def retry_unsent(send: Callable[[str | None, str], None]) -> None:
    """The messages kept in this browser session, retried every RETRY_S s with `send`."""
    waiting = st.session_state.get(UNSENT, [])
    before = len(waiting)
    while waiting:
        thread_id, text = waiting[0]
        try:
            send(thread_id, text)
        except Exception as exc:  # noqa: BLE001 - kept, said, tried again
            st.session_state[REASON] = reason_of(exc)
            break
        waiting.pop(0)
    if len(waiting) < before:
        st.rerun(scope="app")
    if not waiting:
        return
    with st.container(key="gh-unsent"):
        st.warning(
            f"{st.session_state.get(REASON, '')}\n\n"
            f"Your message{'s are' if len(waiting) > 1 else ' is'} kept here and sent as soon "
            f"as the database is back (trying every {RETRY_S:g} s).",
            icon=":material/hourglass_top:",
        )
        _draw_kept(waiting, "not sent yet: waiting for the database")


def trouble_page(exc: BaseException) -> None:
    """In place of a failed page: what went wrong, what was kept, and a retry."""
    st.error(f"Gatehouse cannot show this page right now. {reason_of(exc)}")
    _draw_kept(st.session_state.get(UNSENT, []), "kept: sent as soon as the page works again")
    st.caption(f"Trying again every {RETRY_S:g} s…")
    st.button(":material/refresh: Retry now", key="retry-page")
    _retry_soon()


@st.fragment(run_every=RETRY_S)
def _retry_soon() -> None:
    # The fragment's first run is the page's own; each later one retries the page.
    if st.session_state.get("gh-retry-ticked"):
        st.session_state["gh-retry-ticked"] = False
        st.rerun(scope="app")
    st.session_state["gh-retry-ticked"] = True

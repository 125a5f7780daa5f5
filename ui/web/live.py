"""Live updates without a click: a page reflects what happened elsewhere (another
tab, the terminal, another process) within about POLL_S seconds.

A tiny fragment reruns on a timer (Streamlit's `run_every`: only that fragment runs,
a few index reads, no elements drawn) and compares what the page was drawn from
with the thread index now: the open thread's status, the threads waiting for a
decision and the newest thread. Only when they differ does it rerun the page.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from graph import Runner, Session

POLL_S = 1.5


def signature(session: Session, runner: Runner, thread_id: str | None) -> tuple[Any, ...]:
    """What the page shows that another tab or process can change, read cheaply."""
    info = session.thread(thread_id) if thread_id else None
    waiting = tuple((t.thread_id, t.status, t.pending_since) for t in session.awaiting_approval())
    newest = session.threads(limit=1)
    return (
        None if info is None else (info.status, info.updated_at, info.title),
        waiting,
        (newest[0].thread_id, newest[0].updated_at, newest[0].title) if newest else None,
        thread_id is not None and runner.active(thread_id) is not None,
    )


_IN_PAGE_RUN = "live-in-page-run"


@st.fragment(run_every=POLL_S)
def _watch(session: Session, runner: Runner, thread_id: str | None, seen: tuple[Any, ...]) -> None:
    # Called by the page run itself: nothing to compare yet (and a rerun from here
    # would cut that run short). Only the timer's runs compare.
    if st.session_state.pop(_IN_PAGE_RUN, False):
        return
    if signature(session, runner, thread_id) != seen:
        st.rerun()


def live_updates(session: Session, runner: Runner, thread_id: str | None, seen: tuple[Any, ...]) -> None:
    """Watch for changes against `seen` (read when the page began to draw)."""
    st.session_state[_IN_PAGE_RUN] = True
    _watch(session, runner, thread_id, seen)

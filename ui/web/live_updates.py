"""Live updates: a page shows what changed elsewhere within about a second. One watcher
thread per server reads the thread index every `WATCH_S` s and reruns only the pages
whose view is out of date, as Streamlit reruns a page whose source changed; an idle tab
costs nothing. No public API does this: if Streamlit's internals differ, each page falls
back to a timer fragment."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import streamlit as st

from graph import Runner, Session
from ui.web.approval import decided_elsewhere

WATCH_S = 0.5
POLL_S = 1.5
_LOG = logging.getLogger(__name__)


def signature(session: Session, runner: Runner, thread_id: str | None) -> tuple[Any, ...]:
    """What the page shows that another tab or process can change, read cheaply."""
    info = session.view(thread_id).info if thread_id else None
    waiting = tuple(
        (t.thread_id, t.status, t.pending_since) for t in session.thread_list().awaiting_approval
    )
    newest = session.thread_list(limit=1).threads
    return (
        None if info is None else (info.status, info.updated_at, info.title),
        waiting,
        (newest[0].thread_id, newest[0].updated_at, newest[0].title) if newest else None,
        thread_id is not None and runner.active(thread_id) is not None,
    )


def _session_manager() -> Any | None:
    try:
        from streamlit.runtime import Runtime

        if not Runtime.exists():
            return None
        manager = Runtime.instance()._session_mgr  # noqa: SLF001 - see the module docstring
        return manager if hasattr(manager, "get_active_session_info") else None
    except Exception:  # noqa: BLE001 - any surprise means: use the timer fragment
        return None


class Watcher:
    def __init__(self, session: Session, runner: Runner) -> None:
        self.session, self.runner = session, runner
        self._lock = threading.Lock()
        # session id -> (thread id, signature drawn); None while the page is drawing,
        # _REQUESTED while a rerun the watcher asked for has not begun drawing.
        self._pages: dict[str, tuple[str | None, tuple[Any, ...]] | object | None] = {}
        threading.Thread(target=self._loop, name="gatehouse-live-watcher", daemon=True).start()

    def mark(self, page: str, drawn: tuple[str | None, tuple[Any, ...]] | None) -> None:
        """`drawn`: (thread id, signature) once the page is drawn; None while it draws."""
        with self._lock:
            self._pages[page] = drawn

    def _loop(self) -> None:
        while True:
            time.sleep(WATCH_S)
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - the watcher must outlive one bad read
                _LOG.exception("live-update watcher")

    def tick(self) -> None:
        with self._lock:
            pages = {k: v for k, v in self._pages.items() if isinstance(v, tuple)}
        if not pages or (manager := _session_manager()) is None:
            return
        now: dict[str | None, tuple[Any, ...]] = {}
        for page, (thread_id, seen) in pages.items():
            info = manager.get_active_session_info(page)
            if info is None:
                with self._lock:
                    self._pages.pop(page, None)
                continue
            if thread_id not in now:
                now[thread_id] = signature(self.session, self.runner, thread_id)
            if now[thread_id] == seen:
                continue
            if getattr(info.session, "_scriptrunner", None) is not None:
                continue  # a run of the page has begun (a click): it will register again
            with self._lock:
                if self._pages.get(page) != (thread_id, seen):
                    continue  # the page is drawing again already
                self._pages[page] = _REQUESTED
            self._rerun_on_loop(info.session, page, (thread_id, seen))

    def _rerun_on_loop(self, app_session: Any, page: str, drawn: tuple[Any, ...]) -> None:
        """Rerun the page from Streamlit's event loop, which handles clicks: a click's run
        begun after the check above is seen there (from here, this rerun replaced it and
        the press was lost)."""

        def rerun() -> None:
            if getattr(app_session, "_scriptrunner", None) is not None:
                # A run (a click) has begun since: watched as it was until it registers.
                with self._lock:
                    if self._pages.get(page) is _REQUESTED:
                        self._pages[page] = drawn
                return
            _rerun(app_session)

        call_soon = getattr(app_session, "_call_soon_on_event_loop", None)
        if call_soon is None:  # not the Streamlit this was written against
            _rerun(app_session)
        else:
            call_soon(rerun)


# A page the watcher asked to rerun: not watched until that run draws it again.
_REQUESTED = object()


def _rerun(app_session: Any) -> None:
    """Rerun the whole page as its last run left it (no button pressed), as Streamlit
    reruns a page whose source changed."""
    from streamlit.proto.ClientState_pb2 import ClientState

    state = ClientState()
    state.CopyFrom(app_session._client_state)  # noqa: SLF001 - see the module docstring
    state.fragment_id = ""  # the page, not the fragment that ran last
    state.is_auto_rerun = False
    app_session.request_rerun(state)


_WATCHERS: dict[int, Watcher] = {}
_WATCHERS_LOCK = threading.Lock()


def _watcher(session: Session, runner: Runner) -> Watcher:
    with _WATCHERS_LOCK:
        watcher = _WATCHERS.get(id(runner))
        if watcher is None:
            watcher = _WATCHERS[id(runner)] = Watcher(session, runner)
        return watcher


def _page_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return None if ctx is None else ctx.session_id


def page_started(session: Session, runner: Runner, thread_id: str | None) -> tuple[Any, ...]:
    """At a page run's start: what it draws from (the watcher leaves a drawing page alone)."""
    if (page := _page_id()) is not None:
        if _session_manager() is not None:
            _watcher(session, runner).mark(page, None)
        decided_elsewhere(session)  # a card that vanishes says who decided it
    return signature(session, runner, thread_id)


_IN_PAGE_RUN = "live-in-page-run"


@st.fragment(run_every=POLL_S)
def _poll(session: Session, runner: Runner, thread_id: str | None, seen: tuple[Any, ...]) -> None:
    # The page run's own call: nothing to compare yet; only the timer's runs compare.
    if st.session_state.pop(_IN_PAGE_RUN, False):
        return
    if signature(session, runner, thread_id) != seen:
        st.rerun()


def page_drawn(
    session: Session, runner: Runner, thread_id: str | None, seen: tuple[Any, ...]
) -> None:
    """At a page run's end: watch for changes against `seen` (read at its start)."""
    page = _page_id()
    if page is not None and _session_manager() is not None:
        _watcher(session, runner).mark(page, (thread_id, seen))
        return
    if page is not None and st.runtime.exists():
        st.session_state[_IN_PAGE_RUN] = True
        _poll(session, runner, thread_id, seen)

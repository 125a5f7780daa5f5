"""What is live on a page: a running run from the Runner's buffer once the browser is ready
(`live_ready`; at its end the caller redraws from the checkpoints in the same script run),
and what changed elsewhere (`page_started`, `page_drawn`)."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from typing import Any, assert_never

import streamlit as st

from gatehouse.graph import Run, Runner, Session
from gatehouse.graph.protocol import events as ev
from gatehouse.ui.web.approval import decided_elsewhere
from gatehouse.ui.web.safe_text import markdown
from gatehouse.ui.web.thinking import LiveThinking
from gatehouse.ui.web.tool_blocks import NOT_RUN_STATUSES, ToolBlock, not_run_row

# Every update makes the browser draw the page again: text at 10 frames a second, a
# command's output twice a second, the elapsed time once.
FLUSH_EVERY = 0.1
OUTPUT_EVERY = 0.5
HEARTBEAT_EVERY = 1.0


def durations(runner: Runner, thread_id: str) -> dict[str, float]:
    """Tool durations known from this process's runs (checkpoints do not keep them)."""
    events = run.events if (run := runner.latest(thread_id)) else []
    return {e.call_id: e.duration_ms for e in events if isinstance(e, ev.ToolFinished)}


class LiveView:
    def __init__(self) -> None:
        self.text = ""
        self.slot: Any = None
        self.text_dirty = False
        self.message_id: str | None = None  # the reply whose text the slot shows
        # Replies already drawn, by id: an after_llm hook may still replace one.
        self.drawn: dict[str, Any] = {}
        self.tools: dict[str, ToolBlock] = {}
        self.thinking: LiveThinking | None = None

    def feed(self, event: ev.Event) -> None:
        match event:
            case ev.TextDelta():
                if self.slot is None:
                    self.slot = st.empty()
                self.message_id = event.message_id or self.message_id
                self.text += event.text
                self.text_dirty = True
            case ev.MessageReplaced() | ev.ReplyRejected() | ev.ModelRetried():
                self._replace(event)
            case ev.ReasoningDelta():
                self.thinking = self.thinking or LiveThinking()
                self.thinking.add(event)
            case ev.ToolStarted():
                self._close_text()
                self.thinking = None  # the next reply's reasoning gets its own block
                name = (
                    f"{event.name} · auto-approved"
                    if event.auto_approved
                    else f"{event.name} · always allowed ({event.grant})"
                    if event.grant
                    else event.name
                )
                self.tools[event.call_id] = ToolBlock(name, event.args, event.name)
            case ev.ToolOutput():
                if (block := self.tools.get(event.call_id)) is not None:
                    block.add_output(event.text)
            case ev.ToolFinished():
                block = self.tools.get(event.call_id)
                if block is None and event.status in NOT_RUN_STATUSES:
                    not_run_row(event.name, event.status, event.output)  # it never started
                else:
                    (block or ToolBlock(event.name, {})).finish(
                        event.status, event.output, event.duration_ms
                    )
            case ev.Notice():
                self._close_text()
                st.info(markdown(event.text))
            case ev.ErrorEvent():
                self._close_text()
                st.error(markdown(event.message))
            case ev.ApprovalRequired():
                self._close_text()
                st.warning("Waiting for your decision…")
            case (
                ev.RunStarted()
                | ev.PartStarted()
                | ev.AssistantMessage()
                | ev.TurnComplete()
                | ev.Usage()
                | ev.Compacted()
                | ev.RunFinished()
                | ev.Done()
            ):
                pass  # the page redraws these from the checkpoints when the run ends
            case _:
                assert_never(event)

    def flush(self, *, output: bool = True) -> None:
        """Send the text and reasoning that arrived, and unless `output` is False the output."""
        if self.thinking is not None:
            self.thinking.flush()
        if self.text_dirty and self.slot is not None:
            self.slot.markdown(markdown(self.text) + " ▌")
            self.text_dirty = False
        if output:
            for block in self.tools.values():
                block.flush()

    def _replace(self, event: ev.MessageReplaced | ev.ReplyRejected | ev.ModelRetried) -> None:
        """Show a reply's new text (an after_llm hook's redaction), or drop it (sent back,
        retried): what streamed is not what the history keeps."""
        text = event.text if isinstance(event, ev.MessageReplaced) and not event.removed else ""
        if (
            event.message_id is not None
            and event.message_id == self.message_id
            and self.slot is not None
        ):
            self.text, self.text_dirty = text, True
            if not text:  # the next text starts afresh
                self.slot.empty()
                self.slot, self.text_dirty = None, False
        elif (
            event.message_id is not None and (slot := self.drawn.get(event.message_id)) is not None
        ):
            if text:
                slot.markdown(text)
            else:
                slot.empty()

    def _close_text(self) -> None:
        if self.slot is not None:
            self.slot.markdown(markdown(self.text))
            if self.message_id is not None:
                self.drawn[self.message_id] = self.slot
        self.slot, self.text, self.text_dirty, self.message_id = None, "", False, None


def follow(run: Run) -> None:
    with st.chat_message("assistant"):
        view = LiveView()
        beat = st.empty()
        cursor = 0
        last_flush = last_output = last_beat = 0.0
        while True:
            new = run.wait(cursor, timeout=FLUSH_EVERY)
            cursor += len(new)
            for event in new:
                view.feed(event)
            now = time.monotonic()
            if now - last_flush >= FLUSH_EVERY:
                output = now - last_output >= OUTPUT_EVERY
                view.flush(output=output)
                last_flush = now
                last_output = now if output else last_output
            if now - last_beat >= HEARTBEAT_EVERY:
                # Also gives Streamlit a point to stop this script run when the person clicks.
                beat.caption(f"running · {time.time() - run.started_at:.0f} s")
                last_beat = now
            if run.done and cursor >= len(run.events):
                break
        view.flush()
        beat.empty()


def last_error(runner: Runner, thread_id: str) -> str | None:
    events = run.events if (run := runner.latest(thread_id)) else []
    return next((e.message for e in reversed(events) if isinstance(e, ev.ErrorEvent)), None)


# A live run is followed only once the browser has drawn the page's widgets (React draws a
# just-loaded widget when nothing more urgent waits: a busy browser drew no Stop or input
# until the run ended). A session's first page during a run shows it as it stands, with hidden
# samples of the live widgets and a script pressing a hidden button once none waits: it follows.
READY = "gh-live-ready"  # session state: this browser has drawn the live view's widgets
BUTTON_KEY = "gh-live-go"
GIVE_UP_MS = 15_000  # a widget whose code never loads must not hold the live view back
SETTLE_MS = 2_000  # after a press, time for its run to set READY before another drawing presses

STYLE = "<style>.st-key-gh-live-samples { display: none; }</style>"

# Presses the hidden button once no widget waits for its code and no script runs: the
# newest drawing's script only, once (a new run stops the one going, dropping the click
# it carried, so an extra press could cost the person's). A run the server just began
# is not visible yet: SETTLE_MS after the last press. A drawing whose button is gone stops.
SCRIPT = (
    "<script>(() => {"
    "const id = 'DRAWING';"
    "const started = Date.now();"
    "const pressed = (window.ghLiveGoPressed ??= new Set());"
    "if (pressed.has(id)) return;"
    "window.ghLiveGoNewest = id;"
    "const check = () => {"
    "  if (window.ghLiveGoNewest !== id || pressed.has(id)) return;"
    "  const app = document.querySelector('[data-testid=\"stApp\"]');"
    "  const idle = !app || app.getAttribute('data-test-script-state') === 'notRunning';"
    f"  const box = document.querySelector('.st-key-{BUTTON_KEY}');"
    "  if (idle && !box) return;"
    "  const go = box && box.querySelector('button');"
    "  const waiting = document.querySelector('[data-testid=\"stSkeleton\"]');"
    f"  const settling = Date.now() - (window.ghLiveGoAt ?? 0) < {SETTLE_MS};"
    f"  if (go && idle && !settling && (!waiting || Date.now() - started > {GIVE_UP_MS})) {{"
    "    pressed.add(id); window.ghLiveGoAt = Date.now(); go.click(); return;"
    "  }"
    "  setTimeout(check, 100);"
    "};"
    "check();"
    "})();</script>"
)


def live_ready() -> bool:
    """True when this run may follow a live run; else draws the samples and a script to ask."""
    if st.session_state.get(READY):
        return True
    with st.container(key="gh-live-samples"):
        st.markdown(STYLE, unsafe_allow_html=True)
        st.code("live output", language="text")
        st.button(
            "follow the run",
            key=BUTTON_KEY,
            on_click=st.session_state.__setitem__,
            args=(READY, True),
        )
    st.html(SCRIPT.replace("DRAWING", secrets.token_hex(8), 1), unsafe_allow_javascript=True)
    return False


# Live updates: one watcher thread per server reads the thread index every `WATCH_S` s and
# reruns the pages whose view is out of date (as Streamlit does when its source changed); an
# idle tab costs nothing. No public API does this: if Streamlit's internals differ, each page
# falls back to a timer fragment.
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
        manager = Runtime.instance()._session_mgr  # noqa: SLF001 - see Live updates above
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
        """Rerun from Streamlit's event loop, which handles clicks: a click's run begun after the
        check above is seen there (from this thread the rerun replaced it, losing the press)."""

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
    """Rerun the page as its last run left it (no button pressed), as for a changed source."""
    from streamlit.proto.ClientState_pb2 import ClientState

    state = ClientState()
    state.CopyFrom(app_session._client_state)  # noqa: SLF001 - see Live updates above
    state.fragment_id = ""  # the page, not the fragment that ran last
    state.is_auto_rerun = False
    app_session.request_rerun(state)


_WATCHERS: dict[int, Watcher] = {}
_WATCHERS_LOCK = threading.Lock()


def _watcher(session: Session, runner: Runner) -> Watcher:
    with _WATCHERS_LOCK:
        if (watcher := _WATCHERS.get(id(runner))) is None:
            watcher = _WATCHERS[id(runner)] = Watcher(session, runner)
        return watcher


def _page_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    return None if (ctx := get_script_run_ctx()) is None else ctx.session_id


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

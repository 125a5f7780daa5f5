"""Process-wide state of the Streamlit app: one Session and one Runner per server.

Streamlit re-executes the script on every click, so anything that must outlive a
script run (open database, background runs) lives in `st.cache_resource`, keyed by
the settings that select it. Runs are started only through `WebRunner`, which also
remembers what the thread looked like before each run so a page that attaches to a
live run can draw the history without drawing the run's own messages twice.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from graph.app import open_session
from graph.config import load_settings
from graph.runner import RunHandle, Runner
from graph.session import Session


@dataclass(frozen=True)
class RunStart:
    """What the page needs to draw a live run over the persisted history."""

    base_messages: int  # messages in the thread before the run began
    user_text: str | None  # the message that started it (not yet persisted at start)


class WebRunner(Runner):
    """The graph Runner plus where each run started in the thread's messages."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.starts: dict[str, RunStart] = {}
        self._meta_lock = threading.Lock()

    def send(self, thread_id: str | None, text: str) -> RunHandle:
        thread_id = thread_id or self.session.new_thread_id()
        return self._tracked(thread_id, text, lambda: super(WebRunner, self).send(thread_id, text))

    def resume(self, thread_id: str, answer: Any) -> RunHandle:
        return self._tracked(thread_id, None, lambda: super(WebRunner, self).resume(thread_id, answer))

    def retry(self, thread_id: str) -> RunHandle:
        return self._tracked(thread_id, None, lambda: super(WebRunner, self).retry(thread_id))

    def fork(self, thread_id: str, message_index: int, text: str) -> RunHandle:
        # fork rewinds before the run starts: the base is the edited message's position.
        return self._tracked(
            thread_id, text, lambda: super(WebRunner, self).fork(thread_id, message_index, text), base=message_index
        )

    def _tracked(
        self, thread_id: str, text: str | None, start: Callable[[], RunHandle], base: int | None = None
    ) -> RunHandle:
        with self._meta_lock:
            before = self.starts.get(thread_id)
            count = len(self.session.messages(thread_id)) if base is None else base
            self.starts[thread_id] = RunStart(count, text)
            try:
                return start()
            except BaseException:
                if before is None:
                    self.starts.pop(thread_id, None)
                else:
                    self.starts[thread_id] = before
                raise


@dataclass
class AppState:
    session: Session
    runner: WebRunner


@st.cache_resource(show_spinner=False)
def _open(db: str, workspace: str, model_factory: str) -> AppState:
    session = open_session(load_settings())
    return AppState(session=session, runner=WebRunner(session))


def app_state() -> AppState:
    """The Session and Runner of this server process (opened on first use)."""
    env = os.environ
    return _open(env.get("GATEHOUSE_DB", ""), env.get("GATEHOUSE_WORKSPACE", ""), env.get("GATEHOUSE_MODEL_FACTORY", ""))

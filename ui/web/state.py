"""One Session and one Runner per server process, in `st.cache_resource`."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import streamlit as st

from gatehouse.graph import MessageView, Runner, Session, load_settings, open_session


@dataclass
class AppState:
    session: Session
    runner: Runner


@st.cache_resource(show_spinner=False)
def _open(db: str, workspace: str, model_factory: str) -> AppState:
    session = open_session(load_settings())
    return AppState(session=session, runner=Runner(session))


def app_state() -> AppState:
    """The Session and Runner of this server process (opened on first use)."""
    env = os.environ
    return _open(
        env.get("GATEHOUSE_DB", ""),
        env.get("GATEHOUSE_WORKSPACE", ""),
        env.get("GATEHOUSE_MODEL_FACTORY", ""),
    )


TRANSCRIPTS = 8  # threads whose transcripts are kept
_Cache = OrderedDict[str, tuple[tuple[Any, ...], list[MessageView]]]


@st.cache_resource(show_spinner=False)
def _transcripts() -> tuple[threading.Lock, _Cache]:
    return threading.Lock(), OrderedDict()


def transcript(session: Session, thread_id: str) -> list[MessageView]:
    """The thread's transcript, reused while its messages are unchanged: converting 10,000
    messages takes ~0.2 s, reading them well under 1 ms."""
    lock, cache = _transcripts()
    view = session.view(thread_id)
    key = _fingerprint(view.messages)
    with lock:
        hit = cache.get(thread_id)
        if hit is not None and hit[0] == key:
            cache.move_to_end(thread_id)
            return hit[1]
    views = view.transcript
    with lock:
        cache[thread_id] = (key, views)
        cache.move_to_end(thread_id)
        while len(cache) > TRANSCRIPTS:
            cache.popitem(last=False)
    return views


def _fingerprint(messages: list[Any]) -> tuple[Any, ...]:
    # Runs append; undo, fork and compaction change the count or the tail; a merge rewrites
    # the last message; the first catches a compaction that kept the count.
    def one(m: Any) -> tuple[Any, ...]:
        return (
            m.id,
            m.type,
            hash(repr(m.content)),
            hash(repr(getattr(m, "additional_kwargs", None))),
            len(getattr(m, "tool_calls", None) or ()),
        )

    return (len(messages), *(one(m) for m in messages[:1]), *(one(m) for m in messages[-3:]))

"""The page's imports done while the browser is still loading: a faster first page.

`gatehouse ui` starts the server (ui/web/launch.py), then the browser fetches
Streamlit's page and code, then the first script run imports the rest of Gatehouse
(LangGraph and LangChain among it: ~1.8 s of CPU, seconds on a busy machine). The
server sits idle while the browser loads; `start()` (called by launch.py at server
start) does those imports on a thread meanwhile, so the first run finds them done.

app.py calls `wait()` after drawing its loading state and before its own imports, so
a script run never imports the same modules at the same time as the thread (two
threads importing modules that import each other can see a half-initialised module).
Imports only: nothing is opened, no thread is touched. Under a bare `streamlit run
ui/web/app.py` nothing was started and `wait()` returns at once.
"""

from __future__ import annotations

import importlib
import threading

# What app.py imports after its loading state (the costly part of a first page).
MODULES = (
    "graph",
    "ui.web.audit",
    "ui.web.auto_approve",
    "ui.web.chat_page",
    "ui.web.copy",
    "ui.web.desktop_notify",
    "ui.web.identity",
    "ui.web.inbox",
    "ui.web.live_edit",
    "ui.web.live_updates",
    "ui.web.long_threads",
    "ui.web.not_found",
    "ui.web.safe_text",
    "ui.web.serve",
    "ui.web.settings",
    "ui.web.state",
    "ui.web.threads",
)

_lock = threading.Lock()
_thread: threading.Thread | None = None


def _import_all() -> None:
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - the page's own import shows the error
            continue
    # Streamlit's alerts (st.info, st.warning ...) look for a leading emoji in any text
    # that is not ASCII ("running…"): the first one loads its emoji catalogue and
    # compiles a regular expression of all of them, ~0.25 s, inside the first send's
    # page run. Done here once (`re` keeps the compiled expression).
    try:
        from streamlit.string_util import extract_leading_emoji

        extract_leading_emoji("… warm")
    except Exception:  # noqa: BLE001 - a later Streamlit without it: nothing to warm
        pass


def start() -> None:
    """Begin the imports on a daemon thread (once per process)."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_import_all, name="gatehouse-warm", daemon=True)
            _thread.start()


def wait() -> None:
    """Until the imports started by `start()` are done (at once when none were)."""
    with _lock:
        thread = _thread
    if thread is not None and thread is not threading.current_thread():
        thread.join()


__all__ = ["MODULES", "start", "wait"]

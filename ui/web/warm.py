"""First-use costs paid once the first page is drawn, before a person's first click.

Streamlit's alerts (`st.info`, `st.warning` ...) look for a leading emoji in any text
that is not ASCII ("running…"): the first one loads Streamlit's emoji catalogue and
compiles one regular expression of every emoji, ~0.25 s of CPU, which landed inside
the first send's page run (issue 36: send -> approval card). `after_first_page()`
does that on a thread once, after the first page run of the server has drawn its
page, so no page waits for it.

Not earlier: a thread started with the server (it was tried, importing the page's
modules while the browser loads) competes with the server for the interpreter lock
and delayed the loading state by ~1 s on a busy machine (bench.web's first_page).
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_started = False


def _warm() -> None:
    try:
        from streamlit.string_util import extract_leading_emoji

        extract_leading_emoji("… warm")  # `re` keeps the compiled expression
    except Exception:  # noqa: BLE001 - a later Streamlit without it: nothing to warm
        pass


def after_first_page() -> None:
    """Start the warm-up (once per process)."""
    global _started
    with _lock:
        if _started:
            return
        _started = True
    threading.Thread(target=_warm, name="gatehouse-warm", daemon=True).start()


__all__ = ["after_first_page"]

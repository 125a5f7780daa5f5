"""A live run is followed only once the browser has drawn the page's widgets.

Streamlit loads each widget's code on first use (React lazy components), and React
draws a widget whose code has just arrived only when it has nothing more urgent to
draw. A live run sends the page an update several times a second, so a busy
machine's browser that (re)opened a page during a run never drew Stop or the chat
input until the run ended (Chromium's CPU throttle reproduces it: at 6x, Stop was
still missing 60 s after a reload; test_ui_browser.py's reload test). Fewer updates
(ui/web/live_run.py) only moved the threshold: Stop drawn at 6x, still missing at 15x.

So the first page of a browser session that finds a run going is drawn as it stands
(Stop, the input, the thread so far, "running…"), with hidden samples of the widgets
the live view adds, and a small script that presses a hidden button once no widget
on the page waits for its code (or after `GIVE_UP_MS`). That press's script run
follows the run live; later runs of the session follow at once.
"""

from __future__ import annotations

import streamlit as st

READY = "gh-live-ready"  # session state: this browser has drawn the live view's widgets
BUTTON_KEY = "gh-live-go"
GIVE_UP_MS = 15_000  # a widget whose code never loads must not hold the live view back

STYLE = "<style>.st-key-gh-live-samples { display: none; }</style>"

# Presses the hidden button once nothing on the page is a skeleton (a widget waiting
# for its code). Runs once per drawing of this element; the press's run draws none.
SCRIPT = (
    "<script>(() => {"
    "const started = Date.now();"
    "const check = () => {"
    f"  const go = document.querySelector('.st-key-{BUTTON_KEY} button');"
    "  const waiting = document.querySelector('[data-testid=\"stSkeleton\"]');"
    f"  if (go && (!waiting || Date.now() - started > {GIVE_UP_MS})) {{ go.click(); return; }}"
    "  setTimeout(check, 100);"
    "};"
    "check();"
    "})();</script>"
)


def _ready() -> None:
    st.session_state[READY] = True


def live_ready() -> bool:
    """True when this script run may follow a live run. Otherwise draws the hidden
    samples and the script that asks for the live view once they are drawn."""
    if st.session_state.get(READY):
        return True
    with st.container(key="gh-live-samples"):
        st.markdown(STYLE, unsafe_allow_html=True)
        st.code("live output", language="text")
        st.button("follow the run", key=BUTTON_KEY, on_click=_ready)
    st.html(SCRIPT, unsafe_allow_javascript=True)
    return False


__all__ = ["live_ready"]

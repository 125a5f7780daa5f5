"""The web app under Streamlit's AppTest, as a browser that has drawn its page.

AppTest runs the script without a browser, so nothing answers the live view's
handshake (ui/web/live_run.py: a browser says when it has drawn its widgets before
a live run is followed). A page opened here has said so already; tests of the
handshake itself open one with `drawn=False`.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from gatehouse.ui.web.live_run import READY

APP = str(Path(__file__).resolve().parents[2] / "ui" / "web" / "app.py")


def app_page(timeout: float = 30, *, drawn: bool = True) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=timeout)
    if drawn:
        at.session_state[READY] = True
    return at

"""What `gatehouse ui` serves (`streamlit run ui/web/launch.py`): the app as an `st.App`
behind the sign-in guard (ui/web/guard.py), printing a one-time sign-in link at start."""

from __future__ import annotations

import os
import sys
import webbrowser
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

# `streamlit run ui/web/launch.py` puts ui/web/ on sys.path, not a checkout's root (a wheel's is).
_ROOT = Path(__file__).resolve().parents[2]
if (_ROOT / "gatehouse").is_dir() and str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

import streamlit as st  # noqa: E402
import streamlit.delta_generator as streamlit_delta_generator  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402

from gatehouse.ui.web.guard import TOKENS, Guard  # noqa: E402
from gatehouse.ui.web.identity import web_access  # noqa: E402
from gatehouse.ui.web.loading import Preload  # noqa: E402
from gatehouse.ui.web.serve import OPEN_BROWSER_ENV  # noqa: E402

SCRIPT = Path(__file__).resolve().parent / "app.py"

# Streamlit's once-per-process REPL check (~45 ms of a first page, issue 36) cannot apply
# here: the warning counts as shown (tests/test_web_first_input.py checks the flag).
streamlit_delta_generator._use_warning_has_been_displayed = True

_access, _secret = web_access()


@asynccontextmanager
async def _announce(_app: Any) -> AsyncIterator[None]:
    from streamlit import config

    address = str(config.get_option("server.address") or "")
    host = "127.0.0.1" if address in ("", "0.0.0.0", "::") else address
    url = f"http://{host}:{int(config.get_option('server.port'))}"
    if _access.web == "token":
        link = f"{url}/?token={TOKENS.issue()}"
        print(f"\n  Gatehouse sign-in link (works once): {link}\n", flush=True)
        # Only in a graphical session: never a console browser on a server.
        display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        if os.environ.get(OPEN_BROWSER_ENV) == "1" and (
            sys.platform in ("darwin", "win32") or display
        ):
            webbrowser.open(link)
    else:  # signed in by the proxy or the identity provider: the address is all there is
        print(f"\n  Gatehouse: {url} (sign in through {_access.web})\n", flush=True)
    yield


# The guard first (outermost): the icon and preload hints only go to requests it let through.
app = st.App(
    SCRIPT,
    middleware=[
        Middleware(Guard, access=_access, secret=_secret),
        Middleware(Preload),
    ],
    lifespan=_announce,
)

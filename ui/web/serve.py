"""How the web app is served: the `streamlit run` command line `gatehouse ui` uses
(and the browser tests and the benchmark, so they measure what users run). It runs
ui/web/launch.py: the app behind the sign-in guard (ui/web/guard.py).

- client.toolbarMode minimal: no Deploy / developer menu in the header.
- runner.postScriptGC false: Streamlit runs a full `gc.collect()` after every script
  run, fragment runs included; with the live-update poller in every open tab that
  was nearly all of an idle server's CPU (27 % for 5 idle tabs, 1 % without).
- server.fileWatcherType none: nobody edits the app while it serves.
- theme.primaryColor ACCENT: Streamlit's default primary is red, which made "Approve"
  look like the destructive choice; red is kept for what destroys (Reject, risk badges).
"""

from __future__ import annotations

import sys
from pathlib import Path

APP_PATH = Path(__file__).resolve().parent / "launch.py"
ACCENT = "#2563eb"

FLAGS = [
    "--server.address",
    "127.0.0.1",
    "--server.headless",
    "true",
    "--browser.gatherUsageStats",
    "false",
    "--client.toolbarMode",
    "minimal",
    "--runner.postScriptGC",
    "false",
    "--server.fileWatcherType",
    "none",
    "--theme.primaryColor",
    ACCENT,
]


def streamlit_command(
    port: int | None = None, app: Path = APP_PATH, python: str = sys.executable
) -> list[str]:
    cmd = [python, "-m", "streamlit", "run", str(app), *FLAGS]
    return cmd + (["--server.port", str(port)] if port else [])

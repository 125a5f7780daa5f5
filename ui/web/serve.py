"""The `streamlit run` command line of `gatehouse ui` (and the browser tests and benchmark)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_PATH = Path(__file__).resolve().parent / "launch.py"
OPEN_BROWSER_ENV = "GATEHOUSE_OPEN_BROWSER"  # ui/web/launch.py opens the sign-in link
ACCENT = "#2563eb"

OPTIONS = {
    "server.address": "127.0.0.1",
    "server.headless": "true",
    "browser.gatherUsageStats": "false",
    "client.toolbarMode": "minimal",  # no Deploy / developer menu
    # A gc.collect() after every script run was nearly all of an idle server's CPU.
    "runner.postScriptGC": "false",
    "server.fileWatcherType": "none",  # nobody edits the app while it serves
    "theme.primaryColor": ACCENT,  # Streamlit's red made Approve look destructive
    "logger.hideWelcomeMessage": "true",  # ui/web/launch.py prints the one address to open
}
FLAGS = [arg for name, value in OPTIONS.items() for arg in (f"--{name}", value)]


def streamlit_command(port: int | None = None, app: Path = APP_PATH) -> list[str]:
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), *FLAGS]
    return cmd + (["--server.port", str(port)] if port else [])


def web_ui_command(port: int | None, browser: bool, app: Path = APP_PATH) -> list[str]:
    """`gatehouse ui`'s command line, its environment set here (the server): open a browser or
    not; this directory's database, workspace and config pinned. Raises ConfigError."""
    from gatehouse import graph

    os.environ[OPEN_BROWSER_ENV] = "1" if browser else "0"
    os.environ.update(graph.location_env(graph.load_settings()))
    return streamlit_command(port, app)

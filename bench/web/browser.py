"""Debian's Chromium, headless, driven by Playwright; and one tab as the harness uses it.

Playwright's own browser download is never used: CHROMIUM (or GATEHOUSE_CHROMIUM) is
launched with `executable_path`. `launch()` gives every browser a fresh temporary
profile (user-data-dir), deleted when the browser closes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.web import contract
from bench.web.probe import Wire

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 1000}
# A run that ends must stay ended this long before the page counts as settled: the
# next run of a st.rerun() chain starts within milliseconds.
QUIET_S = 0.3


class BrowserMissing(RuntimeError):
    """No Chromium where the benchmark looks for it."""


class Timeout(RuntimeError):
    """A page did not reach the state the harness waited for in time."""


def chromium_path() -> str:
    path = os.environ.get("GATEHOUSE_CHROMIUM", CHROMIUM)
    if Path(path).is_file() or shutil.which(path):
        return path
    raise BrowserMissing(
        f"Chromium not found at {path} (apt-get install chromium, or set GATEHOUSE_CHROMIUM)"
    )


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(
        executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
    )


class Tab:
    """One page with its WebSocket probe; every wait has a deadline and says what it waited for."""

    def __init__(self, context: Any, timeout_s: float) -> None:
        self.page = context.new_page()
        # Clicks and key presses wait for the page too: a busy page may take minutes.
        self.page.set_default_timeout(timeout_s * 1000)
        self.timeout_s = timeout_s
        self.crashed = False
        self.page.on("crash", lambda _page: setattr(self, "crashed", True))
        self.wire = Wire(self.page)

    def wait(self, js: str, arg: Any = None, *, what: str, timeout_s: float | None = None) -> float:
        """Poll `js(arg)` in the page until truthy; returns the monotonic time it was."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        try:
            self.page.wait_for_function(
                js, arg=arg, polling=contract.POLL_MS, timeout=max(1.0, limit * 1000)
            )
        except Exception as exc:
            if self.crashed:
                raise Timeout(f"the page crashed while waiting for {what}") from None
            if "Timeout" in type(exc).__name__:
                raise Timeout(f"no {what} within {limit:.0f} s") from None
            raise
        return time.monotonic()

    def act(self, action: Callable[[], Any], what: str) -> None:
        """Run a Playwright action (click, key press, navigation) done for `what`."""
        try:
            action()
        except Exception as exc:
            if self.crashed:
                raise Timeout(f"the page crashed before {what}") from None
            if "Timeout" in type(exc).__name__:
                raise Timeout(
                    f"the page did not take the action for {what} within {self.timeout_s:.0f} s"
                ) from None
            raise

    def settle(self, mark: int, *, what: str, timeout_s: float | None = None) -> float:
        """Wait until the server has finished running the page (see Wire.idle_at) and
        stayed so for QUIET_S; returns when it finished."""
        limit = self.timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + limit
        while True:
            idle = self.wire.idle_at(mark)
            # Quiet long enough; frames of a new run would have been delivered by the
            # last wait_for_timeout and moved idle_at.
            if idle is not None and time.monotonic() - idle >= QUIET_S:
                return idle
            if self.crashed:
                raise Timeout(f"the page crashed while waiting for {what}")
            if time.monotonic() > deadline:
                raise Timeout(f"the server was still running the page {limit:.0f} s after {what}")
            self.page.wait_for_timeout(25)  # also lets Playwright deliver CDP events

    def approve_button(self) -> Any:
        return (
            self.page.get_by_role("button", name=contract.APPROVE_NAME)
            .or_(self.page.locator(contract.APPROVE_KEY_CSS))
            .first
        )

    def stop_button(self) -> Any:
        return self.page.get_by_test_id("stBottom").get_by_role("button", name="Stop")

    def chat_input(self) -> Any:
        return self.page.locator(contract.CHAT_INPUT_CSS)

    def screenshot(self, path: Path, where: str = "top") -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(10):  # the page may still scroll itself (a late re-render)
            self.page.evaluate(contract.SCROLL_JS, where)
            self.page.wait_for_timeout(300)
            if self.page.evaluate(contract.SCROLL_JS, where):
                break
        self.page.screenshot(path=str(path))

    def close(self) -> None:
        self.wire.close()
        with contextlib.suppress(Exception):  # a crashed page may refuse
            self.page.close()

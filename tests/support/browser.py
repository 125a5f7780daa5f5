"""Helpers for the browser end-to-end tests: a real `streamlit run` and Debian's Chromium.

`streamlit_server()` starts the app on a free port bound to 127.0.0.1, in a temp dir
with its own database and workspace, and stops it afterwards. `chromium_path()`
finds /usr/bin/chromium: missing means skip locally, but FAIL when `CI` is set.
Playwright's own browser download is never used.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench.web.server import free_port, install_secret_of, running, sign_in
from gatehouse.ui.web.serve import streamlit_command
from tests.support.browser_journal import clicks_and_frames, watch
from tests.support.markers import require_marker

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "ui" / "web" / "app.py"
# Test artifacts (git-ignored); docs/screenshots/ holds the copies the README shows.
SCREENSHOTS = Path(os.environ.get("GATEHOUSE_SCREENSHOTS", ROOT / "test-artifacts" / "screenshots"))
CHROMIUM = "/usr/bin/chromium"
# Playwright's `expect` gives up after 5 s unless told otherwise: on a busy 2-core machine
# the rerun that draws a change can take longer (a key press in the inbox beside a CPU hog
# did). An expectation ends the moment it holds, so a higher ceiling costs a passing test
# nothing; it only makes a real failure report later.
EXPECT_TIMEOUT_MS = 30_000
with contextlib.suppress(ImportError):
    from playwright.sync_api import expect as _expect

    _expect.set_options(timeout=EXPECT_TIMEOUT_MS)
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    require_marker("browser", "starts Chromium")
    path = os.environ.get("GATEHOUSE_CHROMIUM", CHROMIUM)
    if Path(path).is_file() or shutil.which(path):
        return path
    reason = f"Chromium not found at {path} (apt-get install chromium)"
    if os.environ.get("CI"):
        pytest.fail(reason + "; it is required in CI", pytrace=False)
    pytest.skip(reason)


def launch_chromium(playwright: Any) -> Any:
    """Chromium whose pages a failing test's report describes (tests/support/browser_journal.py)."""
    return watch(
        playwright.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True
        )
    )


@dataclass
class Server:
    url: str
    workspace: Path
    db: Path
    log: Path
    process: subprocess.Popen[bytes]
    secret: str = ""

    def sign_in(self, context: Any) -> Any:
        """Sign `context` in with the token link; returns it."""
        sign_in(context, self.url, self.secret)
        return context


@contextmanager
def streamlit_server(
    tmp: Path, extra_env: dict[str, str] | None = None, timeout: float = 60
) -> Iterator[Server]:
    workspace = tmp / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "notes.md").write_text("# Notes\nremember the milk\n")
    extra_env = extra_env or {}
    db = Path(extra_env.get("GATEHOUSE_DB", tmp / "gatehouse.db"))  # another server's, to share it
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GATEHOUSE_"))}
    env.update(
        {
            "GATEHOUSE_DB": str(db),
            "GATEHOUSE_WORKSPACE": str(workspace),
            "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
            **extra_env,
        }
    )
    log = tmp / "streamlit.log"
    # The command line `gatehouse ui` runs (its flags: ui/web/serve.py).
    cmd = streamlit_command(port)
    with running(cmd, port, cwd=tmp, env=env, log=log, timeout=timeout) as (url, process):
        yield Server(
            url=url,
            workspace=workspace,
            db=db,
            log=log,
            process=process,
            secret=install_secret_of(db),
        )


@contextmanager
def chromium_browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (one per test module)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def signed_in_page(
    browser: Any, server: Server, viewport: dict[str, int], timeout_ms: int
) -> Iterator[Any]:
    """A page in a fresh browser context, signed in with the token link."""
    context = server.sign_in(browser.new_context(viewport=viewport))
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    try:
        yield page
    finally:
        context.close()


def screenshot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def script_idle(page: Any, timeout_ms: float) -> None:
    """Wait until the page says its script run is over (Streamlit's own marker on the app
    root, which its end-to-end tests wait on) and every widget it drew is on screen: a
    widget whose code is still loading is a skeleton, and a key meant for it (a button's
    `shortcut`) does nothing yet (likely why the walk's inbox `a` was once lost: the
    key reached the page, no press was sent)."""
    from playwright.sync_api import expect

    page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
        timeout=timeout_ms
    )
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=timeout_ms)


# A click that lands while Streamlit draws the page again is, rarely, lost: about once
# per full suite run, on the approval card, quiet machine or busy (the radio stays as
# it was, or the card stays after Approve, and no script run follows). Its cause is not
# found yet (the closing note says what was ruled out). A person clicks again; these
# helpers do the same, only when the click visibly did nothing, and warn so the defect
# stays in view. A retry never decides twice: Approve is clicked again only while the
# same request's card (its interrupt id is in the button's key) is still there.
LOST_CLICK_WAIT_MS = 10_000


def choose(scope: Any, option: str, *, timeout_ms: float, tries: int = 3) -> None:
    """Pick `option` of the first radio group in `scope` with a click on its label."""
    group = scope.get_by_test_id("stRadio").first
    radio = group.get_by_role("radio", name=option, exact=True)
    _click_until_checked(
        group.get_by_text(option, exact=True), radio, scope.page, timeout_ms=timeout_ms, tries=tries
    )


def tick(scope: Any, label: str, *, timeout_ms: float, tries: int = 3) -> None:
    """Tick the checkbox labelled `label` in `scope` with a click on its label."""
    box = scope.get_by_role("checkbox", name=label)
    _click_until_checked(
        scope.get_by_text(label), box, scope.page, timeout_ms=timeout_ms, tries=tries
    )


def _click_until_checked(
    target: Any, checked: Any, page: Any, *, timeout_ms: float, tries: int
) -> None:
    """Click `target` until `checked` (a radio or a checkbox) is checked: clicked again,
    with a warning, when a click is visibly lost."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    for attempt in range(tries):
        if not checked.is_checked(timeout=timeout_ms):
            target.click(timeout=timeout_ms)
        try:
            expect(checked).to_be_checked(timeout=LOST_CLICK_WAIT_MS)
        except (AssertionError, PlaywrightTimeout):
            continue
        if attempt:
            warnings.warn(
                f"the first {attempt} click(s) on {target} were lost\n" + clicks_and_frames(page),
                stacklevel=3,
            )
        return
    expect(checked).to_be_checked(timeout=timeout_ms)


def press_card_button(scope: Any, name: Any, *, timeout_ms: float, tries: int = 3) -> None:
    """Press an approval card's button (Approve, Submit decision) and see the card take
    it: that request's button gone. Pressed again only while that button is still there
    with no script run going (a taken press starts one at once and empties the card)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    page = getattr(scope, "page", None) or scope
    button = scope.get_by_role("button", name=name).first
    button.wait_for(timeout=timeout_ms)
    key = button.evaluate(
        "b => [...(b.closest('[class*=st-key-card-]')?.classList ?? [])]"
        ".find(c => c.startsWith('st-key-card-')) ?? null"
    )
    if key is None:  # not a card of one request: no way to tell a lost press from a new card
        button.click(timeout=timeout_ms)
        return
    same = page.locator(f".{key} button")
    idle = page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]')
    same.click(timeout=timeout_ms)
    for attempt in range(1, tries + 1):
        try:
            expect(same).to_have_count(0, timeout=LOST_CLICK_WAIT_MS)
        except AssertionError:
            if attempt == tries or idle.count() == 0 or same.count() == 0:
                continue  # a run is drawing: give it the next wait
            warnings.warn(
                f"press {attempt} of {name!r} was lost: pressed again\n" + clicks_and_frames(page),
                stacklevel=2,
            )
            with contextlib.suppress(PlaywrightTimeout):  # gone meanwhile: taken
                same.click(timeout=LOST_CLICK_WAIT_MS)
            continue
        return
    expect(same).to_have_count(0, timeout=timeout_ms)

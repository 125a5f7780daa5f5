"""The web app's opt-in desktop notifications, in real headless Chromium.

Notification permission is granted in the Playwright context and `window.Notification`
is replaced in the page by a recorder (a headless browser shows nothing), so the test
sees exactly which notifications the page made. Pauses are made by another process's
Session on the same database, the way the terminal or LangGraph Server makes them;
the page learns of them through the live-update watcher, with no click.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gatehouse.graph import open_session
from gatehouse.graph.service.config import Settings
from tests.support.browser import Server, chromium_path, launch_chromium, streamlit_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_api = pytest.importorskip("playwright.sync_api")

WAIT_MS = 30_000

# Records every notification the page makes; "granted" like the context's permission.
RECORDER = """
window.__notes = [];
window.__shown = [];
class RecordingNotification {
  static permission = "granted";
  static requestPermission() { return Promise.resolve("granted"); }
  constructor(title, options) {
    window.__notes.push({title, body: options.body, tag: options.tag});
    window.__shown.push(this);
  }
  close() {}
}
window.Notification = RecordingNotification;
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    chromium_path()
    with streamlit_server(tmp_path_factory.mktemp("notify")) as srv:
        yield srv


@pytest.fixture
def page(server: Server) -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        browser = launch_chromium(p)
        context = server.sign_in(browser.new_context(viewport={"width": 1280, "height": 900}))
        context.grant_permissions(["notifications"], origin=server.url)
        context.add_init_script(RECORDER)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url)
        page.get_by_test_id("stChatInputTextArea").wait_for()
        yield page
        browser.close()


def pause_elsewhere(server: Server, message: str) -> str:
    """A thread that waits for a decision, made by another process's Session."""
    session = open_session(Settings(db=str(server.db), workspace=str(server.workspace)))
    try:
        run = session.send(None, message)
        run.collect()
        assert run.status == "awaiting_approval"
        return run.thread_id
    finally:
        session.close()


def notes(page: Any) -> list[dict[str, Any]]:
    return page.evaluate("window.__notes")


def test_off_by_default_then_one_notification_per_new_pause(page: Any, server: Server) -> None:
    before = pause_elsewhere(server, "write before.md: old news")
    # Off by default: a pause appears in the sidebar, the page makes no notification.
    quiet = pause_elsewhere(server, "write quiet.md: nobody asked")
    playwright_api.expect(page.get_by_test_id("stSidebar")).to_contain_text(
        "write quiet.md", timeout=WAIT_MS
    )
    assert notes(page) == []

    page.get_by_text("Desktop notifications").click()
    fresh = pause_elsewhere(server, "write fresh.md: look at me")
    page.wait_for_function("window.__notes.length >= 1", timeout=WAIT_MS)
    made = notes(page)
    # Only the pause that began after opting in, once, titled and tagged by its thread;
    # threads that were already waiting (`before`, `quiet`) are not news.
    assert [n["tag"] for n in made] == [f"gatehouse-{fresh}"], (made, before, quiet)
    assert made[0]["title"] == "Gatehouse: approval needed"
    assert "fresh.md" in made[0]["body"]

    # Every rerun hands the page all waiting threads again: each is announced once only.
    second = pause_elsewhere(server, "write second.md: and me")
    page.wait_for_function("window.__notes.length >= 2", timeout=WAIT_MS)
    assert [n["tag"] for n in notes(page)] == [f"gatehouse-{fresh}", f"gatehouse-{second}"]

    # Clicking a notification opens its thread, with its card.
    page.evaluate("window.__shown[0].onclick()")
    page.wait_for_url(f"**/?thread={fresh}", timeout=WAIT_MS)
    playwright_api.expect(page.get_by_test_id("stMainBlockContainer")).to_contain_text(
        "fresh.md", timeout=WAIT_MS
    )


def test_no_notification_for_the_thread_on_screen(page: Any, server: Server) -> None:
    page.get_by_text("Desktop notifications").click()
    page.get_by_test_id("stChatInputTextArea").fill("write here.md: on screen")
    page.get_by_test_id("stChatInputTextArea").press("Enter")
    playwright_api.expect(page.get_by_role("button", name="Approve", exact=True)).to_be_visible(
        timeout=WAIT_MS
    )
    # A pause elsewhere still notifies; the one the person is looking at never did.
    other = pause_elsewhere(server, "write other.md: elsewhere")
    page.wait_for_function("window.__notes.length >= 1", timeout=WAIT_MS)
    assert [n["tag"] for n in notes(page)] == [f"gatehouse-{other}"]

"""The run view a person trusts (issue 32), in real headless Chromium: after "Compact
now" the history stays whole with a marker where the model's view was summarised.

One `streamlit run` for the module (the offline demo model); threads are prepared
through a Session on the server's own database. Screenshots go to
test-artifacts/screenshots/ (copies in docs/screenshots/).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from gatehouse.graph import Settings, open_session
from gatehouse.graph.protocol.operations import Compact
from tests.support.browser import (
    Server,
    chromium_browser,
    chromium_path,
    screenshot,
    script_idle,
    signed_in_page,
    streamlit_server,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_api = pytest.importorskip("playwright.sync_api")

# Generous: a freshly started server on a busy 2-core machine; every wait is for a signal.
WAIT_MS = 60_000
VIEWPORT = {"width": 1280, "height": 1000}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    chromium_path()
    with streamlit_server(tmp_path_factory.mktemp("runview")) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Any]:
    with chromium_browser() as b:
        yield b


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    with signed_in_page(browser, server, VIEWPORT, WAIT_MS) as page:
        yield page


def main(page: Any) -> Any:
    return page.get_by_test_id("stMainBlockContainer")


def open_thread(page: Any, server: Server, thread_id: str) -> None:
    page.goto(f"{server.url}/?thread={thread_id}")
    # Ready: the chat input is drawn (the page's last element).
    page.get_by_test_id("stChatInputTextArea").wait_for(timeout=WAIT_MS)


def test_compacted_thread_keeps_its_whole_history_with_a_marker(page: Any, server: Server) -> None:
    session = open_session(
        Settings(db=str(server.db), workspace=str(server.workspace), compaction=False)
    )
    try:
        tid = session.new_thread_id()
        for i in range(10):
            session.send(tid, f"list files {i:02d}").collect()
        assert session.submit(Compact(tid)).result().compacted is not None
    finally:
        session.close()
    open_thread(page, server, tid)
    expect = playwright_api.expect
    marker = main(page).get_by_text("The model's view was summarised here")
    expect(marker).to_be_visible(timeout=WAIT_MS)
    # The turns before the marker are still there: "Show earlier" reveals the first one.
    earlier = main(page).get_by_role("button", name=re.compile(r"Show \d+ earlier turns"))
    expect(earlier).to_be_visible()
    # The person's message, drawn as written (ui/web/tool_blocks.py: said_html).
    first = main(page).get_by_test_id("stChatMessage").locator(".gh-said", has_text="list files 00")
    expect(first).to_have_count(0)
    earlier.click()
    expect(first).to_have_count(1, timeout=WAIT_MS)
    # The click reruns the page: scroll once that run has drawn (not a node it replaces).
    script_idle(page, WAIT_MS)
    marker.scroll_into_view_if_needed()
    screenshot(page, "compacted-history-whole")


def test_a_wrong_thread_link_gets_a_not_found_page(page: Any, server: Server) -> None:
    page.goto(f"{server.url}/?thread=no-such-thread%00%1B%5B31m")
    expect = playwright_api.expect
    expect(main(page).get_by_text("Thread not found")).to_be_visible(timeout=WAIT_MS)
    expect(main(page)).to_contain_text("Nothing was created")
    expect(page.get_by_test_id("stChatInputTextArea")).to_have_count(0)
    screenshot(page, "thread-not-found")
    main(page).get_by_role("button", name="Start a new thread").click()
    page.get_by_test_id("stChatInputTextArea").wait_for(timeout=WAIT_MS)
    assert "thread=" not in page.url


def test_standing_grants_are_listed_with_revoke_and_rows_say_why(page: Any, server: Server) -> None:
    session = open_session(
        Settings(db=str(server.db), workspace=str(server.workspace)), actor="alice"
    )
    try:
        run = session.send(None, "write a.md: one")
        run.collect()
        session.resume(
            run.thread_id, {"decisions": [{"type": "approve", "always_allow": True}]}
        ).collect()
        assert session.send(run.thread_id, "write b.md: two").collect()[-1].status == "completed"
    finally:
        session.close()
    open_thread(page, server, run.thread_id)
    expect = playwright_api.expect
    expect(main(page)).to_contain_text("always allowed (write_file)", timeout=WAIT_MS)
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar).to_contain_text("Always allowed in this thread")
    expect(sidebar).to_contain_text("by alice")
    sidebar.get_by_text("Always allowed in this thread").scroll_into_view_if_needed()
    screenshot(page, "standing-grants")
    sidebar.get_by_role("button", name="block").click()
    expect(sidebar).not_to_contain_text("Always allowed in this thread", timeout=WAIT_MS)

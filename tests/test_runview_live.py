"""The run view while something runs, and the history it leaves (issue 32, items 2, 3
and 6), in real headless Chromium: after Approve the decided card goes at once and Stop
sits by the chat input with the live progress and the queue in view; tool output keeps
its line breaks; the first open shows a loading state and copy buttons never show the
icon font's ligature text.

One `streamlit run` for the module (the offline demo model). Screenshots go to
test-artifacts/screenshots/ (copies in docs/screenshots/).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from gatehouse.graph import Settings, open_session
from tests.support.browser import (
    Server,
    chromium_browser,
    chromium_path,
    press_card_button,
    screenshot,
    script_idle,
    signed_in_page,
    streamlit_server,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

# Generous: a freshly started server on a busy 2-core machine; every wait is for a signal.
WAIT_MS = 60_000
VIEWPORT = {"width": 1280, "height": 900}
APPROVE = re.compile(r"^(Approve|Submit decision)$")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    chromium_path()
    with streamlit_server(tmp_path_factory.mktemp("runview-live")) as srv:
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


def ready(page: Any) -> None:
    """The app says it is ready: the sidebar (drawn after the chat input) has its title."""
    page.get_by_test_id("stSidebar").get_by_role("heading", name="Gatehouse").wait_for(
        timeout=WAIT_MS
    )


def send(page: Any, text: str) -> None:
    box = page.get_by_test_id("stChatInputTextArea")
    expect(box).to_be_enabled(timeout=WAIT_MS)
    box.fill(text)
    box.press("Enter")


def test_after_approve_the_card_goes_and_stop_sits_by_the_input(page: Any, server: Server) -> None:
    page.goto(server.url + "/")
    ready(page)
    send(page, "run: sleep 30; echo done")
    expect(main(page)).to_contain_text("Approval needed", timeout=WAIT_MS)
    script_idle(page, WAIT_MS)
    press_card_button(main(page), APPROVE, timeout_ms=WAIT_MS)  # again if lost
    # A command asks once more, showing the whole call (graph/protocol/confirm.py).
    main(page).get_by_role("button", name="Yes, approve").click()
    # While the approved call runs (30 s), the page shows it running and nothing of the
    # decided card (the bug: the card stayed, stale, for the whole run). One read of
    # the page, so both halves hold at the same moment.
    page.wait_for_function(
        """() => { const t = document.querySelector('[data-testid=stMainBlockContainer]').innerText;
                   return t.includes('run_command · running') && !t.includes('Approval needed')
                       && !t.includes('Chat input is disabled'); }""",
        timeout=WAIT_MS,
        polling=50,
    )
    stop = page.get_by_test_id("stBottom").get_by_role("button", name="Stop")
    expect(stop).to_be_in_viewport()
    box = page.get_by_test_id("stChatInputTextArea")
    stop_at, input_at = stop.bounding_box(), box.bounding_box()
    assert stop_at is not None and input_at is not None
    # By the input: just above it, not somewhere up the page.
    assert 0 < input_at["y"] - (stop_at["y"] + stop_at["height"]) < 120, (stop_at, input_at)
    expect(main(page).get_by_text(re.compile(r"^running · \d+ s$"))).to_be_in_viewport()
    # A message sent now waits for the run, and says so in view.
    send(page, "list files")
    expect(main(page).get_by_text("queued: sent when the run ends")).to_be_in_viewport(
        timeout=WAIT_MS
    )
    expect(page.get_by_test_id("stBottom")).to_contain_text("1 queued message", timeout=WAIT_MS)
    expect(stop).to_be_in_viewport()
    expect(main(page).get_by_text("Approval needed")).to_have_count(0)
    screenshot(page, "runview-stop-by-input")
    stop.click()
    expect(main(page)).to_contain_text("stopped", timeout=WAIT_MS)
    expect(stop).to_have_count(0, timeout=WAIT_MS)


def test_tool_output_keeps_its_line_breaks_in_the_history(page: Any, server: Server) -> None:
    session = open_session(Settings(db=str(server.db), workspace=str(server.workspace)))
    try:
        run = session.send(None, "run: seq 1 5")
        run.collect()
        resumed = session.resume(run.thread_id, {"decisions": [{"type": "approve"}]})
        resumed.collect()
        assert resumed.status == "completed"
    finally:
        session.close()
    page.goto(f"{server.url}/?thread={run.thread_id}")
    ready(page)
    row = main(page).locator("details.gh-tool", has_text="run_command").first
    row.locator("summary").click()
    blocks = row.locator(".gh-pre")
    expect(blocks).to_have_count(2)
    output = blocks.nth(1)
    expect(output).to_be_visible()
    # What a person sees: one number per line (innerText follows the rendering).
    assert output.inner_text().splitlines()[:5] == ["1", "2", "3", "4", "5"]
    args = blocks.nth(0)
    assert args.inner_text().splitlines() == ["{", '  "command": "seq 1 5"', "}"]
    # And the block is as tall as six lines (5 numbers and the exit code), not one. Waited
    # for (a busy machine once measured 5.1 lines while the page was still laying out),
    # with a pixel of slack for sub-pixel layout (6 x 25.6 px lays out as 153.56 px).
    page.wait_for_function(
        "e => e.getBoundingClientRect().height"
        " >= 6 * parseFloat(getComputedStyle(e).lineHeight) - 1",
        arg=output.element_handle(),
        timeout=WAIT_MS,
    )
    row.scroll_into_view_if_needed()
    screenshot(page, "tool-output-line-breaks")


# Records, every 5 ms from the page's first script, what a person would have seen.
WATCH = """
window.__seen = {copyTexts: []};
setInterval(() => {
  for (const b of document.querySelectorAll('button.gh-copy')) {
    const t = b.innerText.trim();
    if (!window.__seen.copyTexts.includes(t)) window.__seen.copyTexts.push(t);
  }
}, 5);
"""


# What the page showed at its first frame: the served loading indicator, visible, and
# how many of Streamlit's elements were drawn by then.
FIRST_FRAME = """
document.addEventListener('DOMContentLoaded', () => requestAnimationFrame(() => {
  const boot = document.getElementById('gh-boot');
  window.__firstFrame = {
    boot: !!boot && boot.checkVisibility(),
    elements: document.querySelectorAll('[data-testid="stElementContainer"]').length,
  };
}));
"""


def test_first_open_shows_a_loading_state_not_a_blank_page(browser: Any, tmp_path: Any) -> None:
    # A server of its own: the first page of a fresh process imports the whole agent.
    with streamlit_server(tmp_path) as fresh:
        context = fresh.sign_in(browser.new_context(viewport=VIEWPORT))
        try:
            context.add_init_script(FIRST_FRAME)
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            response = page.goto(fresh.url + "/")
            # From the page's first frame on, before Streamlit's code has drawn anything
            # (it was blank for ~1.4 s on a busy machine), the served page says it loads.
            assert response is not None and 'id="gh-boot"' in response.text()
            loading = main(page).get_by_role("status").filter(has_text="Loading Gatehouse…")
            expect(loading).to_be_visible(timeout=WAIT_MS)
            assert page.evaluate("window.__firstFrame") == {"boot": True, "elements": 0}
            screenshot(page, "loading-first-open")
            ready(page)
            expect(loading).to_have_count(0)
            expect(page.locator("#gh-boot")).to_have_count(0)
            expect(page.get_by_test_id("stChatInputTextArea")).to_be_visible()
        finally:
            context.close()


def test_copy_buttons_never_show_the_icon_name_and_widget_code_is_preloaded(
    browser: Any, server: Server
) -> None:
    session = open_session(Settings(db=str(server.db), workspace=str(server.workspace)))
    try:
        run = session.send(None, "list files")
        run.collect()
    finally:
        session.close()
    context = server.sign_in(browser.new_context(viewport=VIEWPORT))
    try:
        context.add_init_script(WATCH)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        response = page.goto(f"{server.url}/?thread={run.thread_id}")
        # The page itself asks for the button code and the icon font up front.
        html = response.text()
        assert re.search(r'rel="modulepreload"[^>]*Button\.[\w-]+\.js', html), html[:500]
        assert re.search(r'rel="preload" as="font"[^>]*MaterialSymbols', html)
        ready(page)
        copy = main(page).locator("button.gh-copy").first
        expect(copy).to_be_visible()
        expect(copy.locator("svg")).to_have_count(1)
        # From the first frame on, a copy button only ever said "Copy" (it said
        # "content_copyCopy" until the icon font had loaded).
        assert page.evaluate("window.__seen.copyTexts") == ["Copy"]
        copy.scroll_into_view_if_needed()
        screenshot(page, "copy-button-icon")
    finally:
        context.close()

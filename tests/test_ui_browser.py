"""End-to-end: the Streamlit app in real headless Chromium (Debian's, via Playwright).

One `streamlit run` per module, with a slowed-down demo model (test-only hook
GATEHOUSE_MODEL_FACTORY) so streaming and Stop can be observed. Each test opens its own
thread. Screenshots of the key states go to test-artifacts/screenshots/ (copy them to
docs/screenshots/ to update the README).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from gatehouse.ui.web.live_run import BUTTON_KEY as LIVE_BUTTON
from tests.support.browser import (
    Server,
    choose,
    chromium_path,
    launch_chromium,
    press_card_button,
    screenshot,
    streamlit_server,
)
from tests.support.browser_journal import clicks_on, presses

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_api = pytest.importorskip("playwright.sync_api")

WAIT_MS = 30_000
VIEWPORT = {"width": 1280, "height": 1000}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    chromium_path()  # skip (or fail in CI) before starting a server for nothing
    tmp = tmp_path_factory.mktemp("ui")
    # Commands may run 10 minutes: a run the reload test holds open must outlast a slow
    # browser's reload (the default 60 s once ended it first, beside a CPU hog).
    config = tmp / "gatehouse.toml"
    config.write_text("[tools]\nshell_timeout_s = 600\n")
    env = {
        "GATEHOUSE_MODEL_FACTORY": "tests.support.slow_model:make_model",
        "GATEHOUSE_SLOW_DELAY": "0.04",
        "GATEHOUSE_CONFIG": str(config),
    }
    with streamlit_server(tmp, env) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = launch_chromium(p)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    context = server.sign_in(browser.new_context(viewport=VIEWPORT))
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(server.url)
    chat_box(page).wait_for()
    yield page
    context.close()


def chat_box(page: Any) -> Any:
    return page.get_by_test_id("stChatInputTextArea")


def send(page: Any, text: str) -> None:
    box = chat_box(page)
    box.wait_for()
    playwright_api.expect(box).to_be_enabled(
        timeout=WAIT_MS
    )  # not expect's 5 s default: a busy machine
    box.fill(text)
    box.press("Enter")


def main(page: Any) -> Any:
    return page.get_by_test_id("stMainBlockContainer")


def expect_text(page: Any, text: str | re.Pattern[str]) -> None:
    playwright_api.expect(main(page)).to_contain_text(text, timeout=WAIT_MS)


def settle(page: Any) -> None:
    """Wait until no script run is in progress (no live run, no stale elements)."""
    playwright_api.expect(
        page.get_by_test_id("stBottom").get_by_role("button", name="Stop")
    ).to_have_count(0, timeout=WAIT_MS)
    playwright_api.expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=WAIT_MS)


def submit(page: Any) -> None:
    # As a person would: on a page done drawing, and again if the press was lost
    # (tests/support/browser.py says when that happens).
    settle(page)
    press_card_button(main(page), re.compile(r"^(Approve|Submit decision)$"), timeout_ms=WAIT_MS)


def test_send_message_streams_text(page: Any) -> None:
    send(page, "hello there")
    # The cursor mark is only drawn while tokens are still arriving.
    expect_text(page, "▌")
    screenshot(page, "streaming")
    expect_text(page, "I understand requests like")
    playwright_api.expect(main(page)).not_to_contain_text("▌", timeout=WAIT_MS)
    assert "thread=" in page.url
    send(page, "list files")
    expect_text(page, "list_files · done")
    expect_text(page, "notes.md")
    settle(page)
    screenshot(page, "chat-tool-call")


def test_approve(page: Any, server: Server) -> None:
    send(page, "write todo.md: buy milk")
    expect_text(page, "Approval needed")
    expect_text(page, "risk: write")
    playwright_api.expect(chat_box(page)).to_be_disabled()
    settle(page)
    screenshot(page, "approval-card")
    submit(page)
    expect_text(page, "write_file · done")
    playwright_api.expect(chat_box(page)).to_be_enabled()
    assert (server.workspace / "todo.md").read_text() == "buy milk\n"
    # A fresh tab asks for the live view only while no page run is going: an ask during
    # a run stops it, and with it any click that run carried (ui/web/live_run.py).
    asks = clicks_on(page, LIVE_BUTTON)  # none when the run had ended when the page drew
    assert all("script=notRunning" in ask for ask in asks), asks
    assert presses(page, LIVE_BUTTON) == len(asks)


def test_reject_with_reason_and_model_reacts(page: Any, server: Server) -> None:
    send(page, "write rejected.md: nope")
    expect_text(page, "Approval needed")
    settle(page)
    choose(main(page), "Reject", timeout_ms=WAIT_MS)
    reason = page.get_by_label("Reason (the model sees it)")
    reason.fill("wrong file name")
    reason.press("Enter")
    submit(page)
    expect_text(page, "declined")
    expect_text(page, "wrong file name")
    expect_text(page, "write_file · rejected")
    assert not (server.workspace / "rejected.md").exists()


def test_reload_while_pending_then_approve(page: Any, server: Server) -> None:
    send(page, "write reload.md: after reload")
    expect_text(page, "Approval needed")
    url = page.url
    page.reload()
    expect_text(page, "Approval needed")
    assert page.url == url
    submit(page)
    expect_text(page, "write_file · done")
    assert (server.workspace / "reload.md").read_text() == "after reload\n"


def test_same_thread_in_second_browser_context(page: Any, browser: Any, server: Server) -> None:
    send(page, "read notes.md")
    expect_text(page, "read_file · done")
    other = server.sign_in(browser.new_context(viewport=VIEWPORT))
    try:
        second = other.new_page()
        second.set_default_timeout(WAIT_MS)
        second.goto(page.url)
        expect_text(second, "remember the milk")
        expect_text(second, "read notes.md")
    finally:
        other.close()


def test_inbox_lists_waiting_thread(page: Any, server: Server) -> None:
    send(page, "write inbox.md: from the inbox")
    expect_text(page, "Approval needed")
    page.goto(server.url + "/?view=inbox")
    expect_text(page, "Approvals inbox")
    expect_text(page, "write inbox.md")
    settle(page)
    screenshot(page, "approvals-inbox")


def test_stop_a_run(page: Any, server: Server) -> None:
    send(page, "tell me everything you can do")
    stop = page.get_by_test_id("stBottom").get_by_role("button", name="Stop")
    stop.wait_for()
    expect_text(page, "▌")
    stop.click()
    playwright_api.expect(stop).to_have_count(0)
    # Nothing of Streamlit's own showed: the dock's deprecated name (`st._bottom`) drew
    # "Please replace `st._bottom` with `st.bottom`." above the first running turn of
    # each server process (Streamlit warns once per process, in the page and the log).
    assert "Please replace" not in server.log.read_text()
    expect_text(page, "Stopped by the person")
    playwright_api.expect(chat_box(page)).to_be_enabled()
    settle(page)
    screenshot(page, "stopped")
    # The thread stays usable after a stop.
    send(page, "list files")
    expect_text(page, "list_files · done")


@pytest.mark.parametrize("slowdown", [1, 6], ids=["as-is", "browser-6x-slower"])
def test_reload_during_a_run_reattaches(page: Any, server: Server, slowdown: int) -> None:
    # A run that lasts until the test lets it end (an approved command that waits for a
    # file in the workspace), so the reload lands inside it however long a busy machine
    # takes to reload the page: a run of a fixed length (20 s) once ended first.
    release = server.workspace / "release-the-run"
    release.unlink(missing_ok=True)
    send(page, "run: until [ -e release-the-run ]; do echo tick; sleep 0.5; done; echo released")
    expect_text(page, "Approval needed")
    submit(page)
    # A command asks once more, showing the whole call (graph/protocol/confirm.py).
    main(page).get_by_role("button", name="Yes, approve").click()
    expect_text(page, "run_command · running")
    # A slow browser (Chromium's own CPU throttle stands in for a busy machine) once
    # never drew Stop or the chat input while the run's updates kept coming: React draws
    # a widget whose code just loaded only when nothing else waits (ui/web/live_run.py).
    # At 6x Stop was still missing 60 s after the reload; now ~9 s on a quiet machine.
    live = main(page).get_by_text(re.compile(r"^running · \d+ s$"))
    playwright_api.expect(live).to_be_visible(timeout=WAIT_MS)  # this tab asked already
    asked = presses(page, LIVE_BUTTON)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": slowdown})
    page.reload()
    # The run kept going on the server; the reloaded page follows it live, Stop in reach.
    stop = page.get_by_test_id("stBottom").get_by_role("button", name="Stop")
    wait = WAIT_MS * min(slowdown, 4)  # within the test's 300 s limit
    try:
        playwright_api.expect(stop).to_be_visible(timeout=wait)
        playwright_api.expect(chat_box(page)).to_be_visible(timeout=wait)
        # Live: the elapsed time ticks (drawn only while the page follows the run).
        playwright_api.expect(live).to_be_visible(timeout=wait)
    except AssertionError as exc:
        # The browser's own state is in the report's journal section
        # (tests/support/browser_journal.py); this adds the rest.
        raise AssertionError(f"{exc}\n{_what_happened(page, server)}") from None
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
    expect_text(page, "run_command · running")
    release.touch()
    # It ends as it would have without the reload: once, with all its output.
    playwright_api.expect(stop).to_have_count(0, timeout=WAIT_MS)
    settle(page)
    rows = main(page).locator("details.gh-tool", has_text="run_command")
    playwright_api.expect(rows).to_have_count(1)
    rows.first.locator("summary").click()
    playwright_api.expect(rows.first).to_contain_text("released")
    users = main(page).get_by_test_id("stChatMessage").filter(has_text="run: until")
    playwright_api.expect(users).to_have_count(1)
    # The reloaded page asked for the live view, never during a page run.
    asks = clicks_on(page, LIVE_BUTTON)
    assert asks and all("script=notRunning" in ask for ask in asks), asks
    assert presses(page, LIVE_BUTTON) - asked == len(asks)


def _what_happened(page: Any, server: Server) -> str:
    """The dock's HTML, a screenshot, whether Stop came later, and the server log's tail."""
    dock = page.evaluate(
        "() => document.querySelector('[data-testid=stBottom]')?.outerHTML ?? 'no stBottom'"
    )
    shot = server.log.parent / f"failure-{time.monotonic_ns()}.png"
    page.screenshot(path=str(shot))
    # Slow or never: another wait as long as the first.
    stop = page.get_by_test_id("stBottom").get_by_role("button", name="Stop")
    try:
        playwright_api.expect(stop).to_be_visible(timeout=WAIT_MS)
        later = "Stop was drawn during a second wait"
    except AssertionError:
        later = "Stop was still missing after a second wait"
    log = server.log.read_text(errors="replace")[-6000:] if server.log.exists() else "no log"
    return f"{later}\nstBottom: {dock[:4000]}\nscreenshot: {shot}\nserver log:\n{log}"


def test_page_has_no_exception(page: Any) -> None:
    playwright_api.expect(page.get_by_test_id("stException")).to_have_count(0)
    expect_text(page, "Demo mode")
    page.goto(page.url.split("?")[0] + "?view=settings")
    expect_text(page, "Workspace folder")
    settle(page)
    screenshot(page, "settings")

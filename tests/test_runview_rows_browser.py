"""Rows a person reads and acts on (issue 32 leftovers), in real headless Chromium:

- the approvals inbox never shows a row without its buttons: from the first moment a
  row's text is visible, its Approve, Reject, Next and Open buttons are visible too. A
  MutationObserver installed before the page's own scripts (`add_init_script`) checks
  every row after every change to the page, before the browser can paint it: a state
  with the text showing and a button missing is recorded, however briefly it lasted.
  Each load uses a fresh browser context, so Streamlit's widget code is fetched anew
  (the first load a person gets);
- the decision log keeps a multi-line answer's line breaks;
- a call the person answered with "respond" is never shown, live, as a finished
  status with a tick (as if it ran);
- "Find" on a long thread: typing a query reruns only the popover, never the history
  under it (a whole-page run under the open popup was one way it jumped away).

One `streamlit run` for the module, with the slow demo model (tests/support/slow_model.py)
so a live run lasts long enough to be seen.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from bench.web.build import build_thread, payload, thread_id_for
from gatehouse.graph import Settings, open_session
from tests.support.browser import (
    Server,
    choose,
    chromium_browser,
    chromium_path,
    press_card_button,
    screenshot,
    signed_in_page,
    streamlit_server,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_api = pytest.importorskip("playwright.sync_api")

# Generous: a freshly started server on a busy 2-core machine; every wait is for a signal.
WAIT_MS = 60_000
VIEWPORT = {"width": 1280, "height": 1000}
BUTTONS = ("Approve", "Reject", "Next", "Open")

# For each row (by its container's key class): when its text first was visible, when
# all its buttons first were, and every moment text showed without all of them.
WATCH_ROWS = """
(() => {
  const seen = window.ghRows = {};
  const shown = (el) => !!el && el.checkVisibility({visibilityProperty: true, opacityProperty: true})
    && el.getBoundingClientRect().height > 0;
  const check = () => {
    const now = performance.now();
    for (const row of document.querySelectorAll('[class*="st-key-inbox-row-"]')) {
      const key = [...row.classList].find((c) => c.startsWith("st-key-inbox-row-"));
      const text = [...row.querySelectorAll('[data-testid="stMarkdownContainer"]')]
        .find((m) => m.innerText.includes("waiting since"));
      if (!shown(text)) continue;
      const names = [...row.querySelectorAll("button")].filter(shown).map((b) => b.innerText.trim());
      const all = %s.every((n) => names.some((t) => t.startsWith(n)));
      const r = seen[key] = seen[key] || {text: now, buttons: null, bare: []};
      if (all && r.buttons === null) r.buttons = now;
      if (!all && r.bare.length < 20) r.bare.push({at: now, buttons: names});
    }
  };
  new MutationObserver(check).observe(document, {childList: true, subtree: true, attributes: true,
                                                 characterData: true});
})();
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    chromium_path()
    slow = {
        "GATEHOUSE_MODEL_FACTORY": "tests.support.slow_model:make_model",
        "GATEHOUSE_SLOW_DELAY": "0.03",
    }
    with streamlit_server(tmp_path_factory.mktemp("rows"), extra_env=slow) as srv:
        session = open_session(Settings(db=str(srv.db), workspace=str(srv.workspace)))
        try:
            for name in ("one", "two", "three"):
                session.send(None, f"write inbox-{name}.md: {name}").collect()
            assert (
                len(session.thread_list().awaiting_approval) == 3
            )  # the other tests leave none waiting
        finally:
            session.close()
        yield srv


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Any]:
    with chromium_browser() as b:
        yield b


@pytest.mark.parametrize("attempt", range(3))
def test_inbox_rows_never_show_without_their_buttons(
    browser: Any, server: Server, attempt: int
) -> None:
    with signed_in_page(browser, server, VIEWPORT, WAIT_MS) as page:
        page.add_init_script(WATCH_ROWS % json.dumps(BUTTONS))
        page.goto(f"{server.url}/?view=inbox")
        rows = page.get_by_test_id("stMainBlockContainer").locator("[class*='st-key-inbox-row-']")
        playwright_api.expect(rows).to_have_count(3, timeout=WAIT_MS)
        for i in range(3):
            playwright_api.expect(rows.nth(i).get_by_role("button", name="Open")).to_be_visible(
                timeout=WAIT_MS
            )
        seen = page.evaluate("window.ghRows")
        if attempt == 0:
            screenshot(page, "inbox-rows-with-buttons")
    print(f"\n[inbox] {seen}")
    assert len(seen) == 3, seen
    for key, row in seen.items():
        assert row["bare"] == [], f"{key}: text shown without its buttons {row['bare']}"
        assert row["buttons"] == row["text"], (
            f"{key}: buttons {row['buttons'] - row['text']:.0f} ms after the text"
        )


def main(page: Any) -> Any:
    return page.get_by_test_id("stMainBlockContainer")


def test_decision_log_keeps_the_line_breaks_of_an_answer(browser: Any, server: Server) -> None:
    session = open_session(Settings(db=str(server.db), workspace=str(server.workspace)))
    try:
        run = session.send(None, "write log.md: x")
        run.collect()
        answer = "line one\nline two <b>not bold</b>\nline three"
        session.resume(
            run.thread_id, {"decisions": [{"type": "respond", "message": answer}]}
        ).collect()
    finally:
        session.close()
    with signed_in_page(browser, server, VIEWPORT, WAIT_MS) as page:
        page.goto(f"{server.url}/?view=audit")
        row = main(page).locator("details.gh-tool", has_text="answered instead").first
        row.locator("summary").click()
        block = row.locator(".gh-pre").last
        playwright_api.expect(block).to_be_visible(timeout=WAIT_MS)
        # What a person sees: the three lines, the markup as text.
        assert block.inner_text().splitlines() == [
            "line one",
            "line two <b>not bold</b>",
            "line three",
        ]
        assert row.locator("b").count() == 0
        row.scroll_into_view_if_needed()
        screenshot(page, "decision-log-line-breaks")


# Every status block (`st.status`) the page ever drew, by its label, with its icon.
WATCH_STATUS = """
(() => {
  const seen = window.ghStatus = [];
  const check = () => {
    for (const box of document.querySelectorAll('[data-testid="stExpander"] summary')) {
      const text = box.innerText;
      if (text.includes("answered by you") && !seen.includes(text)) seen.push(text);
    }
  };
  new MutationObserver(check).observe(document, {childList: true, subtree: true, characterData: true});
})();
"""


def test_a_call_answered_with_respond_never_shows_as_run(browser: Any, server: Server) -> None:
    with signed_in_page(browser, server, VIEWPORT, WAIT_MS) as page:
        page.add_init_script(WATCH_STATUS)
        page.goto(server.url + "/")
        box = page.get_by_test_id("stChatInputTextArea")
        playwright_api.expect(box).to_be_enabled(timeout=WAIT_MS)
        box.fill("write answered.md: never written")
        box.press("Enter")
        playwright_api.expect(main(page)).to_contain_text("Approval needed", timeout=WAIT_MS)
        choose(main(page), "Respond", timeout_ms=WAIT_MS)
        field = main(page).get_by_role(
            "textbox", name="Answer to give the model instead of running the tool"
        )
        field.fill("I wrote it myself")
        field.press("Control+Enter")
        press_card_button(main(page), "Submit decision", timeout_ms=WAIT_MS)
        row = main(page).locator("details.gh-tool", has_text="answered by you")
        playwright_api.expect(row).to_contain_text(
            "↩ write_file · answered by you", timeout=WAIT_MS
        )
        playwright_api.expect(page.get_by_test_id("stChatInputTextArea")).to_be_enabled(
            timeout=WAIT_MS
        )
        statuses = page.evaluate("window.ghStatus")
        screenshot(page, "respond-not-run")
    print(f"\n[respond] status blocks that said 'answered by you': {statuses}")
    assert statuses == []
    assert not (server.workspace / "answered.md").exists()


# After `window.ghFindFrom` is set: every history element a page run marked stale
# (being redrawn).
WATCH_FIND = """
window.ghFind = {stale: 0};
new MutationObserver((records) => {
  if (!window.ghFindFrom) return;
  for (const r of records)
    if (r.target.getAttribute('data-stale') === 'true' && r.target.closest('[data-testid=stChatMessage]'))
      window.ghFind.stale += 1;
}).observe(document, {subtree: true, attributes: true, attributeFilter: ['data-stale']});
"""
FIND_TURNS = 40


def test_typing_in_find_never_redraws_the_history_under_it(browser: Any, server: Server) -> None:
    build_thread(FIND_TURNS, server.db)
    expect = playwright_api.expect
    with signed_in_page(browser, server, VIEWPORT, WAIT_MS) as page:
        page.add_init_script(WATCH_FIND)
        page.goto(f"{server.url}/?thread={thread_id_for(FIND_TURNS)}")
        expect(main(page).get_by_text(payload("answer", FIND_TURNS)[:40])).to_be_visible(
            timeout=WAIT_MS
        )
        page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
            timeout=WAIT_MS
        )
        main(page).get_by_role("button", name=re.compile("Find in this thread")).click()
        page.evaluate("window.ghFindFrom = true")
        box = page.get_by_label("Text to find")
        for query in ("user 0000", "user 00003"):
            box.fill(query)
            box.press("Enter")
            expect(page.get_by_role("button", name=re.compile(r"^Turn 3: "))).to_be_visible(
                timeout=WAIT_MS
            )
            page.locator('[data-testid="stApp"][data-test-script-state="notRunning"]').wait_for(
                timeout=WAIT_MS
            )
        seen = page.evaluate("window.ghFind")
        print(f"\n[find] {seen}")
        assert seen["stale"] == 0, f"the history was redrawn under the popup: {seen}"
        # A jump still redraws the page: the turn found, the popup closed.
        page.get_by_role("button", name=re.compile(r"^Turn 3: ")).evaluate(
            "button => button.click()"
        )
        expect(main(page)).to_contain_text("Found: showing turns 3–6", timeout=WAIT_MS)
        expect(page.get_by_label("Text to find")).to_have_count(0)

"""The approvals inbox in real headless Chromium (issue 32, item 6): a person never sees
a row without its buttons. From the first moment a row's text is visible, its Approve,
Reject, Next and Open buttons are visible too.

A MutationObserver installed before the page's own scripts (`add_init_script`) checks
every row after every change to the page, before the browser can paint it: a state
with the text showing and a button missing would be recorded, however briefly it
lasted. Each test uses a fresh browser context, so Streamlit's widget code is fetched
anew (the first load a person gets).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from graph import Settings, open_session
from tests.support.browser import (
    Server,
    chromium_browser,
    chromium_path,
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
    with streamlit_server(tmp_path_factory.mktemp("inbox")) as srv:
        session = open_session(Settings(db=str(srv.db), workspace=str(srv.workspace)))
        try:
            for name in ("one", "two", "three"):
                session.send(None, f"write inbox-{name}.md: {name}").collect()
            assert len(session.awaiting_approval()) == 3
        finally:
            session.close()
        yield srv


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Any]:
    with chromium_browser() as b:
        yield b


@pytest.mark.parametrize("attempt", range(3))
def test_inbox_rows_never_show_without_their_buttons(browser: Any, server: Server, attempt: int) -> None:
    with signed_in_page(browser, server, VIEWPORT, WAIT_MS) as page:
        page.add_init_script(WATCH_ROWS % json.dumps(BUTTONS))
        page.goto(f"{server.url}/?view=inbox")
        rows = page.get_by_test_id("stMainBlockContainer").locator("[class*='st-key-inbox-row-']")
        playwright_api.expect(rows).to_have_count(3, timeout=WAIT_MS)
        for i in range(3):
            playwright_api.expect(rows.nth(i).get_by_role("button", name="Open")).to_be_visible(timeout=WAIT_MS)
        seen = page.evaluate("window.ghRows")
        if attempt == 0:
            screenshot(page, "inbox-rows-with-buttons")
    print(f"\n[inbox] {seen}")
    assert len(seen) == 3, seen
    for key, row in seen.items():
        assert row["bare"] == [], f"{key}: text shown without its buttons {row['bare']}"
        assert row["buttons"] == row["text"], f"{key}: buttons {row['buttons'] - row['text']:.0f} ms after the text"

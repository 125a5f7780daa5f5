"""Issue 55 in real headless Chromium: nothing out of view can be approved.

The offline demo model makes the calls (a one-line command with a hidden tail, a
120-line file, two calls in one turn). Each test asserts what a person sees: where
`rm -rf` is drawn relative to the card's box, Approve disabled until "Show all", the
confirmation with the whole call (Escape cancels it), the narrow "always allow", the
inbox row listing every call, and a card decided elsewhere saying who decided.
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
    signed_in_page,
    streamlit_server,
)
from tests.test_ui_browser import VIEWPORT, WAIT_MS, chat_box, expect_text, main, send, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    chromium_path()
    with streamlit_server(tmp_path_factory.mktemp("cards")) as srv:
        yield srv


@pytest.fixture(scope="module")
def browser(server: Server) -> Iterator[Any]:
    with chromium_browser() as b:
        yield b


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[Any]:
    with signed_in_page(browser, server, VIEWPORT, WAIT_MS) as page:
        page.goto(server.url)
        chat_box(page).wait_for()
        yield page


# Where the first occurrence of `text` inside `el` is drawn, and the box `el` shows.
WHERE = """([el, text]) => {
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node; (node = walker.nextNode()); ) {
    const at = node.textContent.indexOf(text);
    if (at < 0) continue;
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + text.length);
    const r = range.getBoundingClientRect(), box = el.getBoundingClientRect();
    return {x: r.left, right: r.right, y: r.top, boxLeft: box.left, boxRight: box.right,
            boxTop: box.top, boxBottom: box.bottom,
            scrolls: el.querySelector('pre').scrollWidth > el.querySelector('pre').clientWidth + 1};
  }
  return null;
}"""


def code_with(scope: Any, text: str) -> Any:
    return scope.get_by_test_id("stCode").filter(has_text=text).first


def assert_in_view(code: Any, text: str) -> None:
    where = code.evaluate("(el, text) => (" + WHERE + ")([el, text])", text)
    assert where is not None, f"{text!r} is not in the block"
    assert not where["scrolls"], "the block scrolls sideways"
    assert where["boxLeft"] <= where["x"] and where["right"] <= where["boxRight"] + 1, where
    assert where["boxTop"] <= where["y"] <= where["boxBottom"], where


def card_button(page: Any, name: str | re.Pattern[str]) -> Any:
    return main(page).get_by_role("button", name=name)


def test_a_hidden_tail_is_drawn_in_the_card_and_approve_asks_with_the_whole_command(
    page: Any, server: Server
) -> None:
    (server.workspace / "keep.txt").write_text("precious\n")
    send(page, "run: echo build-ok" + " " * 3000 + "; rm -rf ./*")
    expect_text(page, "Approval needed")
    settle(page)
    args = code_with(main(page), '"command"')
    expect(args).to_contain_text("echo build-ok ⟨3,000 spaces⟩ ; rm -rf ./*")
    assert_in_view(args, "rm -rf ./*")
    card_button(page, "Approve").click()
    question = main(page).get_by_text("Approve 1 call as shown below?")
    expect(question).to_be_visible()
    expect(main(page)).to_contain_text("it executes a command")
    assert_in_view(
        code_with(main(page).locator('[class*="st-key-confirm-"]'), "rm -rf"), "rm -rf ./*"
    )
    page.keyboard.press("Escape")  # cancels: nothing ran, the card is back
    expect(question).to_have_count(0)
    expect(card_button(page, "Yes, approve")).to_have_count(0)
    # ^…$: "Approve" alone would also match "Yes, approve" while a rerun still draws it
    expect(card_button(page, re.compile("^Approve$"))).to_be_visible()
    assert (server.workspace / "keep.txt").read_text() == "precious\n"


def test_a_long_preview_is_opened_before_approve_and_counts_are_exact(
    page: Any, server: Server
) -> None:
    lines = [f"line {i}" for i in range(1, 121)]
    send(page, "write big.md: " + "\\n".join(lines))
    expect_text(page, "Approval needed")
    settle(page)
    # 121 rows of preview ("new file …" and the 120 lines), 40 drawn: 81 hidden, exactly.
    expect(main(page)).to_contain_text(re.compile(r"… 81 more lines hidden \([\d,]+ characters\)"))
    approve = card_button(page, "Approve")
    expect(approve).to_be_disabled()
    preview = code_with(main(page), "new file big.md")
    expect(preview).to_contain_text("line 39")
    expect(preview).not_to_contain_text("line 40")
    args = code_with(main(page), '"content"')
    assert_in_view(args, "line 120")  # the one-line argument wraps: its end is in the box
    card_button(page, "Show all").click()
    expect(code_with(main(page), "new file big.md")).to_contain_text("line 120")
    expect(approve).to_be_enabled()
    approve.click()
    expect_text(page, "write_file · done")
    assert (server.workspace / "big.md").read_text() == "\n".join(lines) + "\n"


def test_always_allow_is_narrow_first_and_rm_still_asks(page: Any, server: Server) -> None:
    (server.workspace / "x").write_text("keep\n")
    send(page, "run: seq 1 3")
    expect_text(page, "Approval needed")
    settle(page)
    grant = main(page).get_by_test_id("stRadio").filter(has_text="Later calls like this")
    expect(grant.get_by_role("radio", name=re.compile("^No: ask again"))).to_be_checked()
    expect(grant).to_contain_text("Always allow the whole tool: every `run_command` call")
    grant.get_by_text(re.compile("exactly the command `seq 1 3`")).click()
    expect(grant.get_by_role("radio", name=re.compile("exactly the command"))).to_be_checked()
    settle(page)
    card_button(page, "Approve").click()
    main(page).get_by_role("button", name="Yes, approve").click()  # it executes: confirmed
    expect_text(page, "run_command · done")
    settle(page)
    send(page, "run: seq 1 3")  # covered: no card
    expect_text(page, "always allowed (run_command:seq 1 3)")
    settle(page)
    expect(main(page).get_by_text("Approval needed")).to_have_count(0)
    send(page, "run: rm -f x")  # not covered: asks
    expect_text(page, "Approval needed")
    expect(code_with(main(page), '"command"')).to_contain_text("rm -f x")
    assert (server.workspace / "x").read_text() == "keep\n"


def test_inbox_row_shows_every_call_and_approve_all_asks_for_git_config(
    page: Any, server: Server
) -> None:
    before = (server.workspace / "notes.md").read_text()
    send(page, "write notes.md: hello then write .git/config: [core] fsmonitor = touch pwned")
    expect_text(page, "Approval needed · 2 calls")
    settle(page)
    thread_url = page.url
    # The chat card's "Approve all" asks the same question as the inbox.
    card_button(page, re.compile(r"^Approve all \(2 of 2\)")).click()
    expect(main(page)).to_contain_text(".git/config, where code runs later")
    page.keyboard.press("Escape")
    expect(main(page).get_by_text("as shown below?")).to_have_count(0)

    page.goto(server.url + "/?view=inbox")
    expect_text(page, "Approvals inbox")
    row = main(page).locator('[class*="st-key-inbox-row-"]').filter(has_text="notes.md").first
    expect(row).to_contain_text('call 1: write_file {"path": "notes.md", "content": "hello\\n"}')
    expect(row).to_contain_text('call 2: write_file {"path": ".git/config"')
    expect(row).not_to_contain_text("+1 more")
    settle(page)
    row.get_by_role("button", name="Approve all").click()
    question = row.get_by_text("Approve 1 call as shown below?")
    expect(question).to_be_visible()
    expect(row).to_contain_text("it writes .git/config, where code runs later")
    expect(code_with(row.locator('[class*="st-key-confirm-"]'), "fsmonitor")).to_be_visible()
    page.keyboard.press("Escape")
    expect(question).to_have_count(0)
    assert (server.workspace / "notes.md").read_text() == before
    assert not (server.workspace / ".git" / "config").exists()
    assert thread_url


def test_a_card_decided_elsewhere_says_who_decided(page: Any, server: Server) -> None:
    send(page, "write elsewhere.md: from the terminal")
    expect_text(page, "Approval needed")
    settle(page)
    thread_id = re.search(r"thread=([0-9a-f-]+)", page.url)[1]  # type: ignore[index]
    session = open_session(
        Settings(db=str(server.db), workspace=str(server.workspace)), actor="alice"
    )
    try:
        session.resume(thread_id, {"decisions": [{"type": "approve"}]}).collect()
    finally:
        session.close()
    expect_text(page, "Decided elsewhere — write_file approved by alice via api")
    expect(main(page).get_by_text("Approval needed")).to_have_count(0)
    assert (server.workspace / "elsewhere.md").exists()

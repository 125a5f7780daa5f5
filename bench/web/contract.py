"""What the benchmark expects of the web page: every selector and DOM check in one place.

The web app may be rewritten freely as long as these stay true (or are adapted here,
in one edit):

- The chat input is Streamlit's `st.chat_input` (`data-testid="stChatInputTextArea"`):
  the harness types into it and presses Enter; "usable" means visible and enabled.
- Messages show their text as visible text: the thread's last message contains
  `bench.web.build.last_message_marker(turns)`, the last turn's answer.
- The approval card has a button named `Approve` or `Submit decision` (exact name);
  "usable" means visible and enabled. A button inside an element with the key
  `gh-approve` (Streamlit gives it the class `st-key-gh-approve`) also counts, so the
  rework can rename the button without touching the harness.
- After an approved `write_file`, the tool's result text (`wrote N bytes to NAME`)
  becomes visible somewhere on the page (the demo model repeats it in its answer;
  a collapsed tool block alone does not count: it must be visible).
- Streamed text is inserted into the page as it arrives (any element).
- A long thread shows a window of its last turns with a button named like
  `Show N earlier turns` (only for the screenshots of the window).

Timing checks are JavaScript predicates polled in the page every POLL_MS
(`page.wait_for_function`), not Playwright's auto-waiting, whose back-off polls only
every 500 ms after the first few tries.
"""

from __future__ import annotations

import re

POLL_MS = 40

CHAT_INPUT_CSS = '[data-testid="stChatInputTextArea"]'
APPROVE_NAME = re.compile(r"^(Approve|Submit decision)$")
APPROVE_KEY_CSS = ".st-key-gh-approve button"
# The windowed history's button that loads older turns (screenshots only).
SHOW_EARLIER_NAME = re.compile(r"Show \d+ earlier turns?")

# True when `marker` is in a visible text node. Walks text nodes from the end of the
# document: the last message and a new result sit at the bottom, so the usual hit
# costs a few hundred nodes, not the whole page.
TEXT_VISIBLE_JS = """
(marker) => {
  if (!document.body) return false;  // a navigation that has not parsed its body yet
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let node = document.body.lastChild;
  while (node && node.lastChild) node = node.lastChild;
  walker.currentNode = node || document.body;
  for (let n = walker.currentNode; n; n = walker.previousNode()) {
    if (n.nodeType === 3 && n.data.includes(marker)) {
      const el = n.parentElement;
      if (el && el.checkVisibility({visibilityProperty: true, opacityProperty: false})) return true;
    }
  }
  return false;
}
"""

CHAT_INPUT_READY_JS = f"""
() => {{
  const box = document.querySelector('{CHAT_INPUT_CSS}');
  return !!box && !box.disabled && box.checkVisibility();
}}
"""

APPROVE_READY_JS = f"""
() => {{
  const names = {APPROVE_NAME.pattern!r};
  const re = new RegExp(names);
  const keyed = [...document.querySelectorAll('{APPROVE_KEY_CSS}')];
  const named = [...document.querySelectorAll('button')].filter(b => re.test(b.innerText.trim()));
  return [...keyed, ...named].some(b => !b.disabled && b.checkVisibility());
}}
"""

# Records when `marker` first enters the DOM (added nodes or edited text), and the
# next animation frame after that (about when it is painted), as epoch milliseconds
# in window.__ghSeen[marker]. Installed before the action whose effect it times.
WATCH_TEXT_JS = """
(marker) => {
  window.__ghSeen = window.__ghSeen || {};
  const has = (node) => !!node && (node.nodeType === 3 ? node.data.includes(marker)
                                    : (node.textContent || '').includes(marker));
  const observer = new MutationObserver((records) => {
    for (const r of records) {
      const hit = r.type === 'characterData' ? has(r.target) : [...r.addedNodes].some(has);
      if (!hit) continue;
      observer.disconnect();
      const dom = performance.timeOrigin + performance.now();
      requestAnimationFrame(() => {
        window.__ghSeen[marker] = {dom, frame: performance.timeOrigin + performance.now()};
      });
      return;
    }
  });
  observer.observe(document.body, {childList: true, subtree: true, characterData: true});
}
"""

SEEN_JS = "(marker) => (window.__ghSeen || {})[marker] || null"

DOM_ELEMENTS_JS = "() => document.getElementsByTagName('*').length"

# Scrolls every scrolling box of the page (the document and Streamlit's main section,
# whatever its test id; not the sidebar) to the top or the bottom, for screenshots;
# true when all of them are there.
SCROLL_JS = """
(where) => {
  const boxes = [document.scrollingElement, ...[...document.querySelectorAll('*')].filter((el) => {
    const style = getComputedStyle(el);
    return el.scrollHeight > el.clientHeight + 10 && /(auto|scroll)/.test(style.overflowY)
      && !el.closest('[data-testid="stSidebar"]');
  })];
  for (const box of boxes) if (box) box.scrollTop = where === 'top' ? 0 : box.scrollHeight;
  // Whether every box is at that edge now (a late re-render can scroll it back).
  return boxes.every((box) => !box || (where === 'top' ? box.scrollTop === 0
    : box.scrollTop + box.clientHeight >= box.scrollHeight - 2));
}
"""


# The chat's Stop button while a run goes (Streamlit's bottom bar holds the input; the
# button's text starts with its icon's name).
STOP_BUTTON_JS = """
() => [...document.querySelectorAll('[data-testid="stBottom"] button')]
  .some(b => /(^|\\s)Stop$/.test(b.innerText.trim()) && !b.disabled && b.checkVisibility())
"""
# The run has ended: no Stop button (the chat input may stay usable during a run).
STOP_GONE_JS = f"() => !({STOP_BUTTON_JS.strip()})()"


def result_marker(file_name: str) -> str:
    """Visible once an approved `write_file` of `file_name` has run (tools/files.py)."""
    return f"bytes to {file_name}"

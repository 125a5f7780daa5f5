"""What the browser was doing when a browser test failed, added to the failure report.

Failures seen only beside a CPU hog, in the full suite, each once in a few runs: after
a reload, every widget Streamlit loads on first use (buttons, radios, toggles, text
fields, the chat input) missing for 30 s while Markdown and form buttons were drawn; a
text area that did not appear after a click on "Edit"; a click on Approve after which
the card stayed. A report should tell whether the click was refused (a notice), the
widgets' code was still being fetched or had failed, or the page was still drawing.
So every browser context that `launch_chromium` makes keeps a journal of its requests
(started, finished, failed) and console messages, and `report()` adds each open page's
state: Streamlit's script state, its notices, its dock and the end of its text, the
skeletons drawn for widgets whose code has not loaded, and the code fetched.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

_JOURNALS: weakref.WeakKeyDictionary[Any, Journal] = weakref.WeakKeyDictionary()
_KEEP = 60  # the last messages of each kind

_PAGE_STATE = """() => {
  const app = document.querySelector('[data-testid=stApp]');
  const widgetCode = performance.getEntriesByType('resource')
    .filter(e => /\\/static\\/js\\/[^/]*\\.js/.test(e.name))
    .map(e => `${e.name.split('/').pop()} at ${Math.round(e.startTime)} ms, `
      + `${Math.round(e.duration)} ms, ${e.deliveryType || 'network'}`);
  return {
    script: app ? app.getAttribute('data-test-script-state') : 'no stApp',
    elements: document.querySelectorAll('[data-testid=stElementContainer]').length,
    skeletons: document.querySelectorAll('[data-testid=stSkeleton]').length,
    errors: [...document.querySelectorAll('[data-testid=stException], [data-testid=stAlertContentError]')]
      .map(e => e.innerText.slice(0, 300)),
    notices: [...document.querySelectorAll('[data-testid=stAlert]')].map(e => e.innerText.slice(0, 300)),
    dock: (document.querySelector('[data-testid=stBottom]')?.innerText ?? 'no dock').slice(0, 300),
    mainText: (document.querySelector('[data-testid=stMainBlockContainer]')?.innerText ?? '').slice(-1500),
    widgetCode,
  };
}"""


class Journal:
    """One browser context's requests and console messages, with when they happened."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.waiting: dict[int, tuple[float, str]] = {}
        self.failed: list[str] = []
        self.said: list[str] = []

    def attach(self, context: Any) -> None:
        context.on("request", self._request)
        context.on("requestfinished", self._done)
        context.on("requestfailed", self._failed)
        context.on("console", self._console)

    def _at(self) -> str:
        return f"{time.monotonic() - self.started:7.1f} s"

    def _request(self, request: Any) -> None:
        self.waiting[id(request)] = (time.monotonic(), request.url)

    def _done(self, request: Any) -> None:
        self.waiting.pop(id(request), None)

    def _failed(self, request: Any) -> None:
        self.waiting.pop(id(request), None)
        self.failed = [*self.failed[-_KEEP:], f"{self._at()} {request.url}: {request.failure}"]

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.said = [*self.said[-_KEEP:], f"{self._at()} {message.type}: {message.text}"]

    def lines(self) -> list[str]:
        now = time.monotonic()
        out = [
            f"  waiting {now - since:.1f} s: {url}"
            for since, url in sorted(self.waiting.values())
            if not url.startswith("ws")
        ]
        out += [f"  failed {line}" for line in self.failed]
        out += [f"  console {line}" for line in self.said]
        return out


def watch(browser: Any) -> Any:
    """`browser`, whose new contexts each keep a journal (see the module docstring)."""
    new_context = browser.new_context

    def journaled_context(*args: Any, **kwargs: Any) -> Any:
        context = new_context(*args, **kwargs)
        journal = Journal()
        journal.attach(context)
        _JOURNALS[context] = journal
        return context

    browser.new_context = journaled_context
    return browser


def report() -> str:
    """Each open page's state and its context's journal; empty without a browser."""
    parts = []
    for context, journal in list(_JOURNALS.items()):
        try:
            pages = list(context.pages)
        except Exception:  # noqa: BLE001 - a closed context or browser: nothing to say
            continue
        for page in pages:
            try:
                state = page.evaluate(_PAGE_STATE)
            except Exception as exc:  # noqa: BLE001 - a report must not fail the report
                state = {"unreadable": str(exc)[:200]}
            parts.append(f"page {page.url}\n  {_brief(state)}")
        parts.extend(journal.lines())
    return "\n".join(parts)


def _brief(state: dict[str, Any]) -> str:
    code = state.pop("widgetCode", None)
    main = state.pop("mainText", None)
    text = ", ".join(f"{k}: {v!r}" for k, v in state.items())
    if main is not None:
        text += "\n  the page's text, its end:\n    " + main.replace("\n", "\n    ")
    if code is not None:
        text += "\n  code fetched:" + "".join(f"\n    {c}" for c in code)
    return text

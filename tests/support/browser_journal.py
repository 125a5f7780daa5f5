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

For a lost click the journal also keeps, per page, what crossed Streamlit's WebSocket
(each request to run the script with the buttons it presses and the card's values,
and the runs' starts and ends, decoded with Streamlit's own protobuf classes) and the
pointer events the page saw (`clicks_and_frames`): whether the click reached the
button, whether the press left the browser, and what the server did with it.
"""

from __future__ import annotations

import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any

_JOURNALS: weakref.WeakKeyDictionary[Any, Journal] = weakref.WeakKeyDictionary()
_KEEP = 60  # the last messages of each kind
_FRAMES_KEPT = 200

# Pointer events on the page, in the page's own clock (performance.now(), ms), kept
# until read: what the click landed on and whether it was still in the document.
_CLICK_LOG = """(() => {
  const log = (window.__ghClicks = []);
  const describe = (e) => {
    const t = e.target instanceof Element ? e.target : null;
    const box = t?.closest('[class*=st-key-]');
    const key = box ? [...box.classList].find(c => c.startsWith('st-key-')) : '';
    return `${Math.round(performance.now())} ms ${e.type}${e.key ? ' ' + e.key : ''} on ${t?.tagName ?? '?'} `
      + `"${(t?.innerText ?? '').slice(0, 30)}" ${key} connected=${t?.isConnected} `
      + `script=${document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state')} `
      + `skeletons=${document.querySelectorAll('[data-testid=stSkeleton]').length}`;
  };
  for (const type of ['pointerdown', 'pointerup', 'click', 'change', 'keydown'])
    document.addEventListener(type, (e) => log.push(describe(e)), true);
})()"""

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
        self.frames: weakref.WeakKeyDictionary[Any, PageFrames] = weakref.WeakKeyDictionary()

    def attach(self, context: Any) -> None:
        context.on("request", self._request)
        context.on("requestfinished", self._done)
        context.on("requestfailed", self._failed)
        context.on("console", self._console)
        context.on("page", self._page)
        context.add_init_script(_CLICK_LOG)

    def _page(self, page: Any) -> None:
        frames = self.frames[page] = PageFrames(self._at)
        page.on("websocket", frames.socket)

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


@dataclass
class Frame:
    at: str
    way: str  # "sent" or "got"
    text: str
    pressed: tuple[str, ...] = ()  # a sent rerun: the keys of the buttons it presses
    count: int = 1  # deltas in a row are one Frame


class PageFrames:
    """What crossed one page's WebSocket, briefly: the last `_FRAMES_KEPT` frames, and
    every button press the page sent."""

    def __init__(self, clock: Any) -> None:
        self.clock = clock
        self.frames: deque[Frame] = deque(maxlen=_FRAMES_KEPT)
        self.presses: list[str] = []

    def socket(self, ws: Any) -> None:
        ws.on("framesent", lambda payload: self.note("sent", payload))
        ws.on("framereceived", lambda payload: self.note("got", payload))

    def note(self, way: str, payload: Any) -> None:
        try:
            frame = _frame(self.clock(), way, payload)
        except Exception as exc:  # noqa: BLE001 - a journal must never break the test
            frame = Frame(self.clock(), way, f"undecodable ({exc.__class__.__name__})")
        self.presses.extend(frame.pressed)
        last = self.frames[-1] if self.frames else None
        if last is not None and frame.text == last.text == "delta":
            last.count += 1
            return
        self.frames.append(frame)

    def lines(self, last: int) -> list[str]:
        return [
            f"{f.at} {f.way} {f.text}" + (f" x{f.count}" if f.count > 1 else "")
            for f in list(self.frames)[-last:]
        ]


def _frame(at: str, way: str, payload: Any) -> Frame:
    if isinstance(payload, str):
        return Frame(at, way, f"text {payload[:80]!r}")
    if way == "sent":
        from streamlit.proto.BackMsg_pb2 import BackMsg

        back = BackMsg.FromString(payload)
        kind = back.WhichOneof("type")
        if kind != "rerun_script":
            return Frame(at, way, str(kind))
        state = back.rerun_script
        pressed = tuple(_key(w.id) for w in state.widget_states.widgets if w.trigger_value)
        card = {
            _key(w.id): getattr(w, w.WhichOneof("value") or "id")
            for w in state.widget_states.widgets
            if "card-" in w.id and not w.trigger_value
        }
        text = f"rerun pressed={list(pressed)} fragment={state.fragment_id!r} card={card}"
        return Frame(at, way, text, pressed)
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    forward = ForwardMsg.FromString(payload)
    kind = str(forward.WhichOneof("type"))
    if kind == "script_finished":
        return Frame(at, way, f"script_finished {forward.script_finished}")
    if kind == "session_status_changed":
        return Frame(at, way, f"running={forward.session_status_changed.script_is_running}")
    return Frame(at, way, kind)


def _key(widget_id: str) -> str:
    """A widget's key: Streamlit's ids are `$$ID-<hash>-<key>`."""
    parts = widget_id.split("-", 2)
    return parts[2] if len(parts) == 3 else widget_id


def _page_frames(page: Any) -> PageFrames | None:
    journal = _JOURNALS.get(page.context)
    return None if journal is None else journal.frames.get(page)


def presses(page: Any, key: str) -> int:
    """How many times `page` has sent a press of the button with `key`."""
    frames = _page_frames(page)
    return 0 if frames is None else frames.presses.count(key)


def clicks_on(page: Any, key: str) -> list[str]:
    """The page's own click events on the widget with `key` (since it last loaded), each
    with the script state the page knew of then (`script=...`)."""
    events = page.evaluate("() => window.__ghClicks ?? []")
    return [e for e in events if " click on " in e and f" st-key-{key} " in e]


def clicks_and_frames(page: Any, last: int = 40) -> str:
    """The pointer events the page saw and the WebSocket frames of its last moments."""
    frames = _page_frames(page)
    try:
        now, clicks = page.evaluate(
            "() => [Math.round(performance.now()), window.__ghClicks ?? []]"
        )
    except Exception as exc:  # noqa: BLE001 - a report must not fail the report
        now, clicks = "?", [f"unreadable: {exc}"[:200]]
    return "\n".join(
        [
            f"pointer events (page clock now {now} ms):",
            *clicks[-last:],
            "frames:",
            *(frames.lines(last) if frames is not None else []),
        ]
    )


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
            parts.append("  " + clicks_and_frames(page).replace("\n", "\n    "))
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

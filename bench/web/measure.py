"""The measurements of issue 23, per thread length, in real headless Chromium.

Per size: a fresh server (`gatehouse ui`) on a copy of the built thread and a fresh
browser. Then, each timing repeated `reps` times (the median is reported):

- open: a new tab on `?thread=ID` until the thread's last message is visible
  ("ready"), and until the server has finished running the page and the chat
  input is usable ("settled");
- send: a gated request typed into the chat input, Enter, until the approval
  card's approve control is usable; approve: click it, until the tool's result is
  visible ("ready") and until the page has settled again;
- first text: a request the model answers after FIRST_TOKEN_S, streaming; from the
  model's first token to the first streamed text in the page;
- live: a second tab open on the thread, left alone, while the first sends a gated
  request and approves it: from the click in the first tab until the second shows
  the result ("cross_tab", issue 19's live update); then Stop pressed while a long
  reply streams, until the page has ended the run (no Stop button) with the reply cut
  short ("stop");
- page: DOM elements and nodes and the JS heap (after a forced GC), after opening;
- per interaction: bytes of WebSocket frames the page received, script runs (and
  reruns), the time the server spent in those runs, the browser's main-thread time
  (Chromium's Task/Script/Layout/RecalcStyle counters, CPU time of that thread),
  and CPU seconds of the server and browser processes;
- idle: server and browser CPU with `idle_tabs` tabs open on a thread and left alone.

A timing whose first sample took longer than `rep_budget_s` is not repeated (a
2,000-turn thread on a slow page would otherwise take hours); a wait that exceeds
`timeout_s` is recorded as a timeout and the size's remaining timings are skipped.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.web import contract
from bench.web.browser import VIEWPORT, Tab, Timeout, launch
from bench.web.build import CACHE, BuiltThread, cached_thread, last_message_marker
from bench.web.model import FIRST_TOKEN_S, LONG_CHUNKS, LONG_PREFIX, STREAM_PREFIX, reply_marker
from bench.web.probe import CpuClock, browser_time_delta
from bench.web.server import Server, serve, sign_in

MEASURES = ("open", "page", "approve", "stream", "live", "idle")


@dataclass
class Options:
    sizes: list[int]
    reps: int = 3
    measures: tuple[str, ...] = MEASURES
    timeout_s: float = 900.0
    rep_budget_s: float = 90.0
    idle_tabs: int = 20
    idle_seconds: float = 10.0
    idle_size: int | None = None  # default: the smallest size
    screenshots: Path | None = None
    cache: Path = CACHE
    # Per size: stop an open sample at this many seconds (recorded as a timeout) and
    # stop sampling once the median is sure to exceed it. For pass/fail checks only.
    open_limit_s: dict[int, float] = field(default_factory=dict)
    progress: bool = True
    server_command: list[str] | None = None  # instead of `gatehouse ui` (the profiler's)
    extra_env: dict[str, str] = field(default_factory=dict)
    # Called after each interaction with (size, name, sample); the profiler hooks in here.
    on_sample: Callable[[int, str, dict[str, Any]], None] | None = None


def median(values: list[float | None]) -> float | None:
    """Median where None (a timeout) counts as longer than anything measured."""
    if not values:
        return None
    ordered = sorted(values, key=lambda v: float("inf") if v is None else v)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    a, b = ordered[mid - 1], ordered[mid]
    return None if a is None or b is None else (a + b) / 2


def _log(opts: Options, text: str) -> None:
    if opts.progress:
        print(f"[web-bench] {text}", flush=True)


class SizeRun:
    """All measurements of one thread length, against one server and one browser."""

    def __init__(self, thread: BuiltThread, server: Server, browser: Any, opts: Options) -> None:
        self.thread = thread
        self.server = server
        self.opts = opts
        self.context = browser.new_context(viewport=VIEWPORT)
        sign_in(self.context, server.url, server.secret)
        self.url = f"{server.url}/?thread={thread.thread_id}"
        self.result: dict[str, Any] = {
            "turns": thread.turns,
            "messages": thread.messages,
            "build_s": round(thread.build_s, 1),
            "errors": [],
        }
        self.tab: Tab | None = None

    # -- one interaction -----------------------------------------------------
    def _interact(
        self,
        tab: Tab,
        name: str,
        action: Callable[[], None],
        ready_js: str,
        ready_arg: Any,
        what: str,
        timeout_s: float | None = None,
        input_usable: bool = True,
    ) -> dict[str, Any]:
        """Time `action` until `ready_js(ready_arg)` holds ("ready"), and until the server
        has stopped running the page and, when `input_usable`, the chat input is usable
        ("settled"; a pending approval card disables the input on purpose)."""
        mark = tab.wire.mark()
        before = tab.wire.metrics()
        cpu = CpuClock(self.server.pid)
        t0 = time.monotonic()
        tab.act(action, what)
        ready = tab.wait(ready_js, ready_arg, what=what, timeout_s=timeout_s)
        idle = tab.settle(mark, what=what)
        usable = (
            tab.wait(contract.CHAT_INPUT_READY_JS, what="a usable chat input")
            if input_usable
            else idle
        )
        sample = {
            "ready_s": round(ready - t0, 3),
            "settled_s": round(max(ready, idle, usable) - t0, 3),
            "traffic": tab.wire.traffic(mark).as_dict(),
            "browser_main_thread_s": browser_time_delta(before, tab.wire.metrics()),
            **cpu.read(),
        }
        if self.opts.on_sample:
            self.opts.on_sample(
                self.thread.turns, name, {**sample, "t0": t0, "t_end": time.monotonic()}
            )
        return sample

    def _repeat(
        self, name: str, one: Callable[[int], dict[str, Any]], *, limit_s: float | None = None
    ) -> None:
        samples: list[dict[str, Any]] = []
        self.result[name] = {"samples": samples}
        for rep in range(self.opts.reps):
            try:
                sample = one(rep)
            except Timeout as exc:
                if limit_s is None:
                    raise
                sample = {"ready_s": None, "timeout": str(exc)}
            samples.append(sample)
            readies = [s["ready_s"] for s in samples]
            took = sample.get("settled_s") or sample.get("ready_s")
            _log(
                self.opts,
                f"{self.thread.turns} turns · {name} #{rep + 1}: "
                + (
                    f"{sample['ready_s']:.2f} s"
                    if sample.get("ready_s") is not None
                    else "over the limit"
                )
                + (
                    f" (settled {sample['settled_s']:.2f} s)"
                    if sample.get("settled_s") is not None
                    else ""
                ),
            )
            if limit_s is not None:
                over = sum(1 for r in readies if r is None or r > limit_s)
                if over > self.opts.reps // 2 or len(readies) - over > self.opts.reps // 2:
                    break  # the median's side of the limit is decided
            elif took is not None and took > self.opts.rep_budget_s:
                break

    # -- the measurements ----------------------------------------------------
    def warm_up(self) -> None:
        """Load the app once without a thread: static assets cached, the server's
        Session opened (as on a server someone already uses)."""
        tab = Tab(self.context, self.opts.timeout_s)
        mark = tab.wire.mark()
        tab.page.goto(self.server.url, wait_until="commit")
        tab.wait(contract.CHAT_INPUT_READY_JS, what="the chat input on the start page")
        tab.settle(mark, what="the start page")
        tab.close()

    def open(self) -> None:
        limit = self.opts.open_limit_s.get(self.thread.turns)
        marker = last_message_marker(self.thread.turns)

        def one(rep: int) -> dict[str, Any]:
            if self.tab is not None:
                self.tab.close()
                self.tab = None
            tab = Tab(self.context, self.opts.timeout_s)
            try:
                sample = self._interact(
                    tab,
                    "open",
                    lambda: tab.page.goto(self.url, wait_until="commit"),
                    contract.TEXT_VISIBLE_JS,
                    marker,
                    "the thread's last message",
                    timeout_s=limit,
                )
            except BaseException:
                tab.close()
                raise
            self.tab = tab
            return sample

        self._repeat("open", one, limit_s=limit)

    def _current_tab(self) -> Tab:
        if self.tab is None:
            tab = Tab(self.context, self.opts.timeout_s)
            mark = tab.wire.mark()
            tab.page.goto(self.url, wait_until="commit")
            tab.wait(
                contract.TEXT_VISIBLE_JS,
                last_message_marker(self.thread.turns),
                what="the last message",
            )
            tab.settle(mark, what="opening the thread")
            self.tab = tab
        return self.tab

    def page(self) -> None:
        tab = self._current_tab()
        metrics = tab.wire.metrics()
        self.result["page"] = {
            "dom_elements": tab.page.evaluate(contract.DOM_ELEMENTS_JS),
            "dom_nodes": int(metrics.get("Nodes", 0)),
            "js_heap_mb": round(metrics.get("JSHeapUsedSize", 0) / 2**20, 1),
            "js_heap_after_gc_mb": round(tab.wire.heap_after_gc() / 2**20, 1),
        }
        _log(self.opts, f"{self.thread.turns} turns · page: {self.result['page']}")
        if self.opts.screenshots:
            tab.screenshot(self.opts.screenshots / f"{self.thread.turns}-turns-top.png", "top")
            tab.screenshot(
                self.opts.screenshots / f"{self.thread.turns}-turns-bottom.png", "bottom"
            )

    def window_screenshots(self) -> None:
        """The windowed history in pictures: a fresh tab at the top of the window, the
        same after "show earlier", and the bottom."""
        tab = Tab(self.context, self.opts.timeout_s)
        try:
            mark = tab.wire.mark()
            tab.page.goto(self.url, wait_until="commit")
            # Not the built thread's last message: the measures before added turns, and
            # past the window's 8 it is no longer drawn (this waited out the timeout).
            tab.wait(contract.CHAT_INPUT_READY_JS, what="the chat input")
            tab.settle(mark, what="opening the thread")
            shots = self.opts.screenshots
            assert shots is not None
            tab.screenshot(shots / f"{self.thread.turns}-turns-window-top.png", "top")
            earlier = tab.page.get_by_role("button", name=contract.SHOW_EARLIER_NAME)
            if earlier.count():
                mark = tab.wire.mark()
                earlier.first.click()
                tab.settle(mark, what="showing earlier turns")
                tab.screenshot(shots / f"{self.thread.turns}-turns-show-earlier.png", "top")
            tab.screenshot(shots / f"{self.thread.turns}-turns-window-bottom.png", "bottom")
        finally:
            tab.close()

    def approve(self) -> None:
        tab = self._current_tab()
        sends: list[dict[str, Any]] = []
        approves: list[dict[str, Any]] = []
        self.result["send"] = {"samples": sends}
        self.result["approve"] = {"samples": approves}
        for rep in range(self.opts.reps):
            name = f"bench-r{rep}-{uuid.uuid4().hex[:8]}.md"
            tab.chat_input().fill(f"write {name}: a note from the benchmark")
            sends.append(
                self._interact(
                    tab,
                    "send",
                    lambda: tab.chat_input().press("Enter"),
                    contract.APPROVE_READY_JS,
                    None,
                    "a usable approve control",
                    input_usable=False,
                )
            )
            _log(
                self.opts,
                f"{self.thread.turns} turns · send #{rep + 1}: card usable in "
                f"{sends[-1]['ready_s']:.2f} s (settled {sends[-1]['settled_s']:.2f} s)",
            )
            if rep == 0 and self.opts.screenshots:
                tab.screenshot(
                    self.opts.screenshots / f"{self.thread.turns}-turns-approval.png", "bottom"
                )
            approves.append(
                self._interact(
                    tab,
                    "approve",
                    lambda: tab.approve_button().click(),
                    contract.TEXT_VISIBLE_JS,
                    contract.result_marker(name),
                    "the approved call's result",
                )
            )
            _log(
                self.opts,
                f"{self.thread.turns} turns · approve #{rep + 1}: result in "
                f"{approves[-1]['ready_s']:.2f} s (settled {approves[-1]['settled_s']:.2f} s)",
            )
            if max(sends[-1]["settled_s"], approves[-1]["settled_s"]) > self.opts.rep_budget_s:
                break
        if self.opts.screenshots:
            tab.screenshot(
                self.opts.screenshots / f"{self.thread.turns}-turns-approved.png", "bottom"
            )

    def stream(self) -> None:
        tab = self._current_tab()
        samples: list[dict[str, Any]] = []
        self.result["first_text"] = {"samples": samples, "model_first_token_after_s": FIRST_TOKEN_S}
        for rep in range(self.opts.reps):
            nonce = uuid.uuid4().hex[:10]
            marker = reply_marker(nonce)
            tab.chat_input().fill(f"{STREAM_PREFIX}{nonce}")
            tab.page.evaluate(contract.WATCH_TEXT_JS, marker)
            sent_at = time.time()
            sample = self._interact(
                tab,
                "first_text",
                lambda: tab.chat_input().press("Enter"),
                contract.SEEN_JS,
                marker,
                "the first streamed text",
            )
            seen = tab.page.evaluate(contract.SEEN_JS, marker)
            token = _first_token(self.server.token_log, nonce)
            visible = seen["frame"] / 1000
            sample.update(
                send_to_first_token_s=round(token - sent_at, 3) if token else None,
                send_to_visible_s=round(visible - sent_at, 3),
                lag_s=round(visible - token, 3) if token else None,
            )
            samples.append(sample)
            _log(
                self.opts,
                f"{self.thread.turns} turns · first text #{rep + 1}: visible "
                f"{sample['send_to_visible_s']:.2f} s after send, {sample['lag_s']} s after the model's first token",
            )
            if sample["settled_s"] > self.opts.rep_budget_s:
                break

    def live(self) -> None:
        """A decision made in one tab, shown in another left alone; then Stop."""
        tab = self._current_tab()
        other = Tab(self.context, self.opts.timeout_s)
        try:
            mark = other.wire.mark()
            other.page.goto(self.url, wait_until="commit")
            other.wait(contract.CHAT_INPUT_READY_JS, what="the second tab's chat input")
            other.settle(mark, what="opening the thread in a second tab")
            self.result["cross_tab"] = {"samples": self._cross_tab(tab, other)}
        finally:
            other.close()
        self.result["stop"] = {"samples": self._stop(tab)}

    def _cross_tab(self, tab: Tab, other: Tab) -> list[dict[str, Any]]:
        samples: list[dict[str, Any]] = []
        for rep in range(self.opts.reps):
            name = f"bench-live-{rep}-{uuid.uuid4().hex[:8]}.md"
            # The person works in the first tab (in front: a background tab's frames and
            # timers are throttled, which would delay the click itself by a second or
            # more), and the second shows what happened without being looked at.
            tab.page.bring_to_front()
            tab.chat_input().fill(f"write {name}: a note from the first tab")
            marks = tab.wire.mark(), other.wire.mark()
            sent = time.monotonic()
            tab.act(lambda: tab.chat_input().press("Enter"), "sending a gated request")
            tab.wait(contract.APPROVE_READY_JS, what="the approval card")
            # The second tab follows the pause without a click, too.
            paused = other.wait(contract.APPROVE_READY_JS, what="the card in the second tab")
            tab.settle(marks[0], what="the card")
            other.settle(marks[1], what="the card in the second tab")
            marks = tab.wire.mark(), other.wire.mark()
            result = contract.result_marker(name)
            # When the result enters the second tab's document (a mutation observer: not
            # slowed by the throttling of a tab in the background, as polling would be).
            other.page.evaluate(contract.WATCH_TEXT_JS, result)
            button = tab.approve_button()
            button.wait_for(state="visible")
            clicked = time.time()
            tab.act(button.click, "approving in the first tab")
            other.wait(contract.SEEN_JS, result, what="the result in the second tab")
            seen = other.page.evaluate(contract.SEEN_JS, result)
            other.settle(marks[1], what="the second tab after the decision")
            tab.settle(marks[0], what="the first tab after the decision")
            samples.append(
                {
                    "ready_s": round(seen["dom"] / 1000 - clicked, 3),
                    "pause_in_other_tab_s": round(paused - sent, 3),
                }
            )
            _log(
                self.opts,
                f"{self.thread.turns} turns · cross-tab #{rep + 1}: the result shows in the second "
                f"tab {samples[-1]['ready_s']:.2f} s after the click in the first",
            )
        return samples

    def _stop(self, tab: Tab) -> list[dict[str, Any]]:
        samples: list[dict[str, Any]] = []
        for rep in range(self.opts.reps):
            nonce = uuid.uuid4().hex[:10]
            tab.page.bring_to_front()
            tab.chat_input().fill(f"{LONG_PREFIX}{nonce}")
            tab.act(lambda: tab.chat_input().press("Enter"), "asking for a long reply")
            tab.wait(contract.TEXT_VISIBLE_JS, reply_marker(nonce), what="the reply streaming")
            tab.wait(contract.STOP_BUTTON_JS, what="the Stop button")
            mark = tab.wire.mark()
            t0 = time.monotonic()
            tab.act(tab.stop_button().click, "pressing Stop")
            ended = tab.wait(contract.STOP_GONE_JS, what="the run ended by Stop")
            tab.settle(mark, what="the page after Stop")
            last = f"token{LONG_CHUNKS - 1} "
            if tab.page.evaluate(contract.TEXT_VISIBLE_JS, last.strip()):
                raise Timeout("the long reply ran to its end: Stop did not stop it")
            samples.append({"ready_s": round(ended - t0, 3)})
            _log(
                self.opts,
                f"{self.thread.turns} turns · stop #{rep + 1}: the run ended "
                f"{samples[-1]['ready_s']:.2f} s after the click",
            )
        return samples

    def idle(self) -> None:
        """`idle_tabs` tabs open on the thread, loaded and left alone: CPU over idle_seconds."""
        tabs: list[Tab] = []
        try:
            started = time.monotonic()
            for _ in range(self.opts.idle_tabs):
                tab = Tab(self.context, self.opts.timeout_s)
                tabs.append(tab)
                mark = tab.wire.mark()
                tab.page.goto(self.url, wait_until="commit")
                # Not the built thread's last message: see `window_screenshots`.
                tab.wait(contract.CHAT_INPUT_READY_JS, what="the chat input")
                tab.settle(mark, what="opening the thread")
            loaded_s = time.monotonic() - started
            time.sleep(2.0)
            marks = [t.wire.mark() for t in tabs]
            cpu = CpuClock(self.server.pid)
            deadline = time.monotonic() + self.opts.idle_seconds
            while time.monotonic() < deadline:  # let Playwright deliver frames meanwhile
                tabs[0].page.wait_for_timeout(250)
            used = cpu.read()
            wall = used["wall_s"]
            frames = sum(t.wire.traffic(m).frames for t, m in zip(tabs, marks, strict=True))
            self.result["idle"] = {
                "tabs": len(tabs),
                "turns": self.thread.turns,
                "seconds": wall,
                "load_all_s": round(loaded_s, 1),
                "server_cpu_pct": round(100 * used["server_cpu_s"] / wall, 1),
                "browser_cpu_pct": round(100 * used["browser_cpu_s"] / wall, 1),
                "frames_received": frames,
            }
            _log(self.opts, f"{self.thread.turns} turns · idle: {self.result['idle']}")
        finally:
            for tab in tabs:
                tab.close()

    def close(self) -> None:
        if self.tab is not None:
            self.tab.close()
        self.context.close()


def _first_token(log: Path, nonce: str, wait_s: float = 5.0) -> float | None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if log.is_file():
            for line in log.read_text().splitlines():
                entry = json.loads(line)
                if entry.get("nonce") == nonce:
                    return float(entry["first_token"])
        time.sleep(0.05)
    return None


def measure_size(
    thread: BuiltThread, playwright: Any, opts: Options, *, idle: bool
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"gh-web-{thread.turns}-") as tmp:
        folder = Path(tmp)
        db = thread.copy_to(folder)
        with serve(db, folder, command=opts.server_command, extra_env=opts.extra_env) as server:
            browser = launch(playwright)
            run = SizeRun(thread, server, browser, opts)
            try:
                run.warm_up()
                steps = [m for m in MEASURES if m in opts.measures and (m != "idle" or idle)]
                for step in steps:
                    try:
                        getattr(run, step)()
                    except Exception as exc:  # noqa: BLE001 - recorded; the other sizes still run
                        reason = (
                            str(exc) if isinstance(exc, Timeout) else f"{type(exc).__name__}: {exc}"
                        )
                        reason = reason.strip().splitlines()[0]
                        run.result["errors"].append(f"{step}: {reason}")
                        _log(
                            opts,
                            f"{thread.turns} turns · {step}: {reason}; skipping the rest of this size",
                        )
                        break
                if opts.screenshots and not run.result["errors"]:
                    with contextlib.suppress(Exception):  # pictures only: never fails a size
                        run.window_screenshots()
            finally:
                summarize(run.result)
                with contextlib.suppress(Exception):  # a crashed page may refuse to close cleanly
                    run.close()
                with contextlib.suppress(Exception):
                    browser.close()
            return run.result


def summarize(result: dict[str, Any]) -> None:
    """Medians of every timing measured (also when a size stopped part-way)."""
    for name in ("open", "send", "approve", "cross_tab", "stop"):
        part = result.get(name)
        if part is not None:
            part["median_s"] = median([s.get("ready_s") for s in part["samples"]])
            part["settled_median_s"] = median([s.get("settled_s") for s in part["samples"]])
    if result.get("first_text") is not None:
        part = result["first_text"]
        part["lag_median_s"] = (
            median([s.get("lag_s") for s in part["samples"]]) if part["samples"] else None
        )


def run_benchmark(
    opts: Options, on_size: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """Every size in turn; `on_size(results so far)` after each (to save partial results)."""
    from playwright.sync_api import sync_playwright

    sizes = sorted(set(opts.sizes))
    idle_size = opts.idle_size if opts.idle_size is not None else sizes[0]
    threads = {
        n: cached_thread(n, opts.cache, progress=opts.progress)
        for n in sorted(set(sizes) | {idle_size})
    }
    results: dict[str, Any] = {}
    with sync_playwright() as p:
        for n in sizes:
            started = time.monotonic()
            _log(opts, f"{n} turns ({threads[n].messages} messages): measuring ...")
            results[str(n)] = measure_size(threads[n], p, opts, idle=n == idle_size)
            results[str(n)]["wall_s"] = round(time.monotonic() - started, 1)
            if on_size is not None:
                on_size(results)
        if "idle" in opts.measures and idle_size not in sizes:
            only = Options(**{**opts.__dict__, "measures": ("idle",)})
            results.setdefault(
                "idle", measure_size(threads[idle_size], p, only, idle=True).get("idle")
            )
    return results

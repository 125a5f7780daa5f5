"""What the harness reads besides the DOM: the WebSocket, Chromium's counters, CPU.

Streamlit talks to the page over one WebSocket of protobuf `ForwardMsg`s. Every
frame the page receives is captured through CDP (`Network.webSocketFrameReceived`)
and decoded with Streamlit's own protobuf classes, which tells us per interaction:
the bytes sent to the browser, and the script runs the click caused (a run starts
with `new_session` and ends with `script_finished`, whose status says whether it
ended early for a rerun; both name the fragments a fragment run ran). Runs of
fragments the server asked the page to rerun on a timer (`auto_rerun`, i.e.
`st.fragment(run_every=...)`) are polls: counted apart, and they do not keep a page
from counting as settled. CDP timestamps are CLOCK_MONOTONIC, the clock of Python's
`time.monotonic()` on Linux, so frame times and the harness's own times compare.
"""

from __future__ import annotations

import base64
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import psutil
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

EARLY_FOR_RERUN = ForwardMsg.FINISHED_EARLY_FOR_RERUN


@dataclass(frozen=True)
class Frame:
    ts: float  # monotonic seconds
    size: int
    kind: str  # the ForwardMsg's type ("delta", "new_session", ...), "?" if undecodable
    status: int | None = None  # of a script_finished
    fragments: tuple[str, ...] = ()  # of a new_session / script_finished: the fragment run's ids


@dataclass
class Traffic:
    """The frames of one interaction, summed."""

    bytes: int = 0
    frames: int = 0
    deltas: int = 0
    runs: int = 0  # script runs started (full page and fragment), polls not included
    fragment_runs: int = 0
    reruns: int = 0  # runs that ended early because another run was requested
    polls: int = 0  # runs of fragments on a timer (st.fragment(run_every=...))
    script_s: float = 0.0  # sum of run durations, new_session -> script_finished (no polls)
    run_s: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "bytes": self.bytes,
            "frames": self.frames,
            "deltas": self.deltas,
            "runs": self.runs,
            "fragment_runs": self.fragment_runs,
            "reruns": self.reruns,
            "polls": self.polls,
            "script_s": round(self.script_s, 3),
            "run_s": [round(s, 3) for s in self.run_s],
        }


def decode(payload: bytes, ts: float) -> tuple[Frame, str | None]:
    """The frame, and the fragment id an `auto_rerun` message puts on a timer."""
    msg = ForwardMsg()
    try:
        msg.ParseFromString(payload)
    except Exception:  # noqa: BLE001 - a frame we cannot read still counts its bytes
        return Frame(ts, len(payload), "?"), None
    kind = msg.WhichOneof("type") or "?"
    fragments = tuple(msg.metadata.run.fragment_ids)
    if kind == "script_finished":
        return Frame(
            ts, len(payload), kind, status=int(msg.script_finished), fragments=fragments
        ), None
    if kind == "new_session":
        return Frame(ts, len(payload), kind, fragments=fragments), None
    if kind == "auto_rerun":
        return Frame(ts, len(payload), kind), msg.auto_rerun.fragment_id
    return Frame(ts, len(payload), kind), None


class Wire:
    """The page's WebSocket frames and Chromium's performance counters, through CDP."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.cdp = page.context.new_cdp_session(page)
        self.frames: list[Frame] = []
        self.timed_fragments: set[str] = set()
        self.cdp.on("Network.webSocketFrameReceived", self._received)
        self.cdp.send("Network.enable")
        self.cdp.send("Performance.enable", {"timeDomain": "threadTicks"})

    def _received(self, params: dict[str, Any]) -> None:
        response = params["response"]
        binary = response.get("opcode") == 2
        data = (
            base64.b64decode(response["payloadData"])
            if binary
            else response["payloadData"].encode()
        )
        self.add(*decode(data, float(params["timestamp"])))

    def add(self, frame: Frame, timed_fragment: str | None = None) -> None:
        if timed_fragment:
            self.timed_fragments.add(timed_fragment)
        self.frames.append(frame)

    def is_poll(self, frame: Frame) -> bool:
        return bool(frame.fragments) and set(frame.fragments) <= self.timed_fragments

    def mark(self) -> int:
        return len(self.frames)

    def traffic(self, mark: int) -> Traffic:
        t = Traffic()
        started: float | None = None
        for f in self.frames[mark:]:
            t.bytes += f.size
            t.frames += 1
            if f.kind == "delta":
                t.deltas += 1
            elif f.kind == "new_session":
                if self.is_poll(f):
                    t.polls += 1
                    continue
                t.runs += 1
                t.fragment_runs += bool(f.fragments)
                started = f.ts
            elif f.kind == "script_finished" and not self.is_poll(f):
                t.reruns += f.status == EARLY_FOR_RERUN
                if started is not None:
                    t.run_s.append(f.ts - started)
                    t.script_s += f.ts - started
                    started = None
        return t

    def idle_at(self, mark: int) -> float | None:
        """When the server last finished running the page, if it has since `mark`:
        the time of the last `script_finished` that did not hand over to a rerun,
        provided a run started after `mark` and none is running now. Polls are left
        out, unless nothing but polls ran since `mark`."""
        lifecycle = [f for f in self.frames[mark:] if f.kind in ("new_session", "script_finished")]
        own = [f for f in lifecycle if not self.is_poll(f)]
        runs = own if any(f.kind == "new_session" for f in own) else lifecycle
        if not any(f.kind == "new_session" for f in runs):
            return None
        last = runs[-1]
        if last.kind == "script_finished" and last.status != EARLY_FOR_RERUN:
            return last.ts
        return None

    def metrics(self) -> dict[str, float]:
        """Chromium's counters for this page (`Performance.getMetrics`)."""
        got = self.cdp.send("Performance.getMetrics")
        return {m["name"]: float(m["value"]) for m in got["metrics"]}

    def heap_after_gc(self) -> float:
        self.cdp.send("HeapProfiler.collectGarbage")
        return self.metrics()["JSHeapUsedSize"]

    def close(self) -> None:
        with contextlib.suppress(Exception):  # the page may be gone already
            self.cdp.detach()


# Browser-side time split of an interaction: deltas of these cumulative counters.
BROWSER_TIMES = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")


def browser_time_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: round(after.get(name, 0.0) - before.get(name, 0.0), 3) for name in BROWSER_TIMES}


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes (gone ones count 0)."""
    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def browser_pids() -> list[int]:
    """Chromium's processes, started (through Playwright's driver) by this process."""
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "chrom" in p.name():
                out.append(p.pid)
        except psutil.Error:
            continue
    return out


def server_pids(pid: int) -> list[int]:
    try:
        return [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return [pid]


class CpuClock:
    """CPU seconds of the server and of the browser between two points."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.start()

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.server0 = cpu_seconds(server_pids(self.server_pid))
        self.browser0 = cpu_seconds(browser_pids())

    def read(self) -> dict[str, float]:
        return {
            "wall_s": round(time.monotonic() - self.t0, 3),
            "server_cpu_s": round(cpu_seconds(server_pids(self.server_pid)) - self.server0, 3),
            "browser_cpu_s": round(cpu_seconds(browser_pids()) - self.browser0, 3),
        }

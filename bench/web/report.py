"""The benchmark's table (rows: measurements, columns: thread lengths) and its JSON."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any


def _s(v: float | None) -> str:
    return "timeout" if v is None else (f"{v:.2f}" if v < 10 else f"{v:.1f}")


def _kb(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1024:.0f} KB" if v < 2**20 else f"{v / 2**20:.2f} MB"


def _med(samples: list[dict[str, Any]], *path: str) -> float | None:
    values = []
    for s in samples:
        v: Any = s
        for key in path:
            v = v.get(key) if isinstance(v, dict) else None
        if v is not None:
            values.append(float(v))
    if not values:
        return None
    values.sort()
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def rows(sizes: dict[str, Any]) -> list[tuple[str, list[str]]]:
    def part(size: dict[str, Any], name: str) -> dict[str, Any]:
        return size.get(name) or {}

    def timing(name: str, key: str = "median_s") -> list[str]:
        out = []
        for size in sizes.values():
            p = part(size, name)
            n = len(p.get("samples", []))
            out.append("-" if not p else f"{_s(p.get(key))}" + (f" (n={n})" if n and n < 3 else ""))
        return out

    def sample_med(name: str, *path: str, fmt: Any = _s) -> list[str]:
        out = []
        for size in sizes.values():
            samples = part(size, name).get("samples", [])
            out.append(fmt(_med(samples, *path)) if samples else "-")
        return out

    def page(key: str, fmt: Any) -> list[str]:
        return [fmt(part(size, "page").get(key)) if part(size, "page") else "-" for size in sizes.values()]

    def runs(name: str) -> list[str]:
        out = []
        for size in sizes.values():
            samples = part(size, name).get("samples", [])
            r, rr = _med(samples, "traffic", "runs"), _med(samples, "traffic", "reruns")
            out.append("-" if r is None else f"{r:.0f} ({rr:.0f} by st.rerun)")
        return out

    def main_thread(name: str) -> list[str]:
        out = []
        for size in sizes.values():
            samples = part(size, name).get("samples", [])
            if not samples:
                out.append("-")
                continue
            vals = [_med(samples, "browser_main_thread_s", k) for k in
                    ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")]
            out.append(" / ".join(_s(v) for v in vals))
        return out

    def idle(key: str) -> list[str]:
        out = []
        for size in sizes.values():
            i = size.get("idle")
            out.append(f"{i[key]:.1f} % ({i['tabs']} tabs)" if i else "-")
        return out

    return [
        ("open `?thread=ID` until the last message shows, s", timing("open")),
        ("open until settled (no script running, input usable), s", timing("open", "settled_median_s")),
        ("send a gated request until the approve control is usable, s", timing("send")),
        ("approve until the tool result shows, s", timing("approve")),
        ("approve until settled (chat input usable), s", timing("approve", "settled_median_s")),
        ("first streamed text in the page after the model's first token, s",
         sample_med("first_text", "lag_s")),
        ("DOM elements / nodes", [f"{part(s, 'page').get('dom_elements', '-')} / {part(s, 'page').get('dom_nodes', '-')}"
                                  if part(s, "page") else "-" for s in sizes.values()]),
        ("JS heap after open, MB (after GC)", [f"{part(s, 'page')['js_heap_mb']} ({part(s, 'page')['js_heap_after_gc_mb']})"
                                               if part(s, "page") else "-" for s in sizes.values()]),
        ("bytes to the browser: open", sample_med("open", "traffic", "bytes", fmt=_kb)),
        ("bytes to the browser: send", sample_med("send", "traffic", "bytes", fmt=_kb)),
        ("bytes to the browser: approve", sample_med("approve", "traffic", "bytes", fmt=_kb)),
        ("script runs per send (of them ended by a rerun)", runs("send")),
        ("script runs per approve", runs("approve")),
        ("server time in script runs per approve, s", sample_med("approve", "traffic", "script_s")),
        ("server CPU per approve, s", sample_med("approve", "server_cpu_s")),
        ("browser CPU per approve, s (all processes)", sample_med("approve", "browser_cpu_s")),
        ("browser main thread per approve: task / script / layout / style, s", main_thread("approve")),
        ("browser main thread per open: task / script / layout / style, s", main_thread("open")),
        ("server CPU with idle tabs open", idle("server_cpu_pct")),
        ("browser CPU with idle tabs open", idle("browser_cpu_pct")),
    ]


def table(sizes: dict[str, Any]) -> str:
    header = "| turns (messages) | " + " | ".join(f"{k} ({v['messages']})" for k, v in sizes.items()) + " |"
    lines = [header, "|---|" + "---:|" * len(sizes)]
    for label, cells in rows(sizes):
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def environment(command: str) -> dict[str, Any]:
    return {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.platform()} ({os.cpu_count()} CPUs, Python {platform.python_version()})",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "command": command,
    }


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")

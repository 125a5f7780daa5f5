"""Where the time of an interaction goes: `python -m bench.web --profile --sizes 200`.

Two passes per size, each on a fresh server (bench/web/timed_server.py, which is
`gatehouse ui` with every Streamlit script run logged) and a fresh browser:

1. timing: open, send and approve as the benchmark does them. Each interaction
   gets the server's script runs inside it (wall and CPU seconds, how each ended,
   Streamlit's after-run cleanup with its gc.collect), beside the browser's side
   (Chromium's main-thread Task/Script/Layout/RecalcStyle time) and its bytes;
2. call profile: the same interactions once more with each script run under
   cProfile (wall clock: waits show as time too); per interaction, self time by
   package and the costliest functions of the app and of Streamlit. With
   `--cpu-profile` the profiler counts the run thread's CPU time instead (compare
   runs on a busy machine by that: wall time there is mostly other processes').
cProfile slows Python down, so pass 2's seconds are only for comparing shares.

With `--no-status-sleep`, a third pass repeats pass 1 with the 50 ms sleep inside
Streamlit's `st.status` removed (a what-if; see timed_server.py): what is left is
what drawing the same page costs the server and the browser without that sleep.
"""

from __future__ import annotations

import json
import pstats
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.web.build import ROOT, cached_thread
from bench.web.measure import Options, measure_size
from bench.web.report import environment, write
from bench.web.timed_server import (
    CPROFILE_CLOCK_ENV,
    CPROFILE_ENV,
    NO_STATUS_SLEEP_ENV,
    RUNLOG_ENV,
)

SLACK_S = 0.05


def _window(entries: list[dict[str, Any]], t0: float, t_end: float) -> list[dict[str, Any]]:
    return [
        e for e in entries if e.get("end", 0) >= t0 - SLACK_S and e.get("end", 0) <= t_end + SLACK_S
    ]


def _runs(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []


def _package(filename: str, func: str) -> str:
    if filename == "~":  # a builtin: waits are told apart from work
        return (
            "waiting (locks, sleeps)"
            if any(w in func for w in ("acquire", "sleep", "wait"))
            else "builtins"
        )
    path = filename.replace("\\", "/")
    if path.startswith(str(ROOT)) and "/.venv/" not in path:
        return path[len(str(ROOT)) + 1 :].split("/")[0] + "/ (Gatehouse)"
    for marker in ("site-packages/", "lib/python3"):
        if marker in path:
            rest = path.split(marker, 1)[1].lstrip("/")
            top = rest.split("/")[0]
            return "stdlib" if marker == "lib/python3" else top
    return "other"


def summarize_profiles(files: list[str], top: int = 15) -> dict[str, Any]:
    stats = pstats.Stats(*files)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    by_package: dict[str, float] = {}
    rows = []
    for (filename, line, func), (_cc, calls, self_s, cum_s, _callers) in raw.items():
        pkg = _package(filename, func)
        by_package[pkg] = by_package.get(pkg, 0.0) + self_s
        where = (
            filename
            if filename == "~"
            else f"{Path(filename).parent.name}/{Path(filename).name}:{line}"
        )
        rows.append(
            {
                "function": f"{where} {func}",
                "package": pkg,
                "calls": calls,
                "self_s": round(self_s, 3),
                "cum_s": round(cum_s, 3),
            }
        )
    app = [r for r in rows if r["package"].endswith("(Gatehouse)")]
    return {
        "self_s_by_package": {
            k: round(v, 3) for k, v in sorted(by_package.items(), key=lambda kv: -kv[1])
        },
        "top_self": sorted(rows, key=lambda r: -r["self_s"])[:top],
        "top_cumulative_gatehouse": sorted(app, key=lambda r: -r["cum_s"])[:top],
        "top_cumulative": sorted(rows, key=lambda r: -r["cum_s"])[: 3 * top],
    }


PASSES = ("timing", "cprofile", "no_status_sleep")


def _profile_size(
    turns: int, opts: Options, what_if: bool, cpu_clock: bool = False
) -> dict[str, Any]:
    thread = cached_thread(turns, opts.cache, progress=opts.progress)
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {"turns": turns, "messages": thread.messages}
    with tempfile.TemporaryDirectory(prefix="gh-web-profile-") as tmp, sync_playwright() as p:
        for pass_name in PASSES:
            if pass_name == "no_status_sleep" and not what_if:
                continue
            profiled = pass_name == "cprofile"
            log = Path(tmp) / f"runs-{pass_name}.jsonl"
            prof_dir = Path(tmp) / f"prof-{pass_name}"
            prof_dir.mkdir()
            windows: list[tuple[str, dict[str, Any]]] = []

            def seen(
                _turns: int, name: str, sample: dict[str, Any], windows: list[Any] = windows
            ) -> None:
                windows.append((name, sample))

            env = {RUNLOG_ENV: str(log)}
            if profiled:
                env[CPROFILE_ENV] = str(prof_dir)
                if cpu_clock:
                    env[CPROFILE_CLOCK_ENV] = "cpu"
            if pass_name == "no_status_sleep":
                env[NO_STATUS_SLEEP_ENV] = "1"
            pass_opts = Options(
                **{
                    **opts.__dict__,
                    "reps": 1 if profiled else opts.reps,
                    "measures": ("open", "page", "approve"),
                    "screenshots": None,
                    "server_command": [sys.executable, "-m", "bench.web.timed_server"],
                    "extra_env": env,
                    "on_sample": seen,
                }
            )
            result = measure_size(thread, p, pass_opts, idle=False)
            entries = _runs(log)
            interactions = []
            for name, sample in windows:
                inside = _window(entries, sample["t0"], sample["t_end"])
                runs = [e for e in inside if "run" in e]
                item: dict[str, Any] = {
                    "interaction": name,
                    "ready_s": sample["ready_s"],
                    "settled_s": sample["settled_s"],
                    "server_runs": [
                        {
                            "wall_s": round(e["end"] - e["start"], 3),
                            "cpu_s": e["cpu_s"],
                            "outcome": e["outcome"],
                            "fragment": e["fragment"],
                        }
                        for e in runs
                    ],
                    "server_run_wall_s": round(sum(e["end"] - e["start"] for e in runs), 3),
                    "server_run_cpu_s": round(sum(e["cpu_s"] for e in runs), 3),
                    "server_cleanup_s": round(sum(e.get("cleanup_s", 0) for e in inside), 3),
                    "browser_main_thread_s": sample["browser_main_thread_s"],
                    "bytes": sample["traffic"]["bytes"],
                    "deltas": sample["traffic"]["deltas"],
                }
                if profiled:
                    files = [e["prof"] for e in runs if e.get("prof")]
                    if files:
                        item["cprofile"] = summarize_profiles(files)
                interactions.append(item)
            out[pass_name] = {
                "interactions": interactions,
                "errors": result["errors"],
                "page": result.get("page"),
            }
    return out


def _print_timing(title: str, interactions: list[dict[str, Any]]) -> None:
    print(title)
    for item in interactions:
        b = item["browser_main_thread_s"]
        runs = ", ".join(
            f"{r['wall_s']:.2f} s wall / {r['cpu_s']:.2f} s CPU ({r['outcome']})"
            for r in item["server_runs"]
        )
        print(
            f"{item['interaction']}: ready {item['ready_s']:.2f} s, settled {item['settled_s']:.2f} s; "
            f"server runs: {runs}; cleanup {item['server_cleanup_s']:.2f} s; "
            f"browser main thread: task {b['TaskDuration']:.2f} s, script {b['ScriptDuration']:.2f} s, "
            f"layout {b['LayoutDuration']:.2f} s, style {b['RecalcStyleDuration']:.2f} s; "
            f"{item['bytes'] / 1024:.0f} KB in {item['deltas']} deltas"
        )


def _print(result: dict[str, Any]) -> None:
    print(f"\n== {result['turns']} turns ({result['messages']} messages) ==")
    _print_timing("timing (gatehouse ui, script runs logged):", result["timing"]["interactions"])
    if "no_status_sleep" in result:
        _print_timing(
            "\nwhat-if: st.status without its 50 ms sleep:",
            result["no_status_sleep"]["interactions"],
        )
    for item in result["cprofile"]["interactions"]:
        prof = item.get("cprofile")
        if not prof:
            continue
        print(
            f"\n{item['interaction']} under cProfile ({item['server_run_wall_s']:.2f} s wall, "
            f"{item['server_run_cpu_s']:.2f} s CPU of script runs):"
        )
        print(
            "  self time by package: "
            + ", ".join(f"{k} {v:.2f} s" for k, v in list(prof["self_s_by_package"].items())[:8])
        )
        print("  Gatehouse functions by cumulative time:")
        for r in prof["top_cumulative_gatehouse"][:10]:
            print(f"    {r['cum_s']:7.2f} s  {r['calls']:6d} calls  {r['function']}")
        print("  all functions by cumulative time:")
        for r in prof["top_cumulative"][:30]:
            print(f"    {r['cum_s']:7.2f} s  {r['calls']:6d} calls  {r['function']}")
        print("  top self time:")
        for r in prof["top_self"][:10]:
            print(f"    {r['self_s']:7.2f} s  {r['calls']:6d} calls  {r['function']}")


def run_profile(
    opts: Options, out: Path, command: str, *, what_if: bool = False, cpu_clock: bool = False
) -> int:
    data: dict[str, Any] = {"environment": environment(command), "sizes": {}}
    for turns in opts.sizes:
        data["sizes"][str(turns)] = _profile_size(turns, opts, what_if, cpu_clock)
        _print(data["sizes"][str(turns)])
    write(out, data)
    print(f"\nwrote {out}")
    return 0

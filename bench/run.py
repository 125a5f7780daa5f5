"""Gatehouse against its peer on long threads, in one run: the one benchmark command.

    uv run python -m bench.run                 # N = 50, 200, 400 + cold paths (about 15 minutes)
    uv run python -m bench.run --quick         # N = 10, 20 (a couple of minutes)
    uv run python -m bench.run --cold-only     # only the cold paths (bench/cold.py) and warm turns in
                                               #   lockstep (bench/lockstep.py)

Each system runs in its own fresh process, one after another (never in parallel):
- `gatehouse`: Gatehouse on its default storage (SQLite, DeltaChannel messages,
  the warm history cache), through its Session API;
- `peer`: `langchain.agents.create_agent` + `HumanInTheLoopMiddleware` + `SqliteSaver`;
- `gatehouse-baseline`: Gatehouse before issue 8 (`add_messages` channel), to
  `--baseline-turns` turns only (it grows as fast as the peer).
One thread of max(N) turns per system; the metrics for each N are taken when that
thread reaches turn N. Then `bench.micro` (thread index, event pipeline, cold start,
idle memory) and `bench.real_client` (opens and a big streamed tool call through the
real ChatOpenAI against a local OpenAI-wire server), then `bench.cold` (a thread resumed by id in a fresh process, first
reads, the terminal client; SQLite and Postgres). Writes bench/results/results.json,
bench/results/long_thread.png, bench/results/cold_paths.png and the results section
of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- bench:results:begin -->"
END = "<!-- bench:results:end -->"


def _python(module: str, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=env, check=True)


def run_system(system: str, turns: int, milestones: list[int], tmp: Path) -> dict[str, Any]:
    out = tmp / f"{system}.json"
    started = time.perf_counter()
    print(f"[bench] {system}: {turns} turns ...", flush=True)
    _python(
        "bench.workload",
        "--system",
        system,
        "--turns",
        str(turns),
        "--milestones",
        ",".join(map(str, milestones)),
        "--out",
        str(out),
    )
    result = json.loads(out.read_text())
    print(f"[bench] {system}: done in {time.perf_counter() - started:.0f} s", flush=True)
    return result


# -- report ------------------------------------------------------------------------
def _mb(n: float) -> str:
    return f"{n / 2**20:.2f}" if n < 10 * 2**20 else f"{n / 2**20:.0f}"


def table(results: dict[str, Any]) -> str:
    rows = [
        "| system | N | msgs | per-turn ms, turns 1-10 | per-turn ms, last 10 | CPU ms/turn, last 10 "
        "| resume ms, last 10 | DB MB | get_state ms (cold) | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for system, res in results["systems"].items():
        for n, at in sorted(res["at"].items(), key=lambda kv: int(kv[0])):
            rows.append(
                f"| {system} | {n} | {at['messages']} | {at['per_turn_ms_first10']:.1f} | {at['per_turn_ms_last10']:.1f} "
                f"| {at['per_turn_cpu_ms_last10']:.1f} | {at['resume_ms_last10']:.1f} | {_mb(at['db_bytes'])} "
                f"| {at['get_state_ms']:.2f} ({at.get('get_state_cold_ms', at['get_state_ms']):.1f}) | {at['peak_rss_mb']:.0f} |"
            )
    return "\n".join(rows)


def targets(results: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, passed); passed is None when this run cannot tell."""
    g = results["systems"].get("gatehouse", {}).get("at", {})
    p = results["systems"].get("peer", {}).get("at", {})
    m = results.get("micro", {})
    out: list[tuple[str, str, bool | None]] = []

    def check(name: str, measured: str, ok: bool | None) -> None:
        out.append((name, measured, ok))

    ns = sorted(g, key=int)
    mid = "200" if "200" in g else (ns[-2] if len(ns) >= 2 else (ns[-1] if ns else None))
    later = [n for n in ns if mid and int(n) > int(mid)]
    last = later[-1] if later else None
    if mid and mid in p:
        ratio = p[mid]["db_bytes"] / g[mid]["db_bytes"]
        check(
            f"DB size at {mid} turns <= 1/50 of peer",
            f"1/{ratio:.0f} ({_mb(g[mid]['db_bytes'])} MB vs {_mb(p[mid]['db_bytes'])} MB)",
            ratio >= 50,
        )
    if mid and last:
        growth, limit = g[last]["db_bytes"] / g[mid]["db_bytes"], 1.15 * int(last) / int(mid)
        check(
            f"DB size at {last} turns <= {limit:.1f} x size at {mid} (linear)",
            f"{growth:.2f} x",
            growth <= limit,
        )
    if mid:
        first, at_mid = g[mid]["per_turn_ms_first10"], g[mid]["per_turn_ms_last10"]
        check(
            f"per-turn ms at turn {mid} <= 1.5 x at turn 10",
            f"{at_mid:.1f} vs {first:.1f} ms ({at_mid / first:.2f} x)",
            at_mid <= 1.5 * first,
        )
        cpu_first, cpu_mid = g[mid]["per_turn_cpu_ms_first10"], g[mid]["per_turn_cpu_ms_last10"]
        check(
            "  same, in CPU time (robust to a busy machine)",
            f"{cpu_mid:.1f} vs {cpu_first:.1f} ms ({cpu_mid / cpu_first:.2f} x)",
            cpu_mid <= 1.5 * cpu_first,
        )
        if mid in p:
            pt = p[mid]["per_turn_ms_last10"]
            check(
                f"per-turn ms at turn {mid} <= 1/4 of peer",
                f"{at_mid:.1f} vs {pt:.1f} ms (1/{pt / at_mid:.1f})",
                at_mid * 4 <= pt,
            )
            gr, pr = g[mid]["resume_ms_last10"], p[mid]["resume_ms_last10"]
            check(
                f"resume at turn {mid} <= 1/4 of peer",
                f"{gr:.1f} vs {pr:.1f} ms (1/{pr / gr:.1f})",
                gr * 4 <= pr,
            )
    if m:
        check(
            "list 1,000 threads <= 50 ms", f"{m['index_list_ms']:.2f} ms", m["index_list_ms"] <= 50
        )
        check(
            "event pipeline: first text event <= +10 ms",
            f"+{m['first_text_overhead_ms']:.2f} ms",
            m["first_text_overhead_ms"] <= 10,
        )
        check(
            "event pipeline: <= 50 us per streamed token",
            f"{m['per_token_overhead_us']:.1f} us ({m['tokens']} tokens)",
            m["per_token_overhead_us"] <= 50,
        )
        floor = m.get("framework_floor_s")
        extra = (
            f" (importing LangGraph + LangChain alone: {floor:.2f} s; the peer: {m['peer_cold_start_s']:.2f} s)"
            if floor
            else ""
        )
        check(
            "cold start (import + build default graph) <= 1.5 s",
            f"{m['cold_start_s']:.2f} s{extra}",
            m["cold_start_s"] <= 1.5,
        )
        if floor:
            own = m["cold_start_s"] - floor
            check("  Gatehouse's own share (cold start - framework imports)", f"{own:.2f} s", None)
        check(
            f"{m['idle_threads']} idle threads < 250 MB RSS",
            f"{m['idle_threads_rss_mb']:.0f} MB ({m['idle_turns_each']} turns each)",
            m["idle_threads_rss_mb"] < 250,
        )
    return out


def _verdict(ok: bool | None) -> str:
    return "pass" if ok else "FAIL" if ok is not None else "info"


def markdown(results: dict[str, Any], plot: str | None, cold_plot: str | None = None) -> str:
    env = results["environment"]
    lines = [
        f"Run {env['date']} on {env['machine']} ({env['cpus']} CPUs, Python {env['python']}), "
        f"load average at start {env['load_before']}, at end {env.get('load_after', '?')}; "
        f"command: `{env['command']}`; total {env.get('total_s', 0):.0f} s.",
    ]
    if results["systems"]:
        lines += ["", table(results), "", "| target | measured | result |", "|---|---|---|"]
        for name, measured, ok in targets(results):
            lines.append(f"| {name} | {measured} | {_verdict(ok)} |")
    if plot and results["systems"]:
        lines += ["", f"![per-turn ms and database size against turn]({plot})"]
    if results.get("micro"):
        m = results["micro"]
        lines += [
            "",
            f"Event pipeline detail: first text event {m['first_text_bare_ms']:.1f} ms bare vs "
            f"{m['first_text_session_ms']:.1f} ms through Session; a {m['tokens']}-token reply "
            f"{m['run_bare_ms']:.0f} ms bare vs {m['run_session_ms']:.0f} ms through Session.",
        ]
    if results.get("real_client"):
        from bench import real_client

        lines += [
            "",
            "### A real client (bench/real_client.py)",
            "",
            real_client.table(results["real_client"]),
        ]
    if results.get("cold"):
        from bench import cold

        c = results["cold"]
        lines += [
            "",
            "### Cold paths (bench/cold.py)",
            "",
            f"Load average before the cold phase: {c.get('load_before', '?')}, "
            f"after: {c.get('load_after', '?')}.",
            "",
            cold.table(c),
        ]
        if c.get("terminal"):
            lines += ["", cold.terminal_table(c)]
        lines += ["", "| target | measured | result |", "|---|---|---|"]
        for name, measured, ok in cold.targets(c):
            lines.append(f"| {name} | {measured} | {_verdict(ok)} |")
        if cold_plot:
            lines += ["", f"![cold resume and first read against thread length]({cold_plot})"]
    if results.get("lockstep"):
        from bench import lockstep

        ls = results["lockstep"]
        lines += [
            "",
            "### Warm per turn in lockstep (bench/lockstep.py)",
            "",
            f"Load average at the end: {ls.get('load', '?')}.",
            "",
            lockstep.table(ls),
            "",
            "| target | measured | result |",
            "|---|---|---|",
        ]
        lines += [
            f"| {name} | {measured} | {_verdict(ok)} |"
            for name, measured, ok in lockstep.targets(ls)
        ]
    return "\n".join(lines)


def write_markdown(path: Path, body: str) -> None:
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{BEGIN}\n{body}\n{END}"
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + block + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip() + "\n\n## Latest run\n\n" + block + "\n"
    path.write_text(text)


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for system, res in results["systems"].items():
        turns = list(range(1, len(res["turn_ms"]) + 1))
        ax1.plot(turns, res["turn_ms"], label=system, linewidth=0.8)
        ax2.plot(turns, [b / 2**20 for b in res["db_bytes"]], label=system)
    ax1.set(
        xlabel="turn",
        ylabel="ms per turn (message + approval + answer)",
        title="Per-turn time",
        yscale="log",
    )
    ax2.set(xlabel="turn", ylabel="database MB (SQLite pages)", title="Database size", yscale="log")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--turns",
        default="50,200,400",
        help="N values: one thread of max(N) turns, measured at each N",
    )
    parser.add_argument(
        "--baseline-turns", type=int, default=200, help="turns for gatehouse-baseline (0: skip)"
    )
    parser.add_argument("--quick", action="store_true", help="N = 10,20 and short micro-benchmarks")
    parser.add_argument("--no-micro", action="store_true")
    parser.add_argument(
        "--no-cold", action="store_true", help="skip the cold paths (bench/cold.py)"
    )
    parser.add_argument(
        "--cold-only",
        action="store_true",
        help="only the cold paths and warm turns in lockstep (bench/cold.py, bench/lockstep.py)",
    )
    parser.add_argument(
        "--cold-turns", default="200,400,2000", help="thread lengths for the cold paths (Gatehouse)"
    )
    parser.add_argument(
        "--cold-peer-turns", default="200,400", help="thread lengths for the cold paths (peer)"
    )
    parser.add_argument("--no-postgres", action="store_true", help="cold paths on SQLite only")
    parser.add_argument(
        "--no-lockstep",
        action="store_true",
        help="skip warm per turn in lockstep (bench/lockstep.py)",
    )
    parser.add_argument(
        "--lockstep-turns", default="10,200", help="thread lengths for the lockstep figures"
    )
    parser.add_argument(
        "--results",
        default=str(ROOT / "bench" / "results"),
        help="directory for results.json and the PNG",
    )
    parser.add_argument("--markdown", default=str(ROOT / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    if args.quick and args.turns == parser.get_default("turns"):
        args.turns = "10,20"
    if args.quick and args.baseline_turns == parser.get_default("baseline_turns"):
        args.baseline_turns = 20
    if args.quick and args.cold_turns == parser.get_default("cold_turns"):
        args.cold_turns, args.cold_peer_turns = "3,6", "3,6"
    milestones = sorted({int(x) for x in args.turns.split(",") if x})
    results_dir = Path(args.results)
    results_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "environment": {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_before": " ".join(f"{x:.1f}" for x in os.getloadavg()),
            "command": "uv run python -m bench.run "
            + " ".join(argv if argv is not None else sys.argv[1:]),
        },
        "systems": {},
    }
    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as name:
        tmp = Path(name)
        if not args.cold_only:
            results["systems"]["gatehouse"] = run_system(
                "gatehouse", milestones[-1], milestones, tmp
            )
            results["systems"]["peer"] = run_system("peer", milestones[-1], milestones, tmp)
            if args.baseline_turns:
                base = [m for m in milestones if m <= args.baseline_turns] or [args.baseline_turns]
                results["systems"]["gatehouse-baseline"] = run_system(
                    "gatehouse-baseline", max(base), base, tmp
                )
        if not args.no_micro and not args.cold_only:
            print("[bench] micro-benchmarks ...", flush=True)
            _python(
                "bench.micro",
                "--out",
                str(tmp / "micro.json"),
                *(["--quick"] if args.quick else []),
            )
            results["micro"] = json.loads((tmp / "micro.json").read_text())
            print("[bench] a real client ...", flush=True)
            _python(
                "bench.real_client",
                "--out",
                str(tmp / "client.json"),
                "--repeat",
                "1" if args.quick else "5",
            )
            results["real_client"] = json.loads((tmp / "client.json").read_text())
        if not args.no_cold:
            print("[bench] cold paths ...", flush=True)
            load = " ".join(f"{x:.1f}" for x in os.getloadavg())
            _python(
                "bench.cold",
                "--out",
                str(tmp / "cold.json"),
                "--turns",
                args.cold_turns,
                "--peer-turns",
                args.cold_peer_turns,
                *(["--quick"] if args.quick else []),
                *(["--no-postgres"] if args.no_postgres else []),
            )
            results["cold"] = json.loads((tmp / "cold.json").read_text())
            results["cold"]["load_before"] = load
            results["cold"]["load_after"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
        if not args.no_lockstep:
            print("[bench] warm per turn in lockstep ...", flush=True)
            turns = (
                "3,6"
                if args.quick and args.lockstep_turns == parser.get_default("lockstep_turns")
                else args.lockstep_turns
            )
            _python("bench.lockstep", "--out", str(tmp / "lockstep.json"), "--turns", turns)
            results["lockstep"] = json.loads((tmp / "lockstep.json").read_text())
    results["environment"]["load_after"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    previous = results_dir / "results.json"
    if args.cold_only and previous.exists():  # keep the last full run's other figures
        before = json.loads(previous.read_text())
        results["systems"], results["micro"] = before.get("systems", {}), before.get("micro", {})
        results["real_client"] = before.get("real_client", {})
        results["environment"]["command"] += (
            f" (long-thread and micro figures: the run of {before['environment']['date']})"
        )
    results["environment"]["total_s"] = time.perf_counter() - started
    (results_dir / "results.json").write_text(json.dumps(results, indent=1))
    png = results_dir / "long_thread.png"
    if results["systems"]:
        plot(results, png)
    cold_png = results_dir / "cold_paths.png"
    if results.get("cold"):
        from bench import cold

        cold.plot(results["cold"], cold_png)
    md_path = Path(args.markdown)

    def relative(path: Path) -> str:
        try:
            return os.path.relpath(path, md_path.parent)
        except ValueError:
            return str(path)

    body = markdown(results, relative(png), relative(cold_png) if results.get("cold") else None)
    write_markdown(md_path, body)
    print(body)


if __name__ == "__main__":
    main()

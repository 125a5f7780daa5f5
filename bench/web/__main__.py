"""`uv run python -m bench.web`: the web app in headless Chromium at several thread lengths.

    uv run python -m bench.web                      # 10, 200, 2000 turns (the closing-note run)
    uv run python -m bench.web --sizes 10,200       # quick
    uv run python -m bench.web --sizes 200 --only open,page --reps 5
    uv run python -m bench.web --only first_page        # `uv run gatehouse` to a usable input
    uv run python -m bench.web --only live --sizes 10   # another tab's decision shown; Stop
    uv run python -m bench.web --profile --sizes 200  # where the time goes (bench/web/profile.py)
    uv run python -m bench.web --profile --no-status-sleep --sizes 200 --reps 1
    uv run python -m bench.web --profile --cpu-profile --sizes 2000 --reps 1  # busy machine

Prints the tables (measurements by thread length; issue 23's targets) and writes
bench/results/web.json (or --out); `--markdown BENCHMARKS.md` also rewrites that
file's web section (the closing-note run). Threads are built once
per size and cached in bench/results/web-cache/ (git-ignored; --rebuild to drop it).
Screenshots go to test-artifacts/web-bench/.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path

from bench.web.browser import BrowserMissing, chromium_path
from bench.web.build import CACHE, ROOT
from bench.web.first_page import measure_first_page, summary_line
from bench.web.measure import MEASURES, Options, run_benchmark
from bench.web.report import (
    environment,
    idle_result,
    markdown,
    table,
    targets,
    targets_table,
    write,
    write_markdown,
)

OUT = ROOT / "bench" / "results" / "web.json"
# Not per thread length: once per run, first (bench/web/first_page.py).
FIRST_PAGE = "first_page"
ALL_MEASURES = (FIRST_PAGE, *MEASURES)
SCREENSHOTS = ROOT / "test-artifacts" / "web-bench"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.web",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--sizes", default="10,200,2000", help="thread lengths in turns (default 10,200,2000)"
    )
    parser.add_argument(
        "--reps", type=int, default=3, help="samples per timing; the median is reported"
    )
    parser.add_argument(
        "--only",
        default=",".join(ALL_MEASURES),
        help=f"measurements to run (of {','.join(ALL_MEASURES)})",
    )
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="seconds any one wait may take"
    )
    parser.add_argument(
        "--rep-budget",
        type=float,
        default=90.0,
        help="a timing whose sample took longer than this is not repeated",
    )
    parser.add_argument("--idle-tabs", type=int, default=20)
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument(
        "--idle-size", type=int, default=None, help="thread for the idle tabs (default: smallest)"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--screenshots", type=Path, default=SCREENSHOTS)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument(
        "--markdown",
        type=Path,
        default=None,
        help="also write the tables into this file's web section (e.g. BENCHMARKS.md)",
    )
    parser.add_argument("--rebuild", action="store_true", help="drop the cached threads first")
    parser.add_argument(
        "--profile", action="store_true", help="profile instead (see bench/web/profile.py)"
    )
    parser.add_argument(
        "--no-status-sleep",
        action="store_true",
        help="with --profile: also a what-if pass without st.status's 50 ms sleep",
    )
    parser.add_argument(
        "--cpu-profile",
        action="store_true",
        help="with --profile: cProfile counts CPU time, not wall time (for a busy machine)",
    )
    args = parser.parse_args(argv)
    # A SIGTERM unwinds like Ctrl-C, so the servers and browsers started are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        chromium_path()
    except BrowserMissing as exc:
        print(f"bench.web: {exc}", file=sys.stderr)
        return 2
    if args.rebuild and args.cache.is_dir():
        shutil.rmtree(args.cache)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    measures = tuple(m.strip() for m in args.only.split(",") if m.strip())
    unknown = set(measures) - set(ALL_MEASURES)
    if unknown:
        parser.error(
            f"unknown measurements {sorted(unknown)}; choose from {','.join(ALL_MEASURES)}"
        )
    first_page = FIRST_PAGE in measures
    measures = tuple(m for m in measures if m != FIRST_PAGE)
    command = "uv run python -m bench.web " + shlex.join(sys.argv[1:] if argv is None else argv)
    opts = Options(
        sizes=sizes,
        reps=args.reps,
        measures=measures,
        timeout_s=args.timeout,
        rep_budget_s=args.rep_budget,
        idle_tabs=args.idle_tabs,
        idle_seconds=args.idle_seconds,
        idle_size=args.idle_size,
        screenshots=args.screenshots,
        cache=args.cache,
    )
    if args.profile:
        from bench.web.profile import run_profile

        out = args.out if args.out != OUT else OUT.with_name("web-profile.json")
        return run_profile(
            opts, out, command, what_if=args.no_status_sleep, cpu_clock=args.cpu_profile
        )
    env = environment(command)
    started = time.monotonic()

    def save_partial(results: dict[str, object]) -> None:
        write(args.out, {"environment": {**env, "partial": True}, "sizes": results})

    first: dict[str, object] | None = None
    if first_page and not args.profile:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            first = measure_first_page(p, args.reps, args.timeout)
    sizes_result = run_benchmark(opts, on_size=save_partial) if measures else {}
    idle = sizes_result.pop("idle", None)
    env.update(
        total_s=round(time.monotonic() - started),
        load_average_end=[round(x, 2) for x in os.getloadavg()],
    )
    data = {
        "environment": env,
        "sizes": sizes_result,
        **({"idle": idle} if idle else {}),
        **({FIRST_PAGE: first} if first else {}),
    }
    write(args.out, data)
    print()
    print(f"Web app, {env['when']}, {env['machine']}, load {env['load_average']}; {command}")
    print()
    if first:
        print(summary_line(first))
        print()
    if sizes_result:
        print(table(sizes_result))
        print()
    print(targets_table(targets(sizes_result, idle_result(data), first)))
    if args.markdown:
        write_markdown(args.markdown, markdown(data))
        print(f"\nwrote the web section of {args.markdown}")
    print(f"\nwrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Warm per turn in lockstep: Gatehouse and its peer alive in one process, turn by turn
alternately, so a change in the machine's load hits both alike.

    uv run python -m bench.lockstep --out lockstep.json     # threads of 10 and 200 turns
    uv run python -m bench.lockstep --turns 3 --out x.json  # a check that it runs

Gatehouse is opened as `bench.cold` opens it (`open_session`, the default toolset: a gated
`write_file` and a free `read_file` each turn); the peer is `create_agent` +
`HumanInTheLoopMiddleware` + `SqliteSaver` with the workload's two tools. Both threads
grow together; a turn is: the user's message until the approval request (`send`), then
the approval until the answer (`resume`). A third, `floor`, is LangGraph's own least
agent loop with a pause on the same workload (`bench.hitl_floor.LoopFloor`: model,
gate, tools, model on `SqliteSaver`, no middleware): what a turn costs on the framework
before any design's own work, so the targets can be read against it. Per turn: wall
ms, and process CPU ms (only one system runs at a time, so the process's CPU is that
system's). The figure at N is the median of the turns up to N since the previous
figure (turns 1-10, 191-200).

`bench.run` runs it (`--no-lockstep` skips it) and puts the table in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

SYSTEMS = ("gatehouse", "peer", "floor")


def run(turns: list[int], tmp: Path) -> dict[str, Any]:
    from bench.cold import Gatehouse, Peer
    from bench.hitl_floor import LoopFloor

    os.environ.setdefault("GATEHOUSE_BENCH_WORKSPACE", str(tmp / "workspace"))
    drivers: dict[str, Any] = {
        "gatehouse": Gatehouse(str(tmp / "gatehouse.sqlite")),
        "peer": Peer(str(tmp / "peer.sqlite"), setup=True),
        "floor": LoopFloor(str(tmp / "floor.sqlite")),
    }
    per_turn: dict[str, list[dict[str, float]]] = {s: [] for s in SYSTEMS}
    clock, cpu = time.perf_counter, time.process_time
    try:
        for turn in range(1, max(turns) + 1):
            # Each system goes first, second and last in turn.
            order = SYSTEMS[turn % len(SYSTEMS) :] + SYSTEMS[: turn % len(SYSTEMS)]
            for system in order:
                driver = drivers[system]
                start, cpu_start = clock(), cpu()
                driver.send(turn)
                sent, cpu_sent = clock(), cpu()
                driver.approve()
                done, cpu_done = clock(), cpu()
                per_turn[system].append(
                    {
                        "turn_ms": (done - start) * 1000,
                        "cpu_ms": (cpu_done - cpu_start) * 1000,
                        "send_ms": (sent - start) * 1000,
                        "resume_ms": (done - sent) * 1000,
                        "send_cpu_ms": (cpu_sent - cpu_start) * 1000,
                        "resume_cpu_ms": (cpu_done - cpu_sent) * 1000,
                    }
                )
    finally:
        for driver in drivers.values():
            driver.close()
    at: dict[str, dict[str, Any]] = {s: {} for s in SYSTEMS}
    previous = 0
    for n in turns:
        for system in SYSTEMS:
            window = per_turn[system][max(previous, n - 10) : n]
            at[system][str(n)] = {
                key: statistics.median(t[key] for t in window) for key in window[0]
            }
        previous = n
    return {
        "turns": turns,
        "at": at,
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "pythondontwritebytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
    }


def table(result: dict[str, Any]) -> str:
    rows = [
        "| system | N | per turn ms (send / resume) | CPU ms per turn (send / resume) |",
        "|---|---:|---:|---:|",
    ]
    for system in result["at"]:  # older results have no floor
        for n in map(str, result["turns"]):
            r = result["at"][system][n]
            rows.append(
                f"| {system} | {n} | {r['turn_ms']:.1f} ({r['send_ms']:.1f} / {r['resume_ms']:.1f}) "
                f"| {r['cpu_ms']:.1f} ({r['send_cpu_ms']:.1f} / {r['resume_cpu_ms']:.1f}) |"
            )
    return "\n".join(rows)


def targets(result: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    out: list[tuple[str, str, bool | None]] = []
    for n in map(str, result["turns"]):
        g, p = result["at"]["gatehouse"][n], result["at"]["peer"][n]
        share = 2 if int(n) <= 10 else 4
        out.append(
            (
                f"lockstep: warm per turn at {n} turns <= 1/{share} of peer",
                f"{g['turn_ms']:.1f} vs {p['turn_ms']:.1f} ms (1/{p['turn_ms'] / g['turn_ms']:.1f})",
                g["turn_ms"] * share <= p["turn_ms"],
            )
        )
        out.append(
            (
                "  same, in CPU time (robust to a busy machine)",
                f"{g['cpu_ms']:.1f} vs {p['cpu_ms']:.1f} ms (1/{p['cpu_ms'] / g['cpu_ms']:.1f})",
                None,
            )
        )
        if (f := result["at"].get("floor", {}).get(n)) is not None:
            out.append(
                (
                    "  LangGraph's least agent loop with a pause (bench/hitl_floor.py LoopFloor)",
                    _against_floor(f["turn_ms"], g["turn_ms"], p["turn_ms"] / share, share),
                    None,
                )
            )
    return out


def _against_floor(floor_ms: float, gatehouse_ms: float, target_ms: float, share: int) -> str:
    said = f"{floor_ms:.1f} ms a turn"
    if floor_ms > gatehouse_ms:
        # Its stock SqliteSaver stores the whole message list at every step: past a few
        # turns it grows with the thread as the peer does, and bounds nothing.
        return f"{said} (its stock saver grows with the thread: no floor at this length)"
    below = " (below the floor)" if target_ms < floor_ms else ""
    return f"{said}; 1/{share} of the peer is {target_ms:.1f} ms{below}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", default="10,200", help="thread lengths at which to report")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    turns = sorted({int(x) for x in args.turns.split(",") if x})
    with tempfile.TemporaryDirectory(prefix="gatehouse-lockstep-") as name:
        result = run(turns, Path(name))
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(table(result))
    for name, measured, ok in targets(result):
        print(f"{name}: {measured} ({'info' if ok is None else 'pass' if ok else 'FAIL'})")


if __name__ == "__main__":
    main()

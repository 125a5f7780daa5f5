"""Tune the messages DeltaChannel's `snapshot_frequency` (not part of `bench.run`).

    uv run python -m bench.sweep --turns 200 --frequencies 10,50,200,100000

One Gatehouse thread per frequency, each in a fresh process; prints a Markdown table
of database size, per-turn time and read time (warm, and cold: cache emptied).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench.run import _mb, _python


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--frequencies", default="10,50,200,100000")
    args = parser.parse_args(argv)
    rows = [
        f"| snapshot_frequency | DB MB at {args.turns} turns | CPU ms/turn, turns 1-10 | CPU ms/turn, last 10 "
        "| get_state ms warm | get_state ms cold |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory(prefix="gatehouse-sweep-") as name:
        for freq in [int(f) for f in args.frequencies.split(",") if f]:
            out = Path(name) / f"{freq}.json"
            _python(
                "bench.workload",
                "--system",
                "gatehouse",
                "--turns",
                str(args.turns),
                "--snapshot-frequency",
                str(freq),
                "--out",
                str(out),
            )
            at = json.loads(out.read_text())["at"][str(args.turns)]
            rows.append(
                f"| {freq} | {_mb(at['db_bytes'])} | {at['per_turn_cpu_ms_first10']:.1f} | {at['per_turn_cpu_ms_last10']:.1f} "
                f"| {at['get_state_ms']:.2f} | {at['get_state_cold_ms']:.1f} |"
            )
            print(rows[-1], flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()

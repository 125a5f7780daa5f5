"""Keeps `bench/` runnable: a tiny run produces the table, the JSON and the plot.

Timing targets are not asserted here (see BENCHMARKS.md); only that it all works.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def bench(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m module *args` from the project root, as a person runs a benchmark."""
    out = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out


@pytest.mark.slow
def test_bench_run_in_a_tiny_mode_writes_the_table_and_plot(tmp_path: Path) -> None:
    results, markdown = tmp_path / "results", tmp_path / "BENCHMARKS.md"
    markdown.write_text("# Benchmarks\n\nProse that must survive.\n")
    bench(
        "bench.run",
        *("--turns", "2,3", "--baseline-turns", "2"),
        *("--no-micro", "--no-cold", "--no-lockstep"),
        *("--results", str(results), "--markdown", str(markdown)),
    )
    text = markdown.read_text()
    assert "Prose that must survive." in text
    assert "| system | N | msgs | per-turn ms, turns 1-10 |" in text
    for system in ("gatehouse", "peer", "gatehouse-baseline"):
        assert f"| {system} | 2 | 10 |" in text
    assert "| gatehouse | 3 | 15 |" in text and "| peer | 3 | 15 |" in text
    assert "| target | measured | result |" in text
    data = json.loads((results / "results.json").read_text())
    assert set(data["systems"]) == {"gatehouse", "peer", "gatehouse-baseline"}
    assert len(data["systems"]["peer"]["turn_ms"]) == 3
    assert (results / "long_thread.png").stat().st_size > 1000


@pytest.mark.slow
def test_cold_paths_bench_in_a_tiny_mode_writes_its_table_and_plot(tmp_path: Path) -> None:
    results, markdown = tmp_path / "results", tmp_path / "BENCHMARKS.md"
    bench(
        "bench.run",
        *("--cold-only", "--quick", "--no-postgres"),
        *("--results", str(results), "--markdown", str(markdown)),
    )
    text = markdown.read_text()
    assert "| sqlite | gatehouse | 3 |" in text and "| sqlite | peer | 6 |" in text
    assert "terminal: `gatehouse threads` <= 0.3 s" in text
    cold = json.loads((results / "results.json").read_text())["cold"]
    assert set(cold["backends"]["sqlite"]) == {"gatehouse", "peer"}
    assert (results / "cold_paths.png").stat().st_size > 1000
    # The split of a resume and the floor it is measured against (issue 36).
    at = cold["backends"]["sqlite"]["gatehouse"]["at"]["3"]
    assert (
        at["resume"]["approve_ms"] > 0 and at["floor"]["read_ms"] > 0 and at["floor"]["step_ms"] > 0
    )
    assert "cold resume ms (open / read / approve / run)" in text
    # Warm per turn in lockstep, tiny.
    lockstep = text.split("### Warm per turn in lockstep")[1]
    assert "| gatehouse | 6 |" in lockstep and "| floor | 6 |" in lockstep
    assert "lockstep: warm per turn at 3 turns <= 1/2 of peer" in text
    # LangGraph's own least agent loop with a pause, beside the targets it bounds.
    assert "LangGraph's least agent loop with a pause" in lockstep


def test_micro_benchmarks_run_small(tmp_path: Path) -> None:
    from bench.micro import event_pipeline, index_list_ms

    assert index_list_ms(tmp_path, threads=50, repeat=2) >= 0
    result = event_pipeline(tmp_path, tokens=20, repeat=1)
    assert result["tokens"] == 20 and result["run_session_ms"] > 0


@pytest.mark.slow
def test_real_client_bench_runs_and_reports_opens_and_the_streamed_write(tmp_path: Path) -> None:
    out = tmp_path / "client.json"
    done = bench("bench.real_client", "--repeat", "1", "--out", str(out))
    result = json.loads(out.read_text())["gatehouse"]
    assert result["warm_cache"]["open_ms"] > 0 and result["cold_cache"]["first_open_ms"] > 0
    # The sample itself checked that the approval holds the 54 KB arguments whole.
    assert result["stream"]["args_bytes"] > 50_000 and result["stream"]["stream_s"] > 0
    assert "| gatehouse |" in done.stdout


@pytest.mark.slow
@pytest.mark.postgres
def test_load_bench_in_quick_mode_checks_both_systems(tmp_path: Path) -> None:
    """Its own Postgres, workers and approver per system, the correctness counts and the
    inbox reads, and the tables written between the markers."""
    out, markdown = tmp_path / "load.json", tmp_path / "BENCHMARKS.md"
    markdown.write_text("Before.\n<!-- load:begin -->\nold\n<!-- load:end -->\nAfter.\n")
    bench("bench.load", "--quick", "--out", str(out), "--update", "--markdown", str(markdown))
    report = json.loads(out.read_text())
    for system in ("gatehouse", "peer"):
        s = report["summary"][system]
        assert s["turns"] == s["ran_once"] == 8, s
        assert (s["ran_twice"], s["never_ran"], s["ran_unapproved"], s["inconsistent"]) == (0,) * 4
        assert s["throughput"] > 0 and s["send_card_p50"] > 0 and s["pg_cpu_ms_per_turn"] > 0
    [inbox] = [r for r in report["inbox"] if r["system"] == "gatehouse"]
    assert inbox["paused"] == 51 and inbox["cli_pending_json_ms"] > 0
    text = markdown.read_text()
    assert text.startswith("Before.") and text.endswith("After.\n") and "old" not in text
    assert "| throughput |" in text and "| paused threads |" in text

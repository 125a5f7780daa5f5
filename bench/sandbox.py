"""What the sandbox costs per command: `true` in bubblewrap against `true` in plain bash.

    uv run python -m bench.sandbox [--runs 100] [--json out.json]

Rows, each timed from start to exit with the output read (median and p90, ms):

- `bash -c true`: the floor, a plain subprocess as run_command used to start it;
- `fallback`: the same through `Unsandboxed` (environment allow list, ulimit wrapper);
- `sandbox`: through `Bubblewrap` (namespaces, mounts, ulimits, info fd);
- `sandbox + network`: the same with `--share-net` (no network namespace to create);
- `run_command (sandbox)` / `run_command (fallback)`: the whole tool, `true`;
- `run_command git status (listed)`: an allow-listed git command, hardened (one
  `git config --list` first) and read-only, in a small repository.

The target (issue 16) is a sandbox start-up overhead under 50 ms median on a 2-core
machine: `sandbox` minus `bash -c true`, shown in the last row.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gatehouse.tools.sandbox import Access, Sandbox, choose_sandbox, detect_bubblewrap

TARGET_MS = 50.0


def _through(box: Sandbox, access: Access) -> Callable[[], None]:
    bash = shutil.which("bash") or "/bin/sh"

    def run() -> None:
        running = box.start([bash, "-c", "true"], access, timeout_s=10)
        assert running.proc.stdout is not None
        running.proc.stdout.read()
        code = running.proc.wait()
        running.stop()
        running.close()
        running.proc.stdout.close()
        assert code == 0, f"exit code {code}"

    return run


def _plain() -> None:
    subprocess.run([shutil.which("bash") or "/bin/sh", "-c", "true"], stdin=subprocess.DEVNULL,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=True)  # fmt: skip


def measure(cases: dict[str, Callable[[], None]], runs: int) -> dict[str, list[float]]:
    """Interleaved, after a warm-up each, so drift on a shared machine hits every row alike."""
    for case in cases.values():
        case()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            start = time.perf_counter()
            case()
            times[name].append((time.perf_counter() - start) * 1000)
    return times


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args(argv)

    support = detect_bubblewrap()
    if not support.usable:
        print(f"no sandbox on this machine: {support.reason}", file=sys.stderr)
        return 1

    from gatehouse.tools.shell import make_shell_tool
    from gatehouse.tools.workspace import Workspace

    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as tmp:
        ws = Workspace(Path(tmp) / "workspace")
        sandbox = choose_sandbox("require", ws.root)
        fallback = choose_sandbox("off", ws.root)
        (ws.root / "notes.md").write_text("hello\n")
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
        for git_args in (
            ["init", "-q"],
            ["add", "."],
            ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "x"],
        ):
            subprocess.run(["git", *git_args], cwd=ws.root, env=env, check=True)
        boxed_tool = make_shell_tool(ws, allow=["git status"], sandbox=sandbox)
        plain_tool = make_shell_tool(ws, sandbox=fallback)
        cases: dict[str, Callable[[], None]] = {
            "bash -c true": _plain,
            "fallback": _through(fallback, Access()),
            "sandbox": _through(sandbox, Access()),
            "sandbox + network": _through(sandbox, Access(network=True)),
            "run_command (fallback)": lambda: plain_tool.invoke({"command": "true"}),
            "run_command (sandbox)": lambda: boxed_tool.invoke({"command": "true"}),
            "run_command git status (listed)": lambda: boxed_tool.invoke({"command": "git status"}),
        }
        times = measure(cases, args.runs)

    rows = {
        name: {"median_ms": statistics.median(t), "p90_ms": p90(t)} for name, t in times.items()
    }
    overhead = [s - b for s, b in zip(times["sandbox"], times["bash -c true"], strict=True)]
    rows["sandbox overhead (sandbox - bash)"] = {
        "median_ms": statistics.median(overhead),
        "p90_ms": p90(overhead),
    }
    width = max(map(len, rows))
    print(
        f"bubblewrap {support.version}, {os.cpu_count()} cores, {args.runs} runs each; `true` start to exit\n"
    )
    print(f"{'':{width}}  {'median ms':>9}  {'p90 ms':>8}")
    for name, row in rows.items():
        print(f"{name:{width}}  {row['median_ms']:9.1f}  {row['p90_ms']:8.1f}")
    verdict = (
        "meets" if rows["sandbox overhead (sandbox - bash)"]["median_ms"] < TARGET_MS else "MISSES"
    )
    print(f"\nsandbox start-up overhead {verdict} the target of < {TARGET_MS:g} ms median")
    if args.json:
        args.json.write_text(
            json.dumps({"bubblewrap": support.version, "runs": args.runs, "rows": rows}, indent=2)
        )
    return 0 if verdict == "meets" else 2


if __name__ == "__main__":
    raise SystemExit(main())

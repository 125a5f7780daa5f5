"""What a session costs with a real client: `ChatOpenAI` against the local server that
speaks the OpenAI wire protocol (tests/support/openai_server.py), no network.

    uv run python -m bench.real_client --out client.json                  # this checkout
    uv run python -m bench.real_client --out client.json --before ../old  # and another, same run

Each sample is a fresh process (`python -c`, PYTHONPATH = the checkout) that imports
what it uses first, including what an open imports lazily (not timed), then measures:
- `open`: `open_session` with the default toolset and a `ChatOpenAI` model, opened
  `OPENS` times in the process: the first open (`first_open_ms`) and the median of the
  others (`open_ms`, what a server that opens a session per request pays). A process
  runs with an empty cache folder (`cold_cache`) or with the one an earlier process
  filled (`warm_cache`, what every process after the first meets).
- `stream`: one turn whose reply is a `write_file` of 54 KB streamed in 25-character
  pieces (~2,200 chunks, as a server streaming token by token sends it): from `send`
  until the approval request, wall and CPU.
The checkouts' samples alternate. Numbers go to BENCHMARKS.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OPENS = 8

# What an open imports on first use, imported before the clock (a module one checkout
# lacks is skipped): the first open's figure is then the open's own work.
PRELOAD = """
import contextlib, importlib
for name in ("gatehouse.graph.service.app", "gatehouse.graph.service.session", "gatehouse.graph.store", "gatehouse.graph.agent.graph",
             "gatehouse.tools.sandbox", "gatehouse.tools.definitions", "langchain_core.utils.function_calling"):
    with contextlib.suppress(ImportError):
        importlib.import_module(name)
"""

OPEN = (
    PRELOAD
    + """
import json, statistics, sys, time
from langchain_openai import ChatOpenAI
from gatehouse.graph import Settings, open_session
from tests.support.openai_server import closed_port_url
settings = Settings(db=sys.argv[1], workspace=sys.argv[2])
model = ChatOpenAI(model="m", api_key="sk-bench", base_url=closed_port_url(), max_retries=0)
times = []
for _ in range(int(sys.argv[3])):
    start, cpu = time.perf_counter(), time.process_time()
    open_session(settings, model=model).close()
    times.append(((time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000))
print(json.dumps({
    "first_open_ms": times[0][0], "first_open_cpu_ms": times[0][1],
    "open_ms": statistics.median(t[0] for t in times[1:]),
    "open_cpu_ms": statistics.median(t[1] for t in times[1:]),
}))
"""
)

STREAM = (
    PRELOAD
    + """
import json, sys, time
from langchain_openai import ChatOpenAI
from gatehouse.graph import Settings, open_session
from tests.support.openai_server import FakeOpenAI
args = {"path": "big.md", "content": "lorem ipsum dolor sit amet\\n" * 2000}
script = [{"content": "Writing it.", "args_chars": 25,
           "tool_calls": [{"id": "call_big", "name": "write_file", "arguments": args}]}]
with FakeOpenAI(script) as server:
    model = ChatOpenAI(model="m", api_key="sk-bench", base_url=server.base_url, max_retries=0)
    session = open_session(Settings(db=sys.argv[1], workspace=sys.argv[2]), model=model)
    start, cpu = time.perf_counter(), time.process_time()
    run = session.send("bench", "Write the big file")
    run.collect()
    wall, cpu_s = time.perf_counter() - start, time.process_time() - cpu
    assert run.status == "awaiting_approval", run.status
    assert session.view("bench").pending.request.action_requests[0].args == args
    session.close()
print(json.dumps({"stream_s": wall, "stream_cpu_s": cpu_s, "args_bytes": len(json.dumps(args))}))
"""
)


def sample(root: Path, script: str, tmp: Path, cache: Path, *extra: str) -> dict[str, float]:
    tmp.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEHOUSE_", "OPENAI_"))}
    env.update(PYTHONPATH=str(root), GATEHOUSE_CACHE_DIR=str(cache))
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp / "g.sqlite"), str(tmp / "ws"), *extra],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_of(samples: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(s[k] for s in samples) for k in samples[0]}


def run(roots: dict[str, Path], repeat: int) -> dict[str, Any]:
    samples: dict[str, dict[str, list[dict[str, float]]]] = {
        name: {"cold_cache": [], "warm_cache": [], "stream": []} for name in roots
    }
    with tempfile.TemporaryDirectory(prefix="gatehouse-client-") as name:
        tmp = Path(name)
        for i in range(repeat):
            for system, root in roots.items():
                base = tmp / f"{system}-{i}"
                cache = base / "cache"
                for kind in ("cold_cache", "warm_cache"):  # the second finds the first's cache
                    samples[system][kind].append(sample(root, OPEN, base / kind, cache, str(OPENS)))
                samples[system]["stream"].append(sample(root, STREAM, base / "stream", cache))
    return {
        system: {kind: median_of(values) for kind, values in kinds.items()}
        for system, kinds in samples.items()
    }


def table(result: dict[str, Any]) -> str:
    rows = [
        "| checkout | first open, cache empty | first open, cache filled | later opens | "
        "54 KB streamed write: send to approval |",
        "|---|---:|---:|---:|---:|",
    ]
    for system, r in result.items():
        cold, warm, stream = r["cold_cache"], r["warm_cache"], r["stream"]
        rows.append(
            f"| {system} | {cold['first_open_ms']:.1f} ms (CPU {cold['first_open_cpu_ms']:.1f}) "
            f"| {warm['first_open_ms']:.1f} ms (CPU {warm['first_open_cpu_ms']:.1f}) "
            f"| {warm['open_ms']:.1f} ms (CPU {warm['open_cpu_ms']:.1f}) "
            f"| {stream['stream_s']:.2f} s (CPU {stream['stream_cpu_s']:.2f}) |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeat", type=int, default=5, help="samples per checkout")
    parser.add_argument("--before", default=None, help="an older checkout to run alongside")
    args = parser.parse_args(argv)
    roots = {"gatehouse": ROOT}
    if args.before:
        before = Path(args.before).resolve()
        # The older checkout's own test server may lack what the samples use.
        server = "tests/support/openai_server.py"
        (before / server).write_text((ROOT / server).read_text())
        roots["gatehouse-before"] = before
    result = run(roots, args.repeat)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(table(result))


if __name__ == "__main__":
    main()

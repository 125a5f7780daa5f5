"""Tokens sent to the model per turn on a long thread with large tool outputs, with
and without compaction and tool-output offloading (issue 22).

    uv run python -m bench.long_thread                       # 100 turns, ~20,000-character outputs
    uv run python -m bench.long_thread --turns 20 --json out.json

Each turn the person asks about a report, the model reads it with `read_file` (one of
ten report files of about 20,000 characters, ~5,000 tokens) and answers in a sentence.
The model is a deterministic stand-in that counts what each request sends it, with
`count_tokens_approximately` (about 4 characters a token: the count compaction itself
uses), so the numbers are the prompt sizes a real model would be billed for. It runs on
the real Session and SQLite, in four configurations:

- `baseline`: neither (compaction off, offloading off: outputs go in whole, cut at 50,000);
- `offload`: outputs over 8,000 characters stored aside (the default);
- `compaction`: past 60,000 tokens the older turns become a summary (the default);
- `both`: the default configuration;
- `both-20k`: the default with compaction past 20,000 tokens.

Reported per configuration: tokens sent in turns 1, 10, 25, 50, 75 and the last (a turn
is two model calls: ask for the tool, answer), the total over all turns, the largest
single request, how many requests exceed a 128k-token context window, and what the
summaries cost (the tokens compaction sends to the summariser, counted apart).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from gatehouse.graph import ScriptedModel, Settings, ai, open_session, tool_call
from gatehouse.graph.agent.builtin_hooks.compaction import SUMMARY_REQUEST_MARK

CONTEXT_WINDOW = 128_000
REPORTS = 10
CONFIGS = {
    "baseline": {"compaction": False, "offload_threshold_chars": 0},
    "offload": {"compaction": False},
    "compaction": {"offload_threshold_chars": 0},
    "both": {},
    # The two together with a lower threshold, to show them combined within 100 turns
    # (at the default 60,000, offloaded turns stay under it for ~120 turns).
    "both-20k": {"compaction_max_tokens": 20_000},
}
SUMMARY = (
    "Summary: the person asked about a series of quarterly reports; each was read in full. " * 12
)


class Counter:
    """The stand-in model's script: counts every request by turn, then answers."""

    def __init__(self) -> None:
        self.turn = 0
        self.agent: dict[int, list[int]] = defaultdict(list)
        self.summaries: list[int] = []

    def __call__(self, messages: list[BaseMessage]) -> AIMessage | str:
        tokens = count_tokens_approximately(messages)
        if messages[-1].additional_kwargs.get(SUMMARY_REQUEST_MARK):
            self.summaries.append(tokens)
            return SUMMARY
        self.agent[self.turn].append(tokens)
        if isinstance(messages[-1], HumanMessage):
            n = self.turn % REPORTS
            return ai("", tool_call("read_file", {"path": f"report-{n}.txt"}, f"call-{self.turn}"))
        return f"Report {self.turn % REPORTS}: revenue up 4%, three risks noted, nothing urgent."


def write_reports(workspace: Path, chars: int) -> None:
    workspace.mkdir(parents=True, exist_ok=True)
    for n in range(REPORTS):
        lines, size = [], 0
        while size < chars:
            line = f"report {n} line {len(lines):04d}: region {len(lines) % 7} revenue {len(lines) * 37 % 1000} units; notes ok"
            lines.append(line)
            size += len(line) + 1
        (workspace / f"report-{n}.txt").write_text("\n".join(lines) + "\n")


def run_config(name: str, turns: int, chars: int, home: Path) -> dict[str, Any]:
    counter = Counter()
    model = ScriptedModel(script=[counter] * (turns * 4 + 100), usage=False)
    settings = Settings(db=str(home / f"{name}.db"), workspace=str(home / "ws"), **CONFIGS[name])
    session = open_session(settings, model=model)
    thread = session.new_thread_id()
    started = time.perf_counter()
    compactions = 0
    try:
        for turn in range(1, turns + 1):
            counter.turn = turn
            events = session.send(thread, f"What does report {turn % REPORTS} say?").collect()
            status = events[-1].status  # type: ignore[union-attr]
            if status != "completed":
                raise RuntimeError(f"{name}: turn {turn} ended {status}: {events[-1]}")
            compactions += sum(1 for e in events if e.type == "compacted")
    finally:
        session.close()
    per_turn = [sum(counter.agent[t]) for t in range(1, turns + 1)]
    requests = [n for t in range(1, turns + 1) for n in counter.agent[t]]
    return {
        "per_turn": per_turn,
        "total": sum(per_turn),
        "largest_request": max(requests),
        "over_context": sum(1 for n in requests if n > CONTEXT_WINDOW),
        "first_turn_over_context": next(
            (t for t in range(1, turns + 1) if any(n > CONTEXT_WINDOW for n in counter.agent[t])),
            None,
        ),
        "summary_tokens": sum(counter.summaries),
        "compactions": compactions,
        "seconds": round(time.perf_counter() - started, 1),
    }


def milestones(turns: int) -> list[int]:
    return sorted({t for t in (1, 10, 25, 50, 75, turns) if t <= turns})


def table(results: dict[str, dict[str, Any]], turns: int) -> str:
    marks = milestones(turns)
    head = [
        "config",
        *(f"turn {t}" for t in marks),
        "total",
        "largest",
        f">{CONTEXT_WINDOW // 1000}k",
        "summaries",
        "vs baseline",
        "s",
    ]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    base = results.get("baseline", {}).get("total")
    for name, r in results.items():
        saved = (
            f"-{100 * (1 - (r['total'] + r['summary_tokens']) / base):.0f}%"
            if base and name != "baseline"
            else ""
        )
        rows.append(
            "| "
            + " | ".join(
                [
                    name,
                    *(f"{r['per_turn'][t - 1]:,}" for t in marks),
                    f"{r['total']:,}",
                    f"{r['largest_request']:,}",
                    str(r["over_context"]),
                    f"{r['summary_tokens']:,} ({r['compactions']})",
                    saved,
                    f"{r['seconds']}",
                ]
            )
            + " |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument(
        "--output-chars", type=int, default=20_000, help="size of each report the tool returns"
    )
    parser.add_argument(
        "--configs", default=",".join(CONFIGS), help="comma-separated, from: " + ", ".join(CONFIGS)
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="gatehouse-long-thread-"))
    write_reports(home / "ws", args.output_chars)
    results: dict[str, dict[str, Any]] = {}
    for name in args.configs.split(","):
        print(f"[long_thread] {name}: {args.turns} turns ...", flush=True)
        results[name] = run_config(name, args.turns, args.output_chars, home)
    print()
    print(
        f"Tokens sent to the model per turn ({args.turns} turns, tool outputs of ~{args.output_chars:,} characters; "
        "'vs baseline' counts the summaries too)"
    )
    print()
    print(table(results, args.turns))
    data = {"turns": args.turns, "output_chars": args.output_chars, "results": results}
    if args.json:
        args.json.write_text(json.dumps(data, indent=2))
    return data


if __name__ == "__main__":
    main()

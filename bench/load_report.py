"""The load bench's report (bench/load.py) as the Markdown tables of BENCHMARKS.md."""

from __future__ import annotations

import json
from typing import Any


def _ratio(g: float, p: float) -> str:
    return f" ({g / p:.2f}×)" if p else ""


def load_table(report: dict[str, Any]) -> list[str]:
    g, p = report["summary"]["gatehouse"], report["summary"]["peer"]
    a = report["args"]
    lines = [
        f"{a['workers']} worker processes + 1 approver per system, {a['threads']} threads × "
        f"{a['turns']} turns, model {a['model_ms']:.0f} ms a call, rounds {a['order']} "
        f"({report['started']} UTC).",
        "",
        "| | Gatehouse | peer (`create_agent` + HITL + `PostgresSaver`) |",
        "|---|---|---|",
        f"| throughput | {g['throughput']:.1f} turns/s{_ratio(g['throughput'], p['throughput'])} "
        f"| {p['throughput']:.1f} turns/s |",
    ]
    for name, key in (("send → card", "send_card"), ("approve → answer", "approve_answer")):
        lines.append(
            f"| {name} p50 / p95 / p99 | "
            + " | ".join(
                f"{s[key + '_p50']:.0f} / {s[key + '_p95']:.0f} / {s[key + '_p99']:.0f} ms"
                for s in (g, p)
            )
            + " |"
        )
    lines += [
        f"| errors | {g['errors']} | {p['errors']} |",
        f"| app CPU per turn | {g['app_cpu_ms_per_turn']:.1f} ms | {p['app_cpu_ms_per_turn']:.1f} ms |",
        f"| Postgres CPU per turn | {g['pg_cpu_ms_per_turn']:.1f} ms"
        f"{_ratio(g['pg_cpu_ms_per_turn'], p['pg_cpu_ms_per_turn'])} | {p['pg_cpu_ms_per_turn']:.1f} ms |",
    ]
    for key, label in (
        ("transactions", "Postgres transactions per turn"),
        ("inserted", "rows inserted per turn"),
        ("updated", "rows updated per turn"),
        ("deleted", "rows deleted per turn"),
        ("wal_bytes", "WAL bytes per turn"),
    ):
        gv, pv = g["pg_per_turn"].get(key, 0), p["pg_per_turn"].get(key, 0)
        lines.append(f"| {label} | {gv:,.0f}{_ratio(gv, pv)} | {pv:,.0f} |")
    for s in (g, p):
        s["_ok"] = (
            f"{s['ran_once']}/{s['turns']} once, {s['ran_twice']} twice, {s['never_ran']} never, "
            f"{s['ran_unapproved']} unapproved; {s['inconsistent']} threads inconsistent"
        )
    lines.append(f"| approved calls, threads | {g['_ok']} | {p['_ok']} |")
    for w in sorted({r["workers"] for r in report.get("scale", ())}):
        fewer = {r["system"]: r for r in report["scale"] if r["workers"] == w}
        lines.append(
            f"| {w} → {a['workers']} worker processes | "
            + " | ".join(
                f"{fewer[s]['throughput']:.1f} → {t['throughput']:.1f} turns/s"
                f" (errors {fewer[s]['errors']})"
                for s, t in (("gatehouse", g), ("peer", p))
                if s in fewer
            )
            + " |"
        )
    return lines


def tables_written(report: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "Rows written per turn, by table:",
        "",
        "| table | Gatehouse | peer |",
        "|---|---|---|",
    ]
    g, p = report["summary"]["gatehouse"]["pg_per_turn"], report["summary"]["peer"]["pg_per_turn"]
    for key in sorted({k for k in (*g, *p) if k.startswith("table:")}):
        if g.get(key, 0) or p.get(key, 0):
            lines.append(f"| `{key[6:]}` | {g.get(key, 0):.1f} | {p.get(key, 0):.1f} |")
    return lines


def fault_table(report: dict[str, Any]) -> list[str]:
    if not report["faults"]:
        return []
    lines = [
        "",
        '| fault | system | turns | errors | approved calls run twice | asked "outcome unknown" '
        "| never ran | unapproved | threads inconsistent | threads stuck | throughput |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["faults"]:
        what = (
            f"kill -9 of the approver in {r['killed_in_calls']} approved calls"
            if r["fault"] == "kill"
            else "Postgres restart (immediate) a third of the way in"
        )
        lines.append(
            f"| {what} | {r['system']} | {r['turns']} | {r['errors']} | {r['ran_twice']} | "
            f"{r['outcome_unknown_asked']} | {r['never_ran']} | {r['ran_unapproved']} | "
            f"{r['inconsistent']} | {len(r.get('stuck', []))} | {r['throughput']:.1f}/s |"
        )
    return lines


def inbox_table(report: dict[str, Any]) -> list[str]:
    rows = report["inbox"]
    if not rows:
        return []
    lines = [
        "",
        "| paused threads | Session's list | web inbox first page (50 cards) | every card (Session) "
        "| `pending --json` | `threads --json` | `threads --json --limit all` | peer: find paused + first 50 cards |",
        "|---|---|---|---|---|---|---|---|",
    ]
    peer = {r["paused"]: r for r in rows if r["system"] == "peer"}
    for r in (r for r in rows if r["system"] == "gatehouse"):
        other = peer.get(r["paused"], {})
        lines.append(
            f"| {r['paused']:,} | {r['session_list_ms']:.0f} ms | {r['web_first_page_ms']:.0f} ms "
            f"| {r['session_all_cards_ms']:.0f} ms | {r['cli_pending_json_ms']:.0f} ms "
            f"| {r['cli_threads_json_ms']:.0f} ms | {r['cli_threads_json_all_ms']:.0f} ms "
            f"| {other.get('find_paused_ms', 0):.0f} ms |"
        )
    return lines


def render(report: dict[str, Any]) -> str:
    if not all(report["summary"].values()):  # one system only (--order G): no comparison
        return "```\n" + json.dumps(report["summary"], indent=1) + "\n```"
    return "\n".join(
        [*load_table(report), *tables_written(report), *fault_table(report), *inbox_table(report)]
    )

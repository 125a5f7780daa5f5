"""A team's load on one Postgres, Gatehouse beside the peer, in one command (issue 58).

    uv run --frozen python -m bench.load                 # the load, the faults, the inbox
    uv run --frozen python -m bench.load --quick         # a smoke run (tests/test_bench_smoke.py)
    uv run --frozen python -m bench.load --update        # and the tables into BENCHMARKS.md

It starts its own Postgres 15 (default durability: fsync and synchronous commit on),
then per round a fresh database, W worker processes and an approver process
(bench/load_procs.py) of one system: T conversations at once, N turns each, a
scripted model that takes 150 ms a call (two calls a turn), one gated call (approved
by the approver through the public way in: what is pending, then the answer by
request id) and one free call per turn. Rounds alternate G P P G, so a change in the
machine's load hits both alike; each system's figures are over its rounds.

Per system: throughput (turns/s), send -> card and approve -> answer latency (p50, p95,
p99), errors, app CPU per turn (workers and approver, after start-up) and Postgres
CPU per turn (the server's processes), Postgres work per turn (transactions, rows
written, WAL bytes, rows written per table) and correctness: every approved call ran
exactly once, none ran without an approval, every thread ends consistent (each tool
call answered once, nothing pending, every turn answered).

Faults, per system: the approver is killed (kill -9) while it runs approved calls,
and a new one carries on; Postgres restarts during the load. Then the inbox: 1,000
and 10,000 paused threads (copies of one, made in SQL), timed through `gatehouse
pending --json`, `gatehouse threads --json`, the Session's list and the web inbox's
first page (its reads), beside what the peer needs to find its paused threads.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import suppress
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "load.json"
SYSTEMS = {"G": "gatehouse", "P": "peer"}


# -- Postgres's own cost ---------------------------------------------------------------
def pg_cpu_s(server: Any) -> float:
    """CPU seconds of the server: the postmaster with the children it reaped, and its
    live children (backends, checkpointer, WAL writer)."""
    tick = os.sysconf("SC_CLK_TCK")
    master = int((server.root / "data" / "postmaster.pid").read_text().split()[0])
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            pid, ppid = int(stat.parent.name), int(fields[1])
            if pid == master:
                total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
            elif ppid == master:
                total += int(fields[11]) + int(fields[12])
    return total / tick


def pg_work(url: str) -> dict[str, float]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, tup_returned + tup_fetched, "
            "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') "
            "FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
        tables = conn.execute(
            "SELECT relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables"
        ).fetchall()
    keys = ("transactions", "inserted", "updated", "deleted", "rows_read", "wal_bytes")
    return {
        **dict(zip(keys, (float(v) for v in row or ()), strict=True)),
        **{f"table:{name}": float(n) for name, n in tables},
    }


def setup_schema(system: str, url: str) -> None:
    """The schema before the processes start (they would race to create it)."""
    if system == "gatehouse":
        from gatehouse.graph.store import open_storage

        open_storage(url).close()
        return
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    with psycopg.connect(url, autocommit=True) as conn:
        PostgresSaver(conn).setup()  # type: ignore[arg-type]


# -- one round -------------------------------------------------------------------------
class Proc:
    """A bench process with its JSON lines read into the round's queue."""

    def __init__(
        self, name: str, argv: list[str], env: dict[str, str], inbox: queue.Queue[Any]
    ) -> None:
        self.name = name
        # What went wrong, if anything, is in the round's folder.
        log = Path(argv[3]) / f"{name}-{time.monotonic_ns()}"
        stderr = open(f"{log}.log", "w")  # noqa: SIM115
        self.out = open(f"{log}.out", "w")  # noqa: SIM115
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "bench.load_procs", *argv],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            bufsize=1,
        )
        self.lines: list[dict[str, Any]] = []
        threading.Thread(target=self._read, args=(inbox,), daemon=True).start()

    def _read(self, inbox: queue.Queue[Any]) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.out.write(line)
            with suppress(json.JSONDecodeError):
                message = json.loads(line)
                self.lines.append(message)
                inbox.put((self, message))
        self.out.close()
        inbox.put((self, {"exited": self.popen.wait()}))

    def tell(self, **message: Any) -> None:
        with suppress(BrokenPipeError, ValueError, OSError):
            assert self.popen.stdin is not None
            self.popen.stdin.write(json.dumps(message) + "\n")
            self.popen.stdin.flush()

    def end_input(self) -> None:
        with suppress(BrokenPipeError, OSError):
            assert self.popen.stdin is not None
            self.popen.stdin.close()

    def cpu(self) -> float:
        started = next((m["cpu"] for m in self.lines if "ready" in m and "cpu" in m), None)
        started = next((m["cpu"] for m in self.lines if "started" in m), started)
        finished = next((m["cpu"] for m in self.lines if "finished" in m), None)
        return 0.0 if started is None or finished is None else finished - started


def play_round(
    server: Any, system: str, args: argparse.Namespace, fault: str | None = None
) -> dict[str, Any]:
    url = server.create_database(system[0])
    setup_schema(system, url)
    folder = Path(tempfile.mkdtemp(prefix=f"gatehouse-load-{system}-"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GATEHOUSE_LOAD_MODEL_MS": str(args.model_ms)}
    if getattr(args, "profile", False) and not fault:
        env["GATEHOUSE_LOAD_PROFILE"] = "1"
    threads = [f"{system[0]}{i:03d}" for i in range(args.threads)]
    inbox: queue.Queue[Any] = queue.Queue()
    owner: dict[str, Proc] = {}
    workers = []
    for w in range(args.workers):
        mine = threads[w :: args.workers]
        proc = Proc(
            f"worker{w}",
            ["worker", system, url, str(folder), str(args.turns), *mine],
            env,
            inbox,
        )
        workers.append(proc)
        owner.update(dict.fromkeys(mine, proc))
    slow = {"GATEHOUSE_LOAD_SLOW_TURN": "1"} if fault == "kill" else {}

    def new_approver() -> Proc:
        return Proc("approver", ["approver", system, url, str(folder)], {**env, **slow}, inbox)

    approver = new_approver()
    approvers = [approver]
    slow = {}  # the next approver runs at full speed
    ready = 0
    while ready < len(workers) + 1:
        proc, message = inbox.get(timeout=300)
        if "exited" in message:
            raise RuntimeError(f"{proc.name} of {system} exited before it was ready")
        ready += "ready" in message
    cpu0, work0 = pg_cpu_s(server), pg_work(url)
    started = time.perf_counter()
    for proc in workers:
        proc.tell(go=True)
    outstanding: dict[str, int] = {}
    send_ms, answer_ms, errors, asked, approved = [], [], 0, 0, set()
    finished, restarted, killed = 0, False, 0
    stuck: list[dict[str, Any]] = []
    total = args.threads * args.turns
    last = time.monotonic()
    while finished < len(workers):
        try:
            proc, message = inbox.get(timeout=0.1)
            last = time.monotonic()
        except queue.Empty:
            if time.monotonic() - last > 600:
                raise RuntimeError(
                    f"{system}: nothing happened for 10 minutes; see {folder}"
                ) from None
            proc, message = None, {}
        if "card" in message:
            send_ms.append(message["ms"])
            errors += message["errors"]
            outstanding[message["card"]] = message["turn"]
            approver.tell(card=message["card"], turn=message["turn"])
        elif "done" in message and proc is approver:
            answer_ms.append(message["ms"])
            errors += message["errors"]
            asked += message["asked"]
            outstanding.pop(message["done"], None)
            owner[message["done"]].tell(done=message["done"])
        elif "approve" in message and message["kind"] == "approval":
            approved.add(f"{message['approve']} turn {message['turn']}")
        elif "finished" in message and proc in workers:
            finished += 1
        elif "stuck" in message:
            stuck.append(message)
        elif "exited" in message and proc in workers and message["exited"] != 0:
            raise RuntimeError(
                f"{proc.name} of {system} failed ({message['exited']}): see {folder}"
            )
        if fault == "kill" and not killed and len(in_calls(folder, turn=1)) >= args.kill_calls:
            os.kill(approver.popen.pid, signal.SIGKILL)  # in the middle of approved calls
            killed = len(in_calls(folder, turn=1))
            approver = new_approver()
            approvers.append(approver)
            for thread_id, turn in outstanding.items():
                approver.tell(card=thread_id, turn=turn)
        if fault == "restart" and not restarted and len(answer_ms) >= total // 3:
            server.restart()
            restarted = True
    elapsed = time.perf_counter() - started
    approver.end_input()
    approver.popen.wait(120)
    for proc in workers:
        proc.end_input()
        proc.popen.wait(60)
    time.sleep(0.5)  # the backends' statistics flushed as they exit
    cpu1, work1 = pg_cpu_s(server), pg_work(url)
    runs = Counter(line for f in folder.glob("runs-*.txt") for line in f.read_text().splitlines())
    expected = {f"{t} turn {n}" for t in threads for n in range(args.turns)}
    result = {
        "system": system,
        "fault": fault,
        "workers": args.workers,
        "threads": args.threads,
        "turns": total,
        "elapsed_s": elapsed,
        "throughput": total / elapsed,
        "send_card_ms": percentiles(send_ms),
        "approve_answer_ms": percentiles(answer_ms),
        "errors": errors,
        "app_cpu_ms_per_turn": 1000 * sum(p.cpu() for p in [*workers, approver]) / total,
        "pg_cpu_ms_per_turn": 1000 * (cpu1 - cpu0) / total,
        "pg_per_turn": {
            k: (work1.get(k, 0) - work0.get(k, 0)) / total
            for k in work1
            if not (fault == "restart" and k.startswith("table:"))
        },
        "ran_once": sum(1 for k in expected if runs[k] == 1),
        "ran_twice": sum(1 for k in expected if runs[k] > 1),
        "never_ran": sum(1 for k in expected if runs[k] == 0),
        "ran_unapproved": sum(1 for k in runs if k not in approved),
        "killed_in_calls": killed,
        "outcome_unknown_asked": asked,
        "inconsistent": inconsistent(system, url, threads, args.turns),
        # Threads a worker gave up on (neither paused, running nor done): their turns lost.
        "stuck": stuck,
    }
    if env.get("GATEHOUSE_LOAD_PROFILE"):
        result["profile"] = profile_top(folder)
    server.drop_database(url)
    print(f"# {system} {fault or 'load'}: {json.dumps(result)}", file=sys.stderr)
    return result


def profile_top(folder: Path, count: int = 25) -> list[str]:
    """The functions the round's processes spent the most time in (cumulative, all
    processes' threads together: wall time of the threads, not CPU)."""
    import io
    import pstats

    files = [str(f) for f in folder.glob("*.prof")]
    if not files:
        return []
    text = io.StringIO()
    pstats.Stats(*files, stream=text).sort_stats("tottime").print_stats(count)
    return text.getvalue().splitlines()


def in_calls(folder: Path, *, turn: int) -> list[str]:
    """The approved calls of `turn` that started (a line each, written first)."""
    return [
        line
        for f in folder.glob("runs-*.txt")
        for line in f.read_text().splitlines()
        if line.endswith(f" turn {turn}")
    ]


def percentiles(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        return {"p50": values[0] if values else 0.0, "p95": 0.0, "p99": 0.0}
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50": statistics.median(values), "p95": cuts[94], "p99": cuts[98]}


def inconsistent(system: str, url: str, threads: list[str], turns: int) -> int:
    """Threads that do not end as they should: every turn answered, every tool call
    answered exactly once, nothing pending."""
    from langchain_core.messages import AIMessage, ToolMessage

    from bench.load_procs import open_app, turn_done

    app = open_app(system, url)
    bad = 0
    try:
        for thread_id in threads:
            messages = app.messages(thread_id)
            calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
            answered = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
            if (
                sorted(calls) != sorted(answered)
                or len(calls) != 2 * turns
                or app.pause(thread_id) is not None
                or not turn_done(app, thread_id, turns - 1)
            ):
                bad += 1
    finally:
        app.close()
    return bad


# -- the inbox -------------------------------------------------------------------------
def clone_paused(url: str, source: str, first: int, last: int) -> None:
    """Copies `inbox-<first..last>` of the paused thread `source` in every table that
    has threads."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'thread_id' "
            "AND table_schema = 'public'"
        ).fetchall()
        for (table,) in tables:
            columns = [
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                    "AND table_schema = 'public' ORDER BY ordinal_position",
                    (table,),
                ).fetchall()
            ]
            chosen = ", ".join("'inbox-' || g" if c == "thread_id" else c for c in columns)
            conn.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) SELECT {chosen} FROM {table}, "
                "generate_series(%s::int, %s::int) g WHERE thread_id = %s ON CONFLICT DO NOTHING",
                (first, last, source),
            )
        conn.execute("ANALYZE")


def timed(fn: Any, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def cli_ms(url: str, *args: str) -> float:
    env = {**os.environ, "GATEHOUSE_DB": url, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "gatehouse.ui.term.entry", *args]

    def run() -> None:
        subprocess.run(command, env=env, cwd=ROOT, capture_output=True, check=True, timeout=120)

    return timed(run)


def inbox(server: Any, sizes: list[int]) -> list[dict[str, Any]]:
    """The inbox's reads at each size of paused threads, for both systems."""
    from bench.load_procs import open_app, user_text

    rows = []
    for system in ("gatehouse", "peer"):
        url = server.create_database(f"i{system[0]}")
        setup_schema(system, url)
        os.environ["GATEHOUSE_LOAD_DIR"] = tempfile.mkdtemp()
        app = open_app(system, url)
        app.send("seed", user_text("seed", 0))
        have = 0
        for size in sizes:
            clone_paused(url, "seed", have + 1, size)
            have = size
            row: dict[str, Any] = {"system": system, "paused": have + 1}
            if system == "gatehouse":
                session = app.session  # type: ignore[attr-defined]
                row["session_list_ms"] = timed(lambda s=session: s.thread_list().awaiting_approval)
                row["web_first_page_ms"] = timed(
                    lambda s=session: s.thread_list().pending_many(
                        [i.thread_id for i in s.thread_list().awaiting_approval[:50]]
                    )
                )
                row["session_all_cards_ms"] = timed(session.thread_list().pending_cards, 1)
                row["cli_pending_json_ms"] = cli_ms(url, "pending", "--json")
                row["cli_threads_json_ms"] = cli_ms(url, "threads", "--json")
                row["cli_threads_json_all_ms"] = cli_ms(
                    url, "threads", "--json", "--limit", str(size + 1)
                )
            else:
                row["find_paused_ms"] = timed(lambda a=app, u=url: peer_paused(a, u, 50), 1)
            rows.append(row)
        app.close()
        server.drop_database(url)
    return rows


def peer_paused(app: Any, url: str, first: int) -> int:
    """What the peer's app must do to list its paused threads: scan the interrupt writes
    for thread ids, then read each one's state for its card (the first page)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT thread_id FROM checkpoint_writes WHERE channel = '__interrupt__'"
            ).fetchall()
        ]
    return sum(1 for t in ids[:first] if app.pause(t) is not None)


# -- the run ---------------------------------------------------------------------------
def summary(rounds: list[dict[str, Any]], system: str) -> dict[str, Any]:
    mine = [r for r in rounds if r["system"] == system]
    if not mine:
        return {}

    def mean(key: str) -> float:
        return statistics.fmean(r[key] for r in mine)

    def merged(key: str, p: str) -> float:
        return statistics.fmean(r[key][p] for r in mine)

    table_keys = {k for r in mine for k in r["pg_per_turn"]}
    return {
        "rounds": len(mine),
        "throughput": mean("throughput"),
        **{f"send_card_{p}": merged("send_card_ms", p) for p in ("p50", "p95", "p99")},
        **{f"approve_answer_{p}": merged("approve_answer_ms", p) for p in ("p50", "p95", "p99")},
        "errors": sum(r["errors"] for r in mine),
        "app_cpu_ms_per_turn": mean("app_cpu_ms_per_turn"),
        "pg_cpu_ms_per_turn": mean("pg_cpu_ms_per_turn"),
        "pg_per_turn": {
            k: statistics.fmean(r["pg_per_turn"].get(k, 0) for r in mine) for k in table_keys
        },
        "ran_once": sum(r["ran_once"] for r in mine),
        "turns": sum(r["turns"] for r in mine),
        "ran_twice": sum(r["ran_twice"] for r in mine),
        "never_ran": sum(r["never_ran"] for r in mine),
        "ran_unapproved": sum(r["ran_unapproved"] for r in mine),
        "inconsistent": sum(r["inconsistent"] for r in mine),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=30)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--order", default="GPPG", help="the rounds, G(atehouse) and P(eer)")
    parser.add_argument("--model-ms", type=float, default=150)
    parser.add_argument("--kill-calls", type=int, default=4, help="approved calls killed")
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument("--inbox", default="1000,10000", help="paused threads ('' skips)")
    parser.add_argument(
        "--scale",
        default="1",
        help="worker counts also played once per system, to show what scales ('' skips)",
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: tiny and fast")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the load rounds' processes"
    )
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument(
        "--update", action="store_true", help="rewrite the load tables of --markdown"
    )
    parser.add_argument("--markdown", default=str(ROOT / "BENCHMARKS.md"))
    args = parser.parse_args(argv)
    if args.quick:
        args.workers, args.threads, args.turns, args.order = 2, 4, 2, "GP"
        args.kill_calls, args.inbox, args.model_ms, args.no_faults = 2, "50", 20, True
        args.scale = ""
    from tests.support.postgres import running_server

    report: dict[str, Any] = {"args": vars(args), "started": time.strftime("%Y-%m-%d %H:%M")}
    with running_server(durable=True) as server:
        report["rounds"] = [
            play_round(server, SYSTEMS[letter], args) for letter in args.order.upper()
        ]
        report["summary"] = {s: summary(report["rounds"], s) for s in SYSTEMS.values()}
        # The same load with fewer worker processes (the approver stays one process).
        report["scale"] = [
            {
                **play_round(server, system, argparse.Namespace(**{**vars(args), "workers": w})),
                "workers": w,
            }
            for w in (int(n) for n in args.scale.split(",") if n)
            for system in SYSTEMS.values()
        ]
        report["faults"] = []
        if not args.no_faults:
            fault_args = argparse.Namespace(
                **{**vars(args), "threads": max(args.kill_calls, args.threads // 3)}
            )
            for fault in ("kill", "restart"):
                for system in SYSTEMS.values():
                    report["faults"].append(play_round(server, system, fault_args, fault))
        sizes = [int(s) for s in args.inbox.split(",") if s]
        report["inbox"] = inbox(server, sizes) if sizes else []
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    text = markdown(report)
    print(text)
    if args.update:
        update_benchmarks(Path(args.markdown), text)
    return report


def markdown(report: dict[str, Any]) -> str:
    from bench.load_report import render

    return render(report)


def update_benchmarks(path: Path, text: str) -> None:
    """The tables between the load markers of `path` replaced by `text`."""
    begin, end = "<!-- load:begin -->", "<!-- load:end -->"
    doc = path.read_text()
    if begin in doc and end in doc:
        doc = doc[: doc.index(begin) + len(begin)] + "\n" + text + "\n" + doc[doc.index(end) :]
        path.write_text(doc)


if __name__ == "__main__":
    main()

"""Cold paths: a thread resumed by id in a process that has never seen it, Gatehouse
against its peer, on SQLite and on Postgres, in one run.

    uv run python -m bench.cold --out cold.json            # N = 200, 400, 2000 (peer: 200, 400)
    uv run python -m bench.cold --out cold.json --quick    # N = 3, 6: a check that it all runs
    uv run python -m bench.cold --out cold.json --no-postgres --before ../main   # and main, same run

`bench.run` runs this too (the one benchmark command); alone it only writes JSON.

How it measures:
- build: one process per system and backend drives one thread (the long-thread
  workload of `bench.workload`) to max(N) turns. At each N it leaves the thread paused
  at the approval of turn N + 1, closes its storage and takes a copy of the database
  (a file copy; on Postgres `CREATE DATABASE ... TEMPLATE`), then goes on.
- samples: each in a new process (`python -m bench.cold sample ...`). It imports
  what the system imports, including the modules LangChain and LangGraph load on
  their first run (found once per system by a first run on a throwaway database),
  times that apart (`import_s`), collects the garbage the imports left, then measures:
  - `resume`: open (Gatehouse: `open_session` with the default toolset; the peer: its
    saver and `create_agent`), read the pending request, approve (until the run has
    started), run to the end. Then (not timed) it sends the next message, so the
    thread is paused again for the next sample.
  - `pending`: open, then the first read of the pending request;
  - `get_state`: open, then the first `get_state` of the thread head;
  - `floor` (Gatehouse): one indexed read of the head and decoding its messages, then
    one LangGraph step (a one-node graph): what any resume must do.
  The systems' samples alternate. `--before DIR` adds `gatehouse-before`: Gatehouse
  from an older checkout in DIR (its bench/ replaced by this one), sampled the same
  way on copies of the same threads (SQLite).
  (Not forked from one process that imported once: a forked child pays a page
  fault for each page it touches first, about 10 ms here, which would blur both.)
- LangGraph's own resume floor (SQLite, `bench.hitl_floor`): the smallest graph that
  does what one resume does (interrupt, one tool call, one model call) on a one-turn
  thread, nothing of either system in it: what no design on LangGraph goes below.
- terminal (SQLite): the `gatehouse` console script as a user runs it, wall time of
  the whole process, interleaved with the framework import floor (`python -c` importing
  `langgraph.graph`, `BaseChatModel` and `SqliteSaver`).

The peer is `create_agent` + `HumanInTheLoopMiddleware` + `SqliteSaver` / `PostgresSaver`
(set up once by the builder, as an application would), driven as `bench.workload`
drives it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
THREAD = "bench-thread"
SYSTEMS = ("gatehouse", "peer")
BACKENDS = ("sqlite", "postgres")


# -- the two systems, opened cold -----------------------------------------------------
class Gatehouse:
    """Gatehouse as an application opens it: `open_session` with the default toolset
    (files, shell, HTTP; the sandbox probe; policy; hooks) on its default storage for
    the backend. The scripted model (`bench.workload.DefaultToolsModel`) asks for
    `write_file` (gated) and `read_file` (free) each turn."""

    def __init__(self, db: str, turns: int = 8) -> None:
        from gatehouse.graph import Settings, open_session

        ws = workspace()
        self.session = open_session(Settings(db=db, workspace=str(ws)), model=default_tools_model())
        self.storage = self.session.storage

    def pending(self) -> Any:
        pause = self.session.view(THREAD).pending
        assert pause is not None, "the thread is not paused"
        return pause

    def get_state(self) -> Any:
        return self.session.agent.get_state({"configurable": {"thread_id": THREAD}})

    def load_messages_ms(self) -> float:
        """Reading the head's messages again, this process's cache emptied first."""
        saver = self.storage.checkpointer
        saver.clear_cache()  # type: ignore[attr-defined]
        config = saver.get_tuple({"configurable": {"thread_id": THREAD}}).config  # type: ignore[union-attr]
        start = time.perf_counter()
        saver.get_delta_channel_history(config=config, channels=["messages"])
        return (time.perf_counter() - start) * 1000

    def approve(self) -> float:
        """Approve and run to the end; returns the seconds until the run was started
        (the answer checked, the decision recorded)."""
        from bench.workload import APPROVE

        start = time.perf_counter()
        run = self.session.resume(THREAD, APPROVE)
        submitted = time.perf_counter() - start
        run.collect()
        assert run.status == "completed", run.status
        return submitted

    def send(self, turn: int) -> None:
        from bench.workload import user_text

        run = self.session.send(THREAD, user_text(turn))
        run.collect()
        assert run.status == "awaiting_approval", run.status

    def close(self) -> None:
        self.session.close()


def workspace() -> Path:
    """The bench's workspace (set by `run` for every process of one run)."""
    ws = Path(
        os.environ.get("GATEHOUSE_BENCH_WORKSPACE")
        or Path(tempfile.gettempdir()) / "gatehouse-bench-ws"
    )
    ws.mkdir(parents=True, exist_ok=True)
    readme = ws / "README.md"
    if not readme.exists():
        from bench.workload import payload

        readme.write_text(payload("readme", 0))
    return ws


def default_tools_model() -> Any:
    from bench.workload import DefaultToolsModel

    return DefaultToolsModel(chunk_chars=16, usage=True)


class Peer:
    """`create_agent` + `HumanInTheLoopMiddleware` on `SqliteSaver` or `PostgresSaver`."""

    def __init__(self, db: str, turns: int = 8, *, setup: bool = False) -> None:
        from langchain.agents import create_agent
        from langchain.agents.middleware import HumanInTheLoopMiddleware

        from bench.workload import TOOLS, scripted_model

        if db.startswith("postgresql://"):
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg.rows import dict_row

            self.conn: Any = psycopg.connect(
                db, autocommit=True, prepare_threshold=0, row_factory=dict_row
            )
            self.saver: Any = PostgresSaver(self.conn)
        else:
            from langgraph.checkpoint.sqlite import SqliteSaver

            self.conn = sqlite3.connect(db, check_same_thread=False)
            self.saver = SqliteSaver(self.conn)
        if setup:
            self.saver.setup()
        self.agent = create_agent(
            model=scripted_model(turns),
            tools=TOOLS,
            middleware=[HumanInTheLoopMiddleware(interrupt_on={"gated_tool": True})],
            checkpointer=self.saver,
        )
        self.config = {"configurable": {"thread_id": THREAD}}

    def _drain(self, payload: Any) -> bool:
        interrupted = False
        for mode, chunk in self.agent.stream(
            payload, self.config, stream_mode=["messages", "updates"]
        ):
            if mode == "updates" and "__interrupt__" in chunk:
                interrupted = True
        return interrupted

    def pending(self) -> Any:
        interrupts = self.agent.get_state(self.config).interrupts
        assert interrupts, "the thread is not paused"
        return interrupts[0].value

    def get_state(self) -> Any:
        return self.agent.get_state(self.config)

    def load_messages_ms(self) -> float:
        """Reading the head checkpoint again: its blob holds the whole message list."""
        start = time.perf_counter()
        self.saver.get_tuple(self.config)
        return (time.perf_counter() - start) * 1000

    def approve(self) -> float:
        from langgraph.types import Command

        from bench.workload import APPROVE

        assert not self._drain(Command(resume=APPROVE)), "expected the turn to finish"
        return 0.0  # the answer is checked inside the run (HumanInTheLoopMiddleware)

    def send(self, turn: int) -> None:
        from langchain_core.messages import HumanMessage

        from bench.workload import user_text

        assert self._drain({"messages": [HumanMessage(user_text(turn))]}), (
            "expected an approval request"
        )

    def close(self) -> None:
        self.conn.close()


def open_system(system: str, db: str, turns: int = 8, *, setup: bool = False) -> Gatehouse | Peer:
    if system == "gatehouse":
        return Gatehouse(db, turns)
    if system == "peer":
        return Peer(db, turns, setup=setup)
    raise ValueError(f"unknown system {system!r}")


# -- building threads -----------------------------------------------------------------
def snapshot_name(system: str, n: int) -> str:
    return f"{system.replace('-', '_')}_{n}"


def build(
    system: str, db: str, milestones: list[int], snapshots: Path, admin_url: str | None
) -> dict[str, str]:
    """Drive one thread to max(milestones) turns; at each N leave it paused at the
    approval of turn N + 1 and copy the database. Returns N -> the copy's location."""
    last = max(milestones)
    copies: dict[str, str] = {}
    # ScriptedModel answers the k-th AI message of the thread with script[k].
    driver = open_system(system, db, last + 4, setup=True)
    try:
        for turn in range(1, last + 2):
            driver.send(turn)
            if turn - 1 in milestones:
                driver.close()
                copies[str(turn - 1)] = copy_database(
                    db, snapshots, snapshot_name(system, turn - 1), admin_url
                )
                driver = open_system(system, db, last + 4)
            if turn <= last:
                driver.approve()
    finally:
        driver.close()
    return copies


def copy_database(db: str, snapshots: Path, name: str, admin_url: str | None) -> str:
    if db.startswith("postgresql://"):
        import psycopg

        assert admin_url is not None
        source = db.rsplit("/", 1)[1]
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{source}" STRATEGY FILE_COPY')
        return db.rsplit("/", 1)[0] + "/" + name
    target = snapshots / f"{name}.sqlite"
    shutil.copyfile(db, target)
    return str(target)


# -- samples: one forked child each ------------------------------------------------
def measure(kind: str, system: str, db: str, turn: int) -> dict[str, float]:
    """One sample, in a process that has imported but not opened, read or run anything."""
    clock, cpu = time.perf_counter, time.process_time
    if kind == "floor":
        return floor(db)
    start, cpu_start = clock(), cpu()
    driver = open_system(system, db, turn + 4)
    opened = clock()
    try:
        if kind == "resume":
            driver.pending()
            read = clock()
            approve_s = driver.approve()
            done, cpu_done = clock(), cpu()
            out = {
                "open_ms": (opened - start) * 1000,
                "read_ms": (read - opened) * 1000,
                "approve_ms": approve_s * 1000,
                "run_ms": (done - read - approve_s) * 1000,
                "total_ms": (done - start) * 1000,
                "cpu_ms": (cpu_done - cpu_start) * 1000,
            }
            # Not part of the sample: the same resume once more in this (now warm)
            # process, which tells what any resume costs from what a cold one adds.
            driver.send(turn)
            warm = clock()
            driver.pending()
            driver.approve()
            out["warm_resume_ms"] = (clock() - warm) * 1000
            driver.send(turn + 1)  # paused again for the next sample
            return out
        if kind in ("pending", "get_state"):
            cpu_opened = cpu()
            getattr(driver, kind)()
            done, cpu_done = clock(), cpu()
            out = {
                "open_ms": (opened - start) * 1000,
                "read_ms": (done - opened) * 1000,
                "total_ms": (done - start) * 1000,
                "read_cpu_ms": (cpu_done - cpu_opened) * 1000,
            }
            if kind == "get_state":
                # Of which: loading the messages alone (the floor of any first read).
                out["messages_ms"] = driver.load_messages_ms()
            return out
        raise ValueError(f"unknown sample kind {kind!r}")
    finally:
        driver.close()


def floor(db: str) -> dict[str, float]:
    """What any resume of the thread must do, in a fresh process: one indexed read of
    the head and deserialising its messages (Gatehouse's saver, this process's cache
    empty), then one LangGraph step (a one-node graph, compiled before the clock)."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from gatehouse.graph.store import open_storage

    class Tiny(TypedDict):
        step: int

    tiny = StateGraph(Tiny)
    tiny.add_node("step", lambda state: {"step": state["step"] + 1})
    tiny.add_edge(START, "step")
    tiny.add_edge("step", END)
    graph = tiny.compile()
    storage = open_storage(db)
    try:
        saver = storage.checkpointer
        # What building the agent tells the saver: how to fold the messages channel.
        from gatehouse.graph.agent.message_merge import merge_messages

        saver.register_reducer("messages", merge_messages)  # type: ignore[attr-defined]
        start = time.perf_counter()
        head = saver.get_tuple({"configurable": {"thread_id": THREAD}})
        assert head is not None
        saver.get_delta_channel_history(config=head.config, channels=["messages"])  # type: ignore[attr-defined]
        read = time.perf_counter()
        graph.invoke({"step": 0})
        done = time.perf_counter()
    finally:
        storage.close()
    return {
        "read_ms": (read - start) * 1000,
        "step_ms": (done - read) * 1000,
        "total_ms": (done - start) * 1000,
    }


IMPORTS = {
    "gatehouse": [
        "gatehouse.graph.service.app",
        "gatehouse.graph.service.session",
        "gatehouse.graph.store",
        "gatehouse.graph.agent.graph",
        "gatehouse.tools.sandbox",
        "bench.workload",
    ],
    "peer": [
        "langchain.agents",
        "langchain.agents.middleware",
        "langgraph.checkpoint.sqlite",
        "bench.workload",
    ],
}
POSTGRES_IMPORTS = {
    "gatehouse": ["gatehouse.graph.store.postgres"],
    "peer": ["langgraph.checkpoint.postgres", "psycopg"],
}


def import_system(system: str, backend: str, lazy: list[str]) -> float:
    """Import what `system` imports, including `lazy`: what LangChain and LangGraph
    load on first use (found by `first_run_modules`). Returns the seconds it took."""
    import importlib

    start = time.perf_counter()
    for name in (
        IMPORTS[system] + (POSTGRES_IMPORTS[system] if backend == "postgres" else []) + lazy
    ):
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    return time.perf_counter() - start


def first_run_modules(system: str, backend: str, scratch: str) -> list[str]:
    """The modules a system's first run imports: build and resume a one-turn thread in
    `scratch` (a throwaway database) and see what loaded."""
    import_system(system, backend, [])
    before = set(sys.modules)
    driver = open_system(system, scratch, 4, setup=True)
    try:
        driver.send(1)
        driver.pending()
        driver.approve()
        driver.get_state()
    finally:
        driver.close()
    if system == "gatehouse":
        floor(scratch)
    return sorted(m for m in set(sys.modules) - before if not m.startswith("__"))


def sample(
    system: str, backend: str, kind: str, db: str, turn: int, lazy: list[str]
) -> dict[str, float]:
    """One sample in this (new) process: imports first (timed apart), then `measure`."""
    import gc

    import_s = import_system(system, backend, lazy)
    gc.collect()  # what the imports left behind is not the sample's to collect
    return {**measure(kind, system, db, turn), "import_s": import_s}


def run_json(*args: str, root: Path = ROOT, module: str = "bench.cold") -> Any:
    """Run `python -m module *args` from `root` in a new process; its last line is JSON."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{module} {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _medians(samples: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


def sample_systems(
    systems: dict[str, dict[str, str]],
    backend: str,
    scratch: dict[str, str],
    tmp: Path,
    *,
    resumes: int,
    reads: int,
    roots: dict[str, Path],
) -> dict[str, Any]:
    """Every sample of every system on one backend, each in a new process, the systems
    alternating sample by sample (so a change in the machine's load hits all alike)."""
    lazy: dict[str, Path] = {}
    for system in systems:
        lazy[system] = tmp / f"lazy-{system}-{backend}.json"
        lazy[system].write_text(
            json.dumps(
                run_json(
                    "first-run",
                    "--system",
                    code_system(system),
                    "--backend",
                    backend,
                    "--scratch",
                    scratch[system],
                    root=roots[system],
                )
            )
        )
    imports: dict[str, list[float]] = {system: [] for system in systems}

    def one(system: str, kind: str, db: str, turn: int) -> dict[str, float]:
        result = run_json(
            "sample",
            "--system",
            code_system(system),
            "--backend",
            backend,
            "--kind",
            kind,
            "--db",
            db,
            "--turn",
            str(turn),
            "--lazy",
            str(lazy[system]),
            root=roots[system],
        )
        imports[system].append(result.pop("import_s"))
        return result

    out: dict[str, Any] = {system: {"at": {}} for system in systems}
    lengths = sorted({int(n) for copies in systems.values() for n in copies})
    for n in map(str, lengths):
        here = [system for system in systems if n in systems[system]]
        rows: dict[str, dict[str, Any]] = {system: {} for system in here}
        kinds = ["pending", "get_state"]
        for kind in kinds:
            got: dict[str, list[dict[str, float]]] = {system: [] for system in here}
            for i in range(reads):
                for system in here if i % 2 == 0 else here[::-1]:
                    got[system].append(one(system, kind, systems[system][n], int(n) + 1))
            for system in here:
                rows[system][kind] = _medians(got[system])
        got = {system: [] for system in here}
        floors: dict[str, list[dict[str, float]]] = {
            system: [] for system in here if code_system(system) == "gatehouse"
        }
        for i in range(resumes):
            for system in here if i % 2 == 0 else here[::-1]:
                got[system].append(one(system, "resume", systems[system][n], int(n) + 2 + 2 * i))
                if system in floors and i < max(1, reads):
                    floors[system].append(one(system, "floor", systems[system][n], 0))
        for system in here:
            row = rows[system]
            row["resume"] = _medians(got[system])
            row["resume"]["samples_ms"] = [s["total_ms"] for s in got[system]]  # type: ignore[assignment]
            if floors.get(system):
                row["floor"] = _medians(floors[system])
            out[system]["at"][n] = row
            r = row["resume"]
            print(
                f"[cold] {backend} {system} N={n}: resume {r['total_ms']:.1f} ms (open {r['open_ms']:.1f}, read "
                f"{r['read_ms']:.1f}, approve {r['approve_ms']:.1f}, run {r['run_ms']:.1f}; CPU {r['cpu_ms']:.1f})"
                + (f"; floor {row['floor']['total_ms']:.1f}" if "floor" in row else "")
                + f"; first pending() {row['pending']['read_ms']:.1f} ms, get_state {row['get_state']['read_ms']:.1f} ms",
                flush=True,
            )
    for system in systems:
        out[system]["import_s"] = statistics.median(imports[system])
    return out


def code_system(system: str) -> str:
    """The driver a system name runs: `gatehouse-before` is Gatehouse at another commit."""
    return "gatehouse" if system.startswith("gatehouse") else system


def _build_in_subprocess(
    system: str, db: str, milestones: list[int], snapshots: Path, admin_url: str | None, out: Path
) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [
        sys.executable,
        "-m",
        "bench.cold",
        "build",
        "--system",
        system,
        "--db",
        db,
        "--milestones",
        ",".join(map(str, milestones)),
        "--snapshots",
        str(snapshots),
        "--out",
        str(out),
    ]
    if admin_url:
        args += ["--admin-url", admin_url]
    subprocess.run(args, cwd=ROOT, env=env, check=True)
    return json.loads(out.read_text())


# -- Postgres -----------------------------------------------------------------------------
@contextlib.contextmanager
def postgres_server() -> Iterator[Any]:
    """A throwaway Postgres server, as the tests start one (tests/support/postgres.py)."""
    from tests.support.postgres import PostgresServer, _server_user, find_bin_dir, free_port

    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise RuntimeError(
            "Postgres binaries (initdb, pg_ctl) not found; set GATEHOUSE_PG_BIN or use --no-postgres"
        )
    root = Path(tempfile.mkdtemp(prefix="gatehouse-bench-pg-"))
    server = PostgresServer(bin_dir, root, free_port(), _server_user())
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


# -- the terminal client ---------------------------------------------------------------
FLOOR = (
    "import langgraph.graph\n"
    "from langchain_core.language_models import BaseChatModel\n"
    "from langgraph.checkpoint.sqlite import SqliteSaver\n"
)
DEMO_REQUEST = "write todo-{i}.md: buy milk"


def gatehouse_command() -> list[str]:
    script = Path(sys.executable).parent / "gatehouse"
    return [str(script)] if script.exists() else [sys.executable, "-m", "gatehouse.ui.term.cli"]


def terminal(tmp: Path, repeat: int) -> dict[str, Any]:
    """Wall time of `gatehouse` commands (whole processes, as a user runs them) on a
    database with a few threads, interleaved with the framework import floor."""
    from gatehouse.graph import Settings, open_session

    db, ws = tmp / "term.sqlite", tmp / "ws"
    ws.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATEHOUSE_", "OPENAI_"))}
    env.update(
        GATEHOUSE_DB=str(db), GATEHOUSE_WORKSPACE=str(ws), PYTHONPATH=str(ROOT), NO_COLOR="1"
    )
    session = open_session(Settings(db=str(db), workspace=str(ws)))
    try:
        paused = []
        for i in range(2 * repeat + 2):  # one pending thread per approve / reject sample
            run = session.send(None, DEMO_REQUEST.format(i=i))
            run.collect()
            assert run.status == "awaiting_approval", run.status
            pending = session.view(run.thread_id).pending
            assert pending is not None
            # A decision names the request it decides (--interrupt-id), as a script must.
            paused.append([run.thread_id, "--interrupt-id", pending.interrupt_id])
        for _ in range(3):  # and a few finished ones
            run = session.send(None, "list files")
            run.collect()
        finished = run.thread_id
    finally:
        session.close()
    shown = paused.pop()[0]
    gh = gatehouse_command()
    commands: dict[str, Callable[[], list[str]]] = {
        "--help": lambda: [*gh, "--help"],
        "threads": lambda: [*gh, "threads"],
        "pending": lambda: [*gh, "pending"],
        "show ID": lambda: [*gh, "show", shown],
        "approve ID": lambda: [*gh, "approve", *paused.pop()],
        "reject ID": lambda: [*gh, "reject", *paused.pop(), "-m", "not now"],
        # Refused before LangGraph is imported (exit 2, nothing changes): paused[0] is never popped.
        "approve ID --edit 1 BAD-JSON (refused)": lambda: [
            *gh,
            "approve",
            *paused[0],
            "--edit",
            "1",
            "{not json",
        ],
        "reject DONE-ID (refused)": lambda: [*gh, "reject", finished],
        "framework floor": lambda: [sys.executable, "-c", FLOOR],
    }
    refused = {name for name in commands if name.endswith("(refused)")}
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            cmd = argv()
            start = time.perf_counter()
            done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
            times[name].append(time.perf_counter() - start)
            if done.returncode != (2 if name in refused else 0):
                raise RuntimeError(
                    f"{' '.join(cmd)} exited {done.returncode}: {done.stderr[-2000:]}"
                )
    return {name: {"median_s": statistics.median(v), "samples_s": v} for name, v in times.items()}


# -- the whole run ---------------------------------------------------------------------------
def run(args: argparse.Namespace) -> dict[str, Any]:
    turns = sorted({int(x) for x in args.turns.split(",") if x})
    peer_turns = sorted({int(x) for x in args.peer_turns.split(",") if x})
    result: dict[str, Any] = {
        "turns": turns,
        "peer_turns": peer_turns,
        "backends": {},
        "pythondontwritebytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
    }
    roots = {"gatehouse": ROOT, "peer": ROOT}
    if args.before:
        # An older checkout, run with this bench (its bench/ replaced by this one).
        before = Path(args.before).resolve()
        shutil.copytree(ROOT / "bench", before / "bench", dirs_exist_ok=True)
        roots["gatehouse-before"] = before
        result["before"] = str(before)
    with tempfile.TemporaryDirectory(prefix="gatehouse-cold-") as name:
        tmp = Path(name)
        os.environ["GATEHOUSE_BENCH_WORKSPACE"] = str(tmp / "workspace")
        backends = [
            b
            for b in BACKENDS
            if not (b == "postgres" and args.no_postgres) and not (b == "sqlite" and args.no_sqlite)
        ]
        for backend in backends:
            with contextlib.ExitStack() as stack:
                admin_url = None
                if backend == "postgres":
                    server = stack.enter_context(postgres_server())
                    admin_url = server.admin_url
                built: dict[str, dict[str, str]] = {}
                scratch: dict[str, str] = {}
                for system in SYSTEMS:
                    milestones = turns if system == "gatehouse" else peer_turns
                    if not milestones:
                        continue
                    snapshots = tmp / f"{backend}-{system}"
                    snapshots.mkdir()
                    if backend == "postgres":
                        db = server.create_database(prefix=f"build_{system}")
                    else:
                        db = str(snapshots / "build.sqlite")
                    started = time.perf_counter()
                    print(
                        f"[cold] {backend} {system}: building a {max(milestones)}-turn thread ...",
                        flush=True,
                    )
                    built[system] = _build_in_subprocess(
                        system, db, milestones, snapshots, admin_url, tmp / "copies.json"
                    )
                    print(
                        f"[cold] {backend} {system}: built in {time.perf_counter() - started:.0f} s",
                        flush=True,
                    )
                    if backend == "sqlite":
                        os.remove(db)
                    if backend == "postgres":
                        scratch[system] = server.create_database(prefix=f"scratch_{system}")
                    else:
                        scratch[system] = str(snapshots / "scratch.sqlite")
                    if (
                        system == "gatehouse"
                        and "gatehouse-before" in roots
                        and backend == "sqlite"
                    ):
                        # The same threads, copied: each system's samples move their own copy on.
                        before_dir = tmp / f"{backend}-gatehouse-before"
                        before_dir.mkdir()
                        built["gatehouse-before"] = {
                            n: copy_database(
                                db_n, before_dir, snapshot_name("before", int(n)), None
                            )
                            for n, db_n in built[system].items()
                        }
                        scratch["gatehouse-before"] = str(before_dir / "scratch.sqlite")
                result["backends"][backend] = sample_systems(
                    dict(sorted(built.items(), key=lambda kv: list(roots).index(kv[0]))),
                    backend,
                    scratch,
                    tmp,
                    resumes=args.resumes,
                    reads=args.reads,
                    roots=roots,
                )
                if backend == "sqlite":
                    for copies in built.values():
                        for path in copies.values():
                            os.remove(path)
        if "sqlite" in backends:
            # What any LangGraph human-in-the-loop resume costs (bench/hitl_floor.py), in
            # the same run: the cold-resume targets read against it.
            from bench import hitl_floor

            print("[cold] LangGraph's own resume floor ...", flush=True)
            result["hitl_floor"] = hitl_floor.run(args.resumes)
        if not args.no_terminal:
            print("[cold] terminal commands ...", flush=True)
            result["terminal"] = terminal(tmp, args.terminal_repeat)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command")
    b = sub.add_parser("build", help="(internal) build one thread and its copies")
    b.add_argument("--system", choices=SYSTEMS, required=True)
    b.add_argument("--db", required=True)
    b.add_argument("--milestones", required=True)
    b.add_argument("--snapshots", required=True)
    b.add_argument("--admin-url", default=None)
    b.add_argument("--out", required=True)
    f = sub.add_parser("first-run", help="(internal) the modules a first run imports")
    f.add_argument("--system", choices=SYSTEMS, required=True)
    f.add_argument("--backend", choices=BACKENDS, required=True)
    f.add_argument("--scratch", required=True, help="a throwaway database")
    z = sub.add_parser("sample", help="(internal) one sample, in this process")
    z.add_argument("--system", choices=SYSTEMS, required=True)
    z.add_argument("--backend", choices=BACKENDS, required=True)
    z.add_argument("--kind", choices=("resume", "pending", "get_state", "floor"), required=True)
    z.add_argument("--db", required=True)
    z.add_argument("--turn", type=int, required=True)
    z.add_argument("--lazy", required=True, help="JSON list of modules to import first")
    parser.add_argument("--turns", default="200,400,2000", help="thread lengths for Gatehouse")
    parser.add_argument("--peer-turns", default="200,400", help="thread lengths for the peer")
    parser.add_argument("--resumes", type=int, default=5, help="resume samples per thread length")
    parser.add_argument("--reads", type=int, default=3, help="first-read samples per thread length")
    parser.add_argument("--terminal-repeat", type=int, default=5)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument(
        "--before",
        default=None,
        metavar="DIR",
        help="also sample Gatehouse from an older checkout in DIR (SQLite; DIR/bench is overwritten)",
    )
    parser.add_argument("--no-terminal", action="store_true")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="N = 3, 6 and one sample each (a check that it all runs)",
    )
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    if args.command == "build":
        milestones = sorted({int(x) for x in args.milestones.split(",") if x})
        copies = build(args.system, args.db, milestones, Path(args.snapshots), args.admin_url)
        Path(args.out).write_text(json.dumps(copies))
        return
    if args.command == "first-run":
        print(json.dumps(first_run_modules(args.system, args.backend, args.scratch)))
        return
    if args.command == "sample":
        lazy = json.loads(Path(args.lazy).read_text())
        print(json.dumps(sample(args.system, args.backend, args.kind, args.db, args.turn, lazy)))
        return
    if args.quick:
        if args.turns == parser.get_default("turns"):
            args.turns = "3,6"
        if args.peer_turns == parser.get_default("peer_turns"):
            args.peer_turns = "3,6"
        args.resumes, args.reads, args.terminal_repeat = 1, 1, 1
    if not args.out:
        parser.error("--out is required")
    Path(args.out).write_text(json.dumps(run(args), indent=1))


if __name__ == "__main__":
    main()


# -- the report (bench.run puts it in BENCHMARKS.md) ------------------------------------
# The refusals are checked before LangGraph is imported (issue 32): as fast as `show`.
TERMINAL_FAST = (
    "--help",
    "threads",
    "pending",
    "show ID",
    "approve ID --edit 1 BAD-JSON (refused)",
    "reject DONE-ID (refused)",
)
TERMINAL_RUNS = ("approve ID", "reject ID")


def table(cold: dict[str, Any]) -> str:
    rows = [
        "| backend | system | N | cold resume ms (open / read / approve / run) | CPU ms | floor ms (read + step) "
        "| warm resume ms | first pending() ms | first get_state ms (messages alone) | imports s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for backend, systems in cold["backends"].items():
        for system, res in systems.items():
            for n, at in sorted(res["at"].items(), key=lambda kv: int(kv[0])):
                r, p, g = at["resume"], at["pending"], at["get_state"]
                f = at.get("floor")
                fl = f"{f['total_ms']:.1f} ({f['read_ms']:.1f} + {f['step_ms']:.1f})" if f else "-"
                rows.append(
                    f"| {backend} | {system} | {n} | {r['total_ms']:.1f} ({r['open_ms']:.1f} / {r['read_ms']:.1f} / "
                    f"{r.get('approve_ms', 0.0):.1f} / {r['run_ms']:.1f}) | {r['cpu_ms']:.1f} | {fl} "
                    f"| {r['warm_resume_ms']:.1f} | {p['read_ms']:.2f} "
                    f"| {g['read_ms']:.1f} ({g['messages_ms']:.1f}) | {res['import_s']:.2f} |"
                )
    return "\n".join(rows)


def terminal_table(cold: dict[str, Any]) -> str:
    term = cold.get("terminal") or {}
    if not term:
        return ""
    rows = ["| terminal command (whole process, wall) | median s | samples s |", "|---|---:|---|"]
    for name, t in term.items():
        rows.append(
            f"| `gatehouse {name}` |" if name != "framework floor" else "| framework import floor |"
        )
        rows[-1] += f" {t['median_s']:.3f} | {', '.join(f'{x:.2f}' for x in t['samples_s'])} |"
    return "\n".join(rows)


def targets(cold: dict[str, Any]) -> list[tuple[str, str, bool | None]]:
    """(target, measured, passed); passed is None for information only."""
    out: list[tuple[str, str, bool | None]] = []
    for backend, systems in cold["backends"].items():
        g = systems.get("gatehouse", {}).get("at", {})
        p = systems.get("peer", {}).get("at", {})
        both = sorted(set(g) & set(p), key=int)
        for n in both:
            gt, pt = g[n]["resume"]["total_ms"], p[n]["resume"]["total_ms"]
            out.append(
                (
                    f"{backend}: cold resume at {n} turns <= 1/4 of peer",
                    f"{gt:.1f} vs {pt:.1f} ms (1/{pt / gt:.1f})",
                    gt * 4 <= pt,
                )
            )
            gc, pc = g[n]["resume"]["cpu_ms"], p[n]["resume"]["cpu_ms"]
            out.append(
                (
                    "  same, in CPU time (robust to a busy machine)",
                    f"{gc:.1f} vs {pc:.1f} ms (1/{pc / gc:.1f})",
                    None,
                )
            )
            b = systems.get("gatehouse-before", {}).get("at", {}).get(n)
            if b:
                bt = b["resume"]["total_ms"]
                out.append(
                    (
                        "  before this change (same run)",
                        f"{bt:.1f} ms (1/{pt / bt:.1f} of peer)",
                        None,
                    )
                )
        ns = sorted(g, key=int)
        base = "200" if "200" in g else (ns[0] if ns else None)
        if base and len(ns) > 1:
            last = ns[-1]
            bt, lt = g[base]["resume"]["total_ms"], g[last]["resume"]["total_ms"]
            out.append(
                (
                    f"{backend}: cold resume at {last} turns <= 1.5 x at {base}",
                    f"{lt:.1f} vs {bt:.1f} ms ({lt / bt:.2f} x)",
                    lt <= 1.5 * bt,
                )
            )
            bw, lw = g[base]["resume"]["warm_resume_ms"], g[last]["resume"]["warm_resume_ms"]
            bm, lm = g[base]["get_state"]["messages_ms"], g[last]["get_state"]["messages_ms"]
            out.append(
                (
                    "  of the growth: any resume's own (warm) / loading the messages",
                    f"+{lw - bw:.1f} ms / +{lm - bm:.1f} ms of +{lt - bt:.1f} ms",
                    None,
                )
            )
        hitl = cold.get("hitl_floor")
        if hitl and backend == "sqlite" and both:
            f = hitl["median"]
            first = min(both, key=int)
            quarter = p[first]["resume"]["total_ms"] / 4
            out.append(
                (
                    "  LangGraph's own HITL resume floor (bench/hitl_floor.py: interrupt, "
                    "one tool, one model call, a one-turn thread)",
                    f"first resume in a process {f['total_ms']:.1f} ms (open {f['open_ms']:.1f} + "
                    f"run {f['run_ms']:.1f}), a second {f['warm_total_ms']:.1f} ms; "
                    f"1/4 of the peer at {first} turns: {quarter:.1f} ms",
                    None,
                )
            )
        if both:
            n = both[-1]
            for kind, label in (("pending", "first pending()"), ("get_state", "first get_state")):
                gr, pr = g[n][kind]["read_ms"], p[n][kind]["read_ms"]
                out.append(
                    (
                        f"{backend}: {label} at {n} turns <= 1/2 of peer",
                        f"{gr:.2f} vs {pr:.2f} ms",
                        gr * 2 <= pr,
                    )
                )
        if base and len(ns) > 1:
            last = ns[-1]
            for kind, label in (("pending", "first pending()"), ("get_state", "first get_state")):
                br, lr = g[base][kind]["read_ms"], g[last][kind]["read_ms"]
                out.append(
                    (
                        f"{backend}: {label} at {last} turns <= 1.5 x at {base}",
                        f"{lr:.2f} vs {br:.2f} ms ({lr / br:.2f} x)",
                        lr <= 1.5 * br,
                    )
                )
    term = cold.get("terminal") or {}
    if term:
        floor = term["framework floor"]["median_s"]
        for name in TERMINAL_FAST:
            t = term[name]["median_s"]
            out.append((f"terminal: `gatehouse {name}` <= 0.3 s", f"{t:.3f} s", t <= 0.3))
        for name in TERMINAL_RUNS:
            t = term[name]["median_s"]
            out.append(
                (
                    f"terminal: `gatehouse {name}` <= import floor + 0.2 s",
                    f"{t:.2f} s (floor {floor:.2f} s: +{t - floor:.2f} s)",
                    t <= floor + 0.2,
                )
            )
    return out


def plot(cold: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    styles = {"sqlite": "-", "postgres": "--"}
    for backend, systems in cold["backends"].items():
        for system, res in systems.items():
            ns = sorted(res["at"], key=int)
            xs = [int(n) for n in ns]
            label = f"{system} ({backend})"
            ax1.plot(
                xs,
                [res["at"][n]["resume"]["total_ms"] for n in ns],
                styles[backend],
                marker="o",
                label=label,
            )
            ax2.plot(
                xs,
                [res["at"][n]["get_state"]["read_ms"] for n in ns],
                styles[backend],
                marker="o",
                label=f"get_state, {label}",
            )
            ax2.plot(
                xs,
                [res["at"][n]["pending"]["read_ms"] for n in ns],
                styles[backend],
                marker="x",
                label=f"pending(), {label}",
            )
    ax1.set(
        xlabel="thread length (turns)",
        ylabel="ms",
        title="Cold resume by id (fresh process, no imports)",
        xscale="log",
        yscale="log",
    )
    ax2.set(
        xlabel="thread length (turns)",
        ylabel="ms",
        title="First read in a fresh process",
        xscale="log",
        yscale="log",
    )
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

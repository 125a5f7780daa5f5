"""Attacks on run_command, tried as an attacker would (issue 16), each one with the
bubblewrap sandbox on and in the unsandboxed fallback.

Every attack is stopped by the sandbox. In the fallback an attack is asserted to get
through unless the fallback stops it too (`fallback_stops=True`: the environment
allow list, the ulimits). The allow-list attacks (git running programs named by the
repository, `tail -f`) are in test_sandbox_git.py and test_tools_shell.py; the
sql_query, http_request and delete_file ones next to those tools' other tests.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gatehouse.tools import pids_cap
from gatehouse.tools.sandbox import Access, Limits, choose_sandbox
from gatehouse.tools.workspace import Workspace
from tests.support.sandboxing import MODES, REPO, SYSTEM_PYTHON, outcome, shell, site  # noqa: F401

SECRET = "s3cret-" + uuid.uuid4().hex


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "workspace")


# -- the Gatehouse process: environment and memory ------------------------------------


def as_gatehouse(mode: str, ws: Workspace, command: str, env: dict[str, str]) -> str:
    """Run `command` from a separate process started with `env` added to its environment."""
    shell(mode, ws)  # skips when there is no bubblewrap
    child = subprocess.run(
        [sys.executable, str(REPO / "tests/support/sandbox_child.py"), str(REPO / "tools/sandbox.py"),
         str(ws.root), "require" if mode == "sandbox" else "off", command],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    return child.stdout


def test_parent_environment_via_proc(mode: str, ws: Workspace) -> None:
    out = as_gatehouse(mode, ws, r"tr '\0' '\n' < /proc/$PPID/environ", {"OPENAI_API_KEY": SECRET})
    assert out.strip(), "the attack read nothing at all"
    outcome(mode, SECRET in out, fallback_stops=False, evidence=out)


def test_every_process_environment_via_proc(mode: str, ws: Workspace) -> None:
    command = r"for f in /proc/[0-9]*/environ; do tr '\0' '\n' < $f; done 2>/dev/null | grep -e AWS_SECRET -e PATH="
    out = as_gatehouse(mode, ws, command, {"AWS_SECRET_ACCESS_KEY": SECRET})
    assert "PATH=" in out, "the attack read no environment at all"
    outcome(mode, SECRET in out, fallback_stops=False, evidence=out)


MEMORY_SCAN = r"""
import os, re, sys
needle = sys.argv[1][::-1].encode()  # given reversed, so the command line itself holds no copy
pid, found = os.getppid(), []
while pid > 1:
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            for line in maps:
                fields = line.split()
                if not fields[1].startswith("rw") or (len(fields) > 5 and not fields[5].startswith("[")):
                    continue  # writable anonymous memory, heap and stack: where an environment lives
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                if hi - lo > 256 << 20:
                    continue
                try:
                    mem.seek(lo)
                    if needle in mem.read(hi - lo):
                        found.append(pid)
                        break
                except OSError:
                    pass
    except OSError as exc:
        print(f"pid {pid}: {exc.strerror}")
    if found:
        break
    pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
print("FOUND in pid", found[0] if found else "none")
"""


@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no python3 outside the home folders")
def test_parent_memory_via_proc_mem(
    mode: str, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/proc/<pid>/mem of every ancestor: the Gatehouse process holds its secrets."""
    monkeypatch.setenv("GITHUB_TOKEN", SECRET)
    (ws.root / "scan.py").write_text(MEMORY_SCAN)
    out = shell(mode, ws, timeout_s=30).invoke(
        {"command": f"{SYSTEM_PYTHON} scan.py {SECRET[::-1]}"}
    )
    assert "FOUND in pid" in out, out  # the scan ran
    outcome(mode, "FOUND in pid none" not in out, fallback_stops=False, evidence=out)


@pytest.mark.parametrize(
    "name,value",
    [
        ("DB_PASS", SECRET),
        ("MYSQL_PWD", SECRET),
        ("DATABASE_URI", f"postgresql://app@db.internal/app?password={SECRET}"),
        ("REDIS_URL", f"redis://:{SECRET}@cache.internal:6379/0"),
        ("SLACK_WEBHOOK", f"https://hooks.slack.example/services/{SECRET}"),
        ("HELPER", SECRET),
    ],
    # Named by the variable: an id holding the random secret would differ from one
    # collection to the next (parallel workers, e.g. `pytest -n 2`, then refuse to run).
    ids=["DB_PASS", "MYSQL_PWD", "DATABASE_URI", "REDIS_URL", "SLACK_WEBHOOK", "HELPER"],
)
def test_secrets_under_innocent_names_stay_out(
    mode: str, ws: Workspace, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    out = shell(mode, ws).invoke({"command": "env"})
    assert "PATH=" in out and "HOME=" in out  # the allow list still passes what commands need
    outcome(mode, SECRET in out, fallback_stops=True, evidence=out)


def test_config_names_extra_variables(
    mode: str, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_TOOL_HOME", "/opt/mytool")
    monkeypatch.setenv("OTHER", "not passed")
    out = shell(mode, ws, env_names=["MY_TOOL_HOME"]).invoke({"command": "env | sort"})
    assert "MY_TOOL_HOME=/opt/mytool" in out and "OTHER=" not in out


def test_workspace_program_never_shadows_a_command(
    mode: str, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PATH with `.` (or a workspace folder) would run the workspace's own `ls`."""
    fake = ws.root / "bin" / "ls"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho PWNED\n")
    fake.chmod(0o755)
    (ws.root / "ls").write_bytes(fake.read_bytes())
    (ws.root / "ls").chmod(0o755)
    monkeypatch.setenv("PATH", f".:{fake.parent}:{os.environ['PATH']}")
    out = shell(mode, ws, allow=["ls"]).invoke({"command": "ls"})
    assert "bin" in out.split(), out  # the real ls listed the workspace
    outcome(mode, "PWNED" in out, fallback_stops=True, evidence=out)


# -- files: the database, the home folder, outside the workspace ------------------


@pytest.mark.parametrize(
    "layout", ["database beside the workspace", "database inside the workspace"]
)
def test_gatehouse_database_and_config_are_hidden(mode: str, site: Path, layout: str) -> None:  # noqa: F811
    """Through the real wiring: a config file, load_settings, build_tools."""
    from gatehouse.graph.service.config import load_settings
    from gatehouse.graph.service.toolset import build_tools

    db = (
        site / ".gatehouse" / "gatehouse.db"
        if "beside" in layout
        else site / "workspace" / "state" / "gatehouse.db"
    )
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=wal")
    conn.execute("CREATE TABLE approvals (note TEXT)")
    conn.execute("INSERT INTO approvals VALUES (?)", (SECRET,))
    conn.commit()  # stays open: the WAL holds the row, as in a running Gatehouse
    config = site / "gatehouse.toml"
    sandbox = "auto" if mode == "sandbox" else "off"
    config.write_text(
        f'db = "{db}"\nworkspace = "workspace"\n[model]\napi_key = "{SECRET}"\n[tools]\nshell_sandbox = "{sandbox}"\n'
    )
    try:
        if mode == "sandbox":
            shell(mode, Workspace(site / "workspace"))  # skips when there is no bubblewrap
        tools = {t.name: t for t in build_tools(load_settings(config, env={}))}
        run = tools["run_command"]
        # Control: the place itself is visible, so what follows tests the hiding.
        assert "visible neighbour" in run.invoke({"command": "cat ../neighbour.txt"})
        command = f"cat {db}* ../gatehouse.toml 2>&1 | grep -a -o -e 's3cret-[0-9a-f]*' -e 'No such file.*'"
        out = run.invoke({"command": command})
        outcome(mode, SECRET in out, fallback_stops=False, evidence=out)
    finally:
        conn.close()


def test_home_folder_is_hidden(mode: str, site: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    home = site / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text(f"machine example.com password {SECRET}\n")
    (home / ".ssh" / "id_ed25519").write_text(SECRET)
    monkeypatch.setenv("HOME", str(home))
    run = shell(mode, Workspace(site / "workspace"))
    out = run.invoke({"command": f"cat ~/.netrc {home}/.ssh/id_ed25519; ls -A ~"})
    outcome(mode, SECRET in out, fallback_stops=False, evidence=out)
    # HOME still works: an empty, writable, throwaway folder in the sandbox.
    assert run.invoke({"command": "echo cache > ~/.cache-test && cat ~/.cache-test"}).startswith(
        "cache\n"
    )


@pytest.mark.skipif(not os.access("/etc/shadow", os.R_OK), reason="only root can read /etc/shadow")
def test_machine_secrets_root_could_read(mode: str, ws: Workspace) -> None:
    """Started by root, a command runs as root: the sandbox still hides /etc/shadow."""
    out = shell(mode, ws).invoke({"command": "grep -c : /etc/shadow"})
    outcome(mode, out.split("\n")[0].isdigit(), fallback_stops=False, evidence=out)


def test_writing_outside_the_workspace_with_dotdot(mode: str, site: Path) -> None:  # noqa: F811
    out = shell(mode, Workspace(site / "workspace")).invoke(
        {"command": "echo pwned > ../neighbour.txt; mkdir ../planted"}
    )
    changed = (site / "neighbour.txt").read_text() != "visible neighbour\n" or (
        site / "planted"
    ).exists()
    outcome(mode, changed, fallback_stops=False, evidence=out)


def test_symlinks_made_in_the_sandbox_lead_nowhere(mode: str, site: Path) -> None:  # noqa: F811
    ws = Workspace(site / "workspace")
    out = shell(mode, ws, allow=["cat"]).invoke(
        {
            "command": "ln -s ../neighbour.txt door && echo pwned > door; ln -s / root && echo x > root/planted"
        }
    )
    changed = (site / "neighbour.txt").read_text() != "visible neighbour\n"
    outcome(mode, changed, fallback_stops=False, evidence=out)
    # The links stay in the workspace; following one out is never free.
    from gatehouse.graph import Policy

    tool = shell(mode, ws, allow=["cat"])
    assert (
        Policy.from_mapping({}).evaluate("run_command", {"command": "cat door"}, tool, []).mode
        == "ask"
    )


def test_tmp_is_private(mode: str, ws: Workspace) -> None:
    probe = Path("/tmp") / f"gatehouse-probe-{uuid.uuid4().hex}"
    try:
        out = shell(mode, ws).invoke({"command": f"echo planted > {probe}; cat {probe}"})
        assert out.startswith("planted\n")  # /tmp works inside
        outcome(mode, probe.exists(), fallback_stops=False, evidence=out)
    finally:
        probe.unlink(missing_ok=True)


def test_sockets_under_run_are_hidden(mode: str, ws: Workspace) -> None:
    """/run holds docker.sock, the D-Bus bus, ssh/gpg agents: reachable without a network."""
    entries = sorted(os.listdir("/run")) if os.path.isdir("/run") else []
    if not entries:
        pytest.skip("/run is empty on this machine")
    out = shell(mode, ws).invoke({"command": "ls -A /run"})
    outcome(mode, any(e in out.split() for e in entries), fallback_stops=False, evidence=out)


# -- network ---------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[tuple[int, threading.Event]]:
    """A TCP server on 127.0.0.1 that notes any connection."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    reached = threading.Event()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            reached.set()
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], reached
    finally:
        stop.set()
        thread.join(2)
        server.close()


def test_localhost_is_unreachable_without_the_network(
    mode: str, ws: Workspace, listener: tuple
) -> None:
    port, reached = listener
    out = shell(mode, ws).invoke(
        {"command": f"echo hello > /dev/tcp/127.0.0.1/{port} && echo connected"}
    )
    reached.wait(0.3)  # the command has ended: a connection it made is already queued
    outcome(mode, reached.is_set(), fallback_stops=False, evidence=out)


def test_network_granted_for_one_call_reaches_localhost(ws: Workspace, listener: tuple) -> None:
    port, reached = listener
    run = shell("sandbox", ws)
    out = run.invoke(
        {"command": f"echo hello > /dev/tcp/127.0.0.1/{port} && echo connected", "network": True}
    )
    assert "connected" in out and reached.wait(2.0)
    # The next call without the grant is cut off again.
    reached.clear()
    run.invoke({"command": f"echo hello > /dev/tcp/127.0.0.1/{port}"})
    assert not reached.wait(0.5)


# -- resources and lifetime --------------------------------------------------------


def test_process_count_is_limited(mode: str, ws: Workspace) -> None:
    """Sixty sleeping processes against a limit of sixteen. (A real fork bomb is tried
    in the sandbox only, below: unsandboxed nothing would stop it.)"""
    run = shell(mode, ws, timeout_s=1.5, limits=Limits(max_processes=16))
    out = run.invoke(
        {"command": "for i in $(seq 60); do sleep 20 & done; echo spawned $(jobs -p | wc -l); wait"}
    )
    outcome(
        mode, "[stopped: more than 16 processes]" not in out, fallback_stops=False, evidence=out
    )


def test_fork_bomb_is_stopped(ws: Workspace) -> None:
    run = shell("sandbox", ws, timeout_s=20, limits=Limits(max_processes=64))
    started = time.monotonic()
    out = run.invoke({"command": "bomb() { bomb | bomb & }; bomb; sleep 30"})
    assert out.endswith("[stopped: more than 64 processes]"), out
    assert time.monotonic() - started < 5


@pytest.mark.skipif(
    os.geteuid() != 0 or not (pids_cap.PIDS_HIERARCHY / "cgroup.procs").is_file(),
    reason="the pids cgroup cap is for root with a cgroup-v1 pids hierarchy",
)
def test_as_root_forks_past_the_cap_fail_at_once(ws: Workspace) -> None:
    """As root RLIMIT_NPROC does nothing; the command's own pids cgroup makes the 41st
    fork fail right away instead of letting a bomb take the machine's PIDs while the
    watchdog is between looks."""
    sandbox = choose_sandbox("require", ws.root, limits=Limits(max_processes=16))
    running = sandbox.start(
        ["sh", "-c", "for i in $(seq 40); do sleep 5 & done; wait"], Access(), timeout_s=10
    )
    try:
        group = running._pids_group  # noqa: SLF001 - what the test is about
        assert group is not None
        time.sleep(1.0)
        assert int((group / "pids.current").read_text()) <= 16 + pids_cap.OVERHEAD
        assert int((group / "pids.events").read_text().split()[-1]) > 0  # forks were refused
    finally:
        running.stop()
        running.proc.wait(10)
        running.close()


@pytest.mark.skipif(SYSTEM_PYTHON is None, reason="no python3 outside the home folders")
def test_memory_is_limited(mode: str, ws: Workspace) -> None:
    command = f"{SYSTEM_PYTHON} -c 'b = bytearray(768 << 20); print(\"allocated\")'"
    assert "allocated" in shell(mode, ws, limits=Limits(memory_mb=2048)).invoke(
        {"command": command}
    )
    out = shell(mode, ws, limits=Limits(memory_mb=256)).invoke({"command": command})
    assert "MemoryError" in out, out
    outcome(mode, "allocated" in out, fallback_stops=True, evidence=out)


def _sleeps(duration: str) -> list[int]:
    """PIDs of `sleep <duration>` processes (not of the Python that was told to start one)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"sleep") and duration.encode() in argv:
            found.append(int(pid))
    return found


def test_killing_gatehouse_kills_the_command(mode: str, ws: Workspace) -> None:
    """kill -9 of the process that started the command (a stand-in Gatehouse using
    tools/sandbox.py) while `sleep` runs: no sleep survives."""
    shell(mode, ws)  # skips when there is no bubblewrap
    duration = f"100.{uuid.uuid4().int % 10**9}"  # a unique argument to find it by
    parent = subprocess.Popen(
        [sys.executable, str(REPO / "tests/support/sandbox_child.py"), str(REPO / "tools/sandbox.py"),
         str(ws.root), "require" if mode == "sandbox" else "off", f"sleep {duration}"],
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not _sleeps(duration):
            assert parent.poll() is None and time.monotonic() < deadline, (
                "the command never started"
            )
            time.sleep(0.05)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        gone_by = time.monotonic() + 1
        while _sleeps(duration) and time.monotonic() < gone_by:
            time.sleep(0.05)
        survivors = _sleeps(duration)
        outcome(mode, bool(survivors), fallback_stops=False, evidence=f"survivors: {survivors}")
    finally:
        for pid in _sleeps(duration):
            os.kill(pid, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()


@pytest.mark.skipif(
    os.geteuid() != 0 or not (pids_cap.PIDS_HIERARCHY / "cgroup.procs").is_file(),
    reason="the pids cgroup cap is for root with a cgroup-v1 pids hierarchy",
)
def test_concurrently_started_commands_each_keep_their_own_pids_cap(ws: Workspace) -> None:
    """Issue 29: `new_cap()` swept every empty group, including one a concurrent start
    had just made and not yet joined — 36 of 60 commands ran without a cap. Each
    command is started and watched from a thread of its own, as run_command does (the
    sandbox dies with the thread that started it)."""
    sandbox = choose_sandbox("require", ws.root, limits=Limits(max_processes=16))
    count = 40
    barrier = threading.Barrier(count)
    checked = threading.Event()
    verdicts: dict[int, str] = {}
    lock = threading.Lock()

    def one(n: int) -> None:
        verdict = "not started"
        try:
            barrier.wait(timeout=30)
            running = sandbox.start(["sh", "-c", "sleep 20"], Access(), timeout_s=30)
        except BaseException as exc:  # noqa: BLE001 - reported below
            verdict = f"failed to start: {exc!r}"
        else:
            try:
                group = running._pids_group  # noqa: SLF001 - what the test is about
                verdict = "no group"
                deadline = time.monotonic() + 20
                while group is not None and time.monotonic() < deadline:
                    if not group.is_dir():
                        verdict = "its group was removed before the command joined it"
                        break
                    if str(running.proc.pid) in (group / "cgroup.procs").read_text().split():
                        capped = int((group / "pids.max").read_text()) == 16 + pids_cap.OVERHEAD
                        verdict = f"capped:{group.name}" if capped else "wrong pids.max"
                        break
                    if running.proc.poll() is not None:
                        verdict = (
                            f"ended: {running.proc.stdout.read().decode(errors='replace')[:200]}"
                        )
                        break
                    time.sleep(0.01)
                with lock:
                    verdicts[n] = verdict
                checked.wait(60)
            finally:
                running.stop()
                running.proc.wait(10)
                running.close()
            return
        with lock:
            verdicts[n] = verdict

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(verdicts) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    checked.set()
    for t in threads:
        t.join(30)
    uncapped = {n: v for n, v in verdicts.items() if not v.startswith("capped:")}
    assert len(verdicts) == count and not uncapped, (
        f"{len(uncapped)} of {count} ran without their cap: {uncapped}"
    )
    assert len({v for v in verdicts.values()}) == count, "every command has a group of its own"


def test_a_command_that_cannot_join_its_pids_group_does_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    command = pids_cap.joining(tmp_path / "no-such-group", ["touch", str(marker)])
    done = subprocess.run(command, capture_output=True, text=True, timeout=10)
    assert done.returncode == 126 and "cannot join the pids cgroup" in done.stderr
    assert not marker.exists()

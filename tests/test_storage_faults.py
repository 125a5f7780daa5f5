"""Storage faults: a killed process, a corrupt / unreadable / read-only file, a full disk.

Start-up errors are `StorageError`s that name the file. A full disk fails the turn
with a clear error and leaves the thread resumable once space is back. The full disk
is a real one: a 2 MB tmpfs (needs root to mount; skipped otherwise).
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from gatehouse.graph import StorageError
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.store import open_storage
from tests.support.counting_tools import runs
from tests.support.crash_worker import open_session

ROOT = Path(__file__).resolve().parents[1]
APPROVE = {"decisions": [{"type": "approve"}]}


def test_sqlite_file_survives_a_killed_process(tmp_path: Path) -> None:
    db, counter = tmp_path / "g.sqlite", tmp_path / "counter.txt"
    open_session(str(db), str(counter)).close()
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.crash_worker",
            str(db),
            str(counter),
            "drive",
            "k",
            "4",
            "50",
            "4",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and sum(runs(counter).values()) < 8:
        time.sleep(0.05)
    os.kill(worker.pid, signal.SIGKILL)  # in the middle of writes on four threads
    worker.wait(10)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)

    session = open_session(str(db), str(counter))  # opens fine; every thread goes on
    try:
        for tid in (f"k-{i:02d}" for i in range(4)):
            for _ in range(6):
                pending = session.view(tid).pending
                if pending is not None and pending.kind == "outcome_unknown":
                    run = session.resume(tid, {"type": "mark_failed", "message": "killed"})
                elif pending is not None:
                    run = session.resume(tid, APPROVE)
                elif (
                    session.view(tid).info is not None
                    and session.view(tid).info.status == "interrupted"
                ):  # type: ignore[union-attr]
                    run = session.retry(tid)
                else:
                    break
                assert run.collect()[-1].status in {"completed", "awaiting_approval"}
            messages = session.view(tid).messages
            calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
            answers = [m.tool_call_id for m in messages if isinstance(m, ToolMessage)]
            assert sorted(calls) == sorted(answers), tid
        assert set(runs(counter).values()) == {1}
    finally:
        session.close()


def test_corrupt_file_is_named_at_start(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(os.urandom(16384))
    with pytest.raises(StorageError, match=str(garbage)):
        open_storage(str(garbage))

    damaged = tmp_path / "damaged.sqlite"
    session = open_session(str(damaged), str(tmp_path / "c.txt"))
    session.send("t", "hello").collect()
    session.close()
    data = bytearray(damaged.read_bytes())
    data[4096:] = os.urandom(len(data) - 4096)  # the header survives, the pages do not
    damaged.write_bytes(bytes(data))
    for leftover in tmp_path.glob("damaged.sqlite-*"):
        leftover.unlink()
    with pytest.raises(StorageError, match=f"{damaged}.*corrupt|corrupt.*{damaged}|{damaged}"):
        open_storage(str(damaged))

    a_directory = tmp_path / "dir.sqlite"
    a_directory.mkdir()
    with pytest.raises(StorageError, match=str(a_directory)):
        open_storage(str(a_directory))


def _unprivileged(check: Callable[[], str]) -> str:
    """Run `check` as an ordinary user (root ignores file modes): in a forked child."""
    if os.geteuid() != 0:
        return check()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.setgid(65534)
            os.setuid(65534)
            out = check()
        except BaseException as exc:
            out = f"unexpected {type(exc).__name__}: {exc}"
        os.write(write, out.encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as f:
        return f.read()


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        os.chmod(d, 0o777)
        yield Path(d)


def _start_error(db: Path) -> Callable[[], str]:
    def check() -> str:
        try:
            open_storage(str(db)).close()
        except StorageError as exc:
            return f"StorageError: {exc}"
        return "opened"

    return check


def test_unreadable_file_is_named_at_start(shared_dir: Path) -> None:
    db = shared_dir / "unreadable.sqlite"
    open_storage(str(db)).close()
    db.chmod(0o000)
    out = _unprivileged(_start_error(db))
    assert out.startswith("StorageError") and str(db) in out, out


def test_read_only_file_is_named_at_start(shared_dir: Path) -> None:
    db = shared_dir / "readonly.sqlite"
    open_storage(str(db)).close()
    for f in shared_dir.iterdir():
        f.chmod(0o444)
    out = _unprivileged(_start_error(db))
    assert out.startswith("StorageError") and str(db) in out, out


@pytest.fixture
def small_disk() -> Iterator[Path]:
    mount = Path(tempfile.mkdtemp(prefix="gatehouse-disk-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        mount.rmdir()
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        shutil.rmtree(mount, ignore_errors=True)


def test_read_only_filesystem_is_named_at_start(small_disk: Path) -> None:
    db = small_disk / "g.sqlite"
    open_storage(str(db)).close()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    with pytest.raises(StorageError, match=str(db)):
        open_storage(str(db))


def test_full_disk_fails_the_turn_clearly_and_the_thread_resumes(
    small_disk: Path, tmp_path: Path
) -> None:
    # The model's counter lives off the small disk, so filling the disk cannot fail the model.
    db, counter = small_disk / "g.sqlite", tmp_path / "counter.txt"
    session = open_session(str(db), str(counter))
    try:
        assert session.send("t", "first").collect()[-1].status == "awaiting_approval"
        assert session.resume("t", APPROVE).collect()[-1].status == "completed"
        before = len(session.view("t").messages)

        filler = small_disk / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        for size in (65536, 4096, 512, 1):  # take every last byte
            try:
                while os.write(fd, b"\0" * size):
                    pass
            except OSError:
                pass
        os.close(fd)

        # Nothing can start on a full disk: a clear error that names the file.
        with pytest.raises(StorageError, match=f"disk is full.*{db}"):
            session.send("t", "no room")

        # Room for the lease, not for the turn: the turn fails with a clear error.
        os.truncate(filler, filler.stat().st_size - 96 * 1024)
        events = session.send("t", os.urandom(200_000).hex()).collect()
        errors = [e for e in events if isinstance(e, ev.ErrorEvent)]
        assert events[-1].status == "failed", events[-3:]
        assert errors and "disk is full" in errors[0].message and str(db) in errors[0].message, (
            errors
        )

        filler.unlink()  # space is back: the same thread carries on
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert len(session.view("t").messages) >= before
        status = session.retry("t").collect()[-1].status
        if (
            status == "completed"
            and session.view("t").pending is None
            and len(session.view("t").messages) == before
        ):
            status = session.send("t", "again").collect()[-1].status  # the failed turn left nothing
        assert status == "awaiting_approval"
        assert session.resume("t", APPROVE).collect()[-1].status == "completed"
        messages = session.view("t").messages
        calls = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
        assert sorted(calls) == sorted(
            m.tool_call_id for m in messages if isinstance(m, ToolMessage)
        )
        assert set(runs(counter).values()) == {1}
    finally:
        session.close()


def _python(script: str, *args: str) -> str:
    """Run `script` in a new Python process; its stdout (it must exit 0: a crash fails)."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    return done.stdout.strip()


CLOSE_WHILE_WRITING = """
import sys, threading, time
from gatehouse.graph.store import open_storage

for round_ in range(int(sys.argv[2])):
    storage = open_storage(f"{sys.argv[1]}-{round_}.db")
    saver = storage.checkpointer
    started = threading.Barrier(3)

    def index_writes() -> None:
        started.wait()
        try:
            for i in range(100_000):
                storage.index.touch(f"t{i % 50}", title="x" * 200, status="completed")
        except Exception:
            pass  # closed under it: a clean error, not a crash

    def saver_reads() -> None:
        started.wait()
        try:
            while True:
                with saver.cursor() as cur:
                    cur.execute("SELECT count(*) FROM checkpoints").fetchall()
        except Exception:
            pass

    threads = [threading.Thread(target=f) for f in (index_writes, saver_reads)]
    for t in threads:
        t.start()
    started.wait()
    time.sleep(0.02)
    storage.close()
    for t in threads:
        t.join()
print("done")
"""


def test_closing_storage_while_threads_use_it_does_not_crash_the_process(tmp_path: Path) -> None:
    """A session closed while a run still writes (a test's teardown, a server shutting
    down): the storage's connections are closed under the locks their users hold, so the
    other thread's statement ends first and its next one fails cleanly. Closing a SQLite
    connection in the middle of another thread's statement crashed the process (seen as
    a segfault in a test worker)."""
    assert _python(CLOSE_WHILE_WRITING, str(tmp_path / "g"), "20") == "done"


SESSIONS_LEFT_OPEN = """
import gc, os, sys
from pathlib import Path
from gatehouse.graph import ScriptedModel, Settings
from gatehouse.graph.service.app import open_session

root = Path(sys.argv[1])
(root / "ws").mkdir()
settings = Settings(db=str(root / "g.sqlite"), workspace=str(root / "ws"), shell_sandbox="off")


def run_and_forget(i: int) -> None:
    session = open_session(settings, model=ScriptedModel(script=["Hello."]))
    for _ in session.send(f"t{i}", "hi"):
        pass  # a run takes (and renews) the thread's lease; close() is never called


run_and_forget(0)  # imports and first-use caches open their own files
gc.collect()
before = len(os.listdir("/proc/self/fd"))
for i in range(1, 6):
    run_and_forget(i)
gc.collect()
print(before, len(os.listdir("/proc/self/fd")))
"""


def test_a_session_never_closed_lets_go_of_its_database_when_collected(tmp_path: Path) -> None:
    """An embedding that forgets `close()`: the lease-renewal thread held each session's
    lease table, and with it the SQLite connection (database, -wal, -shm), for the life
    of the process; five forgotten sessions kept ~26 more fds open. Now they are
    garbage like any object."""
    before, after = map(int, _python(SESSIONS_LEFT_OPEN, str(tmp_path)).split())
    assert after <= before, f"{after - before} fds still open after five sessions were dropped"

"""The console script ends its process without the interpreter's teardown of modules
(issue 36: half a second after every decision), and loses nothing by it: other
threads finish first (idle thread pools are told to stop, as the interpreter tells
them) and `atexit` handlers run, in the interpreter's order; output
is complete; the exit status is what `sys.exit` would give."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.clean_env import without_settings

ROOT = Path(__file__).resolve().parent.parent

# The console script as installed (`gatehouse = gatehouse.ui.term.entry:main`), with a thread
# still working and an atexit handler, as a tool or a library may leave them.
SCRIPT = """
import atexit, concurrent.futures, sys, threading, time
log = open(sys.argv.pop(1), "a", buffering=1)
atexit.register(lambda: log.write("atexit\\n"))
def late():
    time.sleep(0.3)
    log.write("thread\\n")
threading.Thread(target=late).start()
# A pool left open, its workers idle: the interpreter tells them to stop; so must we.
pool = concurrent.futures.ThreadPoolExecutor(2)
pool.submit(time.sleep, 0.01).result()
sys.argv[0] = "gatehouse"
from gatehouse.ui.term.entry import main
main()
"""


def run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    log = tmp_path / "log.txt"
    env = without_settings()
    env.update(GATEHOUSE_DB=str(tmp_path / "gh.db"), PYTHONPATH=str(ROOT), NO_COLOR="1")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(log), *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, log.read_text().splitlines() if log.exists() else []


def test_threads_finish_and_atexit_runs_before_the_process_ends(tmp_path: Path) -> None:
    done, log = run(tmp_path, "threads")
    assert done.returncode == 0, done.stderr
    assert "No threads yet" in done.stdout
    assert log == ["thread", "atexit"]


def test_the_exit_status_and_the_error_are_what_sys_exit_gives(tmp_path: Path) -> None:
    done, log = run(tmp_path, "show", "no-such-thread")
    assert done.returncode == 1
    assert "no thread no-such-thread" in done.stderr
    assert log == ["thread", "atexit"]
    done, _ = run(tmp_path, "approve")  # a usage error, through typer
    assert done.returncode == 2 and "Missing argument" in done.stderr
    done, _ = run(tmp_path, "--help")
    assert done.returncode == 0 and "Usage: gatehouse" in done.stdout


def test_a_long_output_reaches_the_pipe_whole(tmp_path: Path) -> None:
    """A listing far larger than any buffer, written just before the process ends."""
    import json

    from gatehouse.graph import Settings, open_session

    session = open_session(Settings(db=str(tmp_path / "gh.db"), workspace=str(tmp_path)))
    try:
        for i in range(60):
            session.send(None, f"list files {i} " + "x" * 2000).collect()
    finally:
        session.close()
    done, _ = run(tmp_path, "threads", "--json", "--limit", "100")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == 60

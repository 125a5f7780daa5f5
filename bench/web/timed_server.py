"""`gatehouse ui` with every Streamlit script run timed: the profiler's server.

    python -m bench.web.timed_server PORT

Runs `streamlit run ui/web/app.py` with the flags `gatehouse ui` uses, in this process,
after wrapping Streamlit's `exec_func_with_error_handling` (one call = one script
run) and `ScriptRunner._on_script_finished` (the cleanup after a run, including
Streamlit's `gc.collect(2)`). Each run appends a JSON line to GATEHOUSE_BENCH_RUNLOG:
start and end (time.monotonic(), the clock the harness uses), the run thread's CPU
seconds, how it ended, and whether it was a fragment run. With GATEHOUSE_BENCH_CPROFILE
set to a folder, each run is also profiled (cProfile, wall clock) into that folder;
with GATEHOUSE_BENCH_CPROFILE_CLOCK=cpu the profiler counts the run thread's CPU time
instead (on a busy machine wall time is mostly other processes' work).

What-if, for the profiler only: GATEHOUSE_BENCH_NO_STATUS_SLEEP=1 removes the 50 ms
`time.sleep` Streamlit's `st.status` makes when it is created (and when a running one
closes), to show what the page would cost without it. Nothing in ui/ or graph/ changes.
"""

from __future__ import annotations

import cProfile
import itertools
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.web.build import ROOT

RUNLOG_ENV = "GATEHOUSE_BENCH_RUNLOG"
CPROFILE_ENV = "GATEHOUSE_BENCH_CPROFILE"
CPROFILE_CLOCK_ENV = "GATEHOUSE_BENCH_CPROFILE_CLOCK"
NO_STATUS_SLEEP_ENV = "GATEHOUSE_BENCH_NO_STATUS_SLEEP"
APP = (
    ROOT / "ui" / "web" / "launch.py"
)  # the app behind its sign-in guard, as `gatehouse ui` serves it

_lock = threading.Lock()
_numbers = itertools.count(1)


def _append(entry: dict[str, Any]) -> None:
    path = os.environ.get(RUNLOG_ENV)
    if not path:
        return
    with _lock, open(path, "a") as out:
        out.write(json.dumps(entry) + "\n")


def instrument() -> None:
    from streamlit.runtime.scriptrunner import script_runner

    original_exec = script_runner.exec_func_with_error_handling
    original_finished = script_runner.ScriptRunner._on_script_finished

    def timed_exec(func: Any, ctx: Any) -> Any:
        number = next(_numbers)
        folder = os.environ.get(CPROFILE_ENV)
        cpu_clock = os.environ.get(CPROFILE_CLOCK_ENV) == "cpu"
        profiler = (
            (cProfile.Profile(time.thread_time) if cpu_clock else cProfile.Profile())
            if folder
            else None
        )
        start, cpu = time.monotonic(), time.thread_time()
        if profiler is not None:
            profiler.enable()
        try:
            result = original_exec(func, ctx)
        finally:
            if profiler is not None:
                profiler.disable()
        end = time.monotonic()
        _, _ok, rerun, premature_stop, uncaught = result
        prof = None
        if profiler is not None and folder:
            prof = str(Path(folder) / f"run-{number:05d}.prof")
            profiler.dump_stats(prof)
        outcome = (
            "rerun" if rerun else "stopped" if premature_stop else "error" if uncaught else "done"
        )
        _append(
            {
                "run": number,
                "session": ctx.session_id,
                "start": start,
                "end": end,
                "cpu_s": round(time.thread_time() - cpu, 4),
                "outcome": outcome,
                "fragment": bool(ctx.fragment_ids_this_run),
                "prof": prof,
            }
        )
        return result

    def timed_finished(
        self: Any, ctx: Any, event: Any, premature_stop: bool, run_descriptor: Any
    ) -> None:
        start = time.monotonic()
        try:
            original_finished(self, ctx, event, premature_stop, run_descriptor)
        finally:
            _append(
                {
                    "cleanup_s": round(time.monotonic() - start, 4),
                    "session": ctx.session_id,
                    "end": time.monotonic(),
                }
            )

    script_runner.exec_func_with_error_handling = timed_exec
    script_runner.ScriptRunner._on_script_finished = timed_finished  # type: ignore[method-assign]
    if os.environ.get(NO_STATUS_SLEEP_ENV):
        _drop_status_sleep()


class _NoSleep:
    """Stands in for the `time` module inside Streamlit's status container only."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(_seconds: float) -> None:
        return None


def _drop_status_sleep() -> None:
    from streamlit.elements.lib import mutable_status_container

    mutable_status_container.time = _NoSleep()  # type: ignore[assignment]


def main(port: str) -> None:
    instrument()
    from streamlit.web import cli

    from gatehouse.ui.web.serve import FLAGS

    sys.argv = ["streamlit", "run", str(APP), *FLAGS, "--server.port", port]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main(sys.argv[1])

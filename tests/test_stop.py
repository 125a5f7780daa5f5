"""Stop means stop (issue 19): cancelling a run ends a running command's process tree
within a second; the call is answered "stopped by the person" and recorded so in the
journal (a side effect may be half done: it is never asked about as "outcome unknown")."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from gatehouse.graph import open_session
from gatehouse.graph.protocol import events as ev
from gatehouse.graph.service.config import Settings


def test_stop_during_a_long_command_ends_it_within_a_second(tmp_path: Path) -> None:
    session = open_session(Settings(db=str(tmp_path / "g.db"), workspace=str(tmp_path / "ws")))
    try:
        marker = "gatehouse-stop-test-" + tmp_path.name
        session.send("t", f"run: echo started && sleep 30 # {marker}").collect()
        run = session.resume("t", {"decisions": [{"type": "approve"}]})
        events: list[ev.Event] = []
        consumer = threading.Thread(target=lambda: events.extend(run))
        consumer.start()
        deadline = time.monotonic() + 30
        while not any(isinstance(e, ev.ToolOutput) and "started" in e.text for e in list(events)):
            assert time.monotonic() < deadline, events
            time.sleep(0.02)
        asked = time.monotonic()
        run.cancel()
        consumer.join(10)
        took = time.monotonic() - asked
        assert not consumer.is_alive() and took < 1.5, f"the run took {took:.2f} s to stop"
        assert run.status == "cancelled"
        [done] = [e for e in events if isinstance(e, ev.ToolFinished)]
        assert done.status == "stopped" and "Stopped by the person" in done.output
        # Nothing of the command is left running (its last processes may take a moment
        # to be reaped once killed).
        while left := subprocess.run(
            ["pgrep", "-f", marker], capture_output=True, text=True
        ).stdout.strip():
            assert time.monotonic() - asked < 2.0, f"still running: {left}"
            time.sleep(0.05)
        # Recorded as stopped, not left "started": no outcome question later.
        [entry] = session.storage.journal.entries("t")
        assert entry.finished and "Stopped by the person" in str(entry.result.content)
        assert session.view("t").pending is None
    finally:
        session.close()

"""The app served the way users serve it: `gatehouse ui --port N`, on a copy of a
built thread's database, with the benchmark's model (bench/web/model.py).

`gatehouse ui` execs `python -m streamlit run ui/web/app.py ...`, so the process we start
is the Streamlit server itself: its CPU time is the server's CPU time.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.web.build import ROOT, seed_workspace
from bench.web.model import TOKEN_LOG_ENV

MODEL_FACTORY = "bench.web.model:make_model"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    pid: int
    log: Path
    token_log: Path
    workspace: Path
    secret: str = ""


def install_secret_of(db: Path) -> str:
    """The install secret a server on `db` signs people in with (created 0600 by the
    server at start, where graph/service/access.py `secret_path` says)."""
    from gatehouse.graph import secret_path

    return secret_path(str(db)).read_text().strip()


def sign_in(context: Any, url: str, secret: str) -> None:
    """Sign a Playwright browser context in through the token link (`/?token=...`), the
    way a person opening the link `gatehouse ui` prints does: the response sets the
    session cookie in the context's cookie jar, and its page leaves the session's
    proof in the origin's localStorage (ui/web/guard.py), which every page of the
    context gets here before its own scripts run."""
    response = context.request.get(f"{url}/?token={secret}")
    proof = re.search(r'localStorage\.setItem\("gatehouse-proof", "([0-9a-f]+)"\)', response.text())
    if response.status != 200 or proof is None:
        raise RuntimeError(f"signing in at {url} failed: HTTP {response.status}")
    context.add_init_script(
        f"if (location.origin === {json.dumps(url)}) "
        f"localStorage.setItem('gatehouse-proof', {json.dumps(proof.group(1))});"
    )


def gatehouse_ui_command(port: int) -> list[str]:
    """`gatehouse ui --port N` from this environment (the console script when installed)."""
    script = Path(sys.executable).parent / "gatehouse"
    if script.is_file():
        return [str(script), "ui", "--port", str(port), "--no-browser"]
    return [
        sys.executable,
        "-m",
        "gatehouse.ui.term.cli",
        "ui",
        "--port",
        str(port),
        "--no-browser",
    ]


@contextmanager
def serve(
    db: Path,
    folder: Path,
    *,
    command: list[str] | None = None,
    extra_env: dict[str, str] | None = None,
    timeout: float = 90,
) -> Iterator[Server]:
    """Serve `db` from `folder` (cwd, workspace, logs). `command` replaces `gatehouse ui`
    (the profiler's instrumented launcher); it gets the port as its last argument."""
    workspace = seed_workspace(folder / "workspace")
    port = free_port()
    log = folder / "server.log"
    token_log = folder / "first-tokens.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GATEHOUSE_"))}
    env.update(
        GATEHOUSE_DB=str(db),
        GATEHOUSE_WORKSPACE=str(workspace),
        GATEHOUSE_MODEL_FACTORY=MODEL_FACTORY,
        # The threads are built without compaction; a send must not fold them into a summary.
        GATEHOUSE_COMPACTION="false",
        PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        **{TOKEN_LOG_ENV: str(token_log)},
        **(extra_env or {}),
    )
    cmd = [*command, str(port)] if command else gatehouse_ui_command(port)
    with running(cmd, port, cwd=folder, env=env, log=log, timeout=timeout) as (url, process):
        yield Server(
            url=url,
            pid=process.pid,
            log=log,
            token_log=token_log,
            workspace=workspace,
            secret=install_secret_of(db),
        )


@contextmanager
def running(
    cmd: list[str],
    port: int,
    *,
    cwd: Path,
    env: dict[str, str],
    log: Path,
    timeout: float,
    interval: float = 0.2,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Start a Streamlit server command (its own process group, output to `log`), wait
    until `/_stcore/health` answers, and stop the whole group afterwards. The browser
    tests serve the app the same way (tests/support/browser.py)."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url + "/_stcore/health", process, log, timeout, "the web server", interval)
        yield url, process
    finally:
        stop_group(process)


def wait_ready(
    url: str,
    process: subprocess.Popen[bytes],
    log: Path,
    timeout: float,
    what: str,
    interval: float = 0.2,
) -> None:
    """Poll `url` until it answers 200 (a server says it is ready, never a guessed time);
    fail with the log's tail when the process exits or `timeout` passes. Shared by every
    server the tests and benches start (Streamlit, `langgraph dev`, the LiteLLM proxy)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited ({process.returncode}):\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(interval)
    raise RuntimeError(f"{what} was not ready in {timeout:.0f} s:\n{_tail(log)}")


def stop_group(process: subprocess.Popen[bytes], grace: float = 10) -> None:
    """Stop a server started in its own process group: SIGTERM, then SIGKILL after `grace`."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


def _tail(log: Path, chars: int = 4000) -> str:
    return log.read_text(errors="replace")[-chars:] if log.exists() else ""

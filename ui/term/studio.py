"""`gatehouse studio`: LangGraph Studio on Gatehouse's own threads.

`langgraph dev` runs on the project's langgraph.json, whose checkpointer is
Gatehouse's storage (graph/service/server.py), so the server reads and writes the
same database as the web app and the terminal. Studio lists the threads the server
knows; a thread started elsewhere is made known by registering it (`--thread ID`),
after which Studio opens it: its history, time travel, forks, its pending approval.
The server requires credentials (langgraph.json's auth handler): this OS user's
install secret as a bearer key, which Studio sends as a custom header.
"""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
import webbrowser
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import quote

import httpx

from graph import install_secret, load_access, load_settings, secret_path

GRAPH = "gatehouse"
STUDIO = "https://smith.langchain.com/studio"
DEFAULT_PORT = 2024
CONNECT_HINT = (
    "The server requires credentials. In Studio's connection settings add the header\n"
    "  Authorization: Bearer <the install secret: its file in ~/.config/gatehouse/secrets/>"
)


def studio_url(base_url: str, thread_id: str | None = None) -> str:
    where = f"/thread/{thread_id}" if thread_id else "/"
    return f"{STUDIO}{where}?baseUrl={quote(base_url, safe='')}"


def valid_server_thread_id(thread_id: str) -> str | None:
    """Why LangGraph Server cannot open this thread id, or None: it takes dashed UUIDs
    only (threads made before Gatehouse used them cannot be opened in Studio)."""
    try:
        canonical = str(uuid.UUID(thread_id))
    except ValueError:
        return f"{thread_id!r} is not a UUID"
    if canonical != thread_id:
        return f"{thread_id!r} is not in the dashed UUID form LangGraph Server uses ({canonical})"
    return None


def wait_until_up(base_url: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"langgraph dev exited with code {proc.returncode}")
        try:
            if httpx.get(f"{base_url}/ok", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"langgraph dev did not answer at {base_url} within {timeout:.0f} s")


def local_credentials(db: str | None = None) -> dict[str, str]:
    """The header this OS user signs in to the server with: the install secret as a
    bearer key (graph/service/server_auth.py)."""
    settings = load_settings()
    access = load_access(settings.access)
    return {"Authorization": f"Bearer {install_secret(secret_path(db or settings.db, access))}"}


def register(base_url: str, thread_id: str, headers: dict[str, str] | None = None) -> None:
    """Make a thread stored in Gatehouse's database known to the server (its runs then
    read and write that thread's checkpoints)."""
    response = httpx.post(
        f"{base_url}/threads",
        json={"thread_id": thread_id, "if_exists": "do_nothing", "metadata": {"graph_id": GRAPH}},
        headers=headers,
        timeout=30,
    )
    response.raise_for_status()


def run_studio(
    cmd: Sequence[str],
    cwd: Path,
    *,
    port: int,
    threads: Sequence[str],
    open_browser: bool,
    say: Callable[[str], object],
) -> int:
    """Start the server, register `threads`, print (and open) Studio's links, then stay
    in the foreground until the server stops; Ctrl-C stops it."""
    base_url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(list(cmd), cwd=cwd)
    try:
        wait_until_up(base_url, proc)
        credentials = local_credentials()
        for thread_id in threads:
            register(base_url, thread_id, credentials)
        links = [studio_url(base_url, t) for t in threads] or [studio_url(base_url)]
        for link in links:
            say(f"Studio: {link}")
        say(CONNECT_HINT)
        if open_browser:
            webbrowser.open(links[0])
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        return proc.wait()
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(20)

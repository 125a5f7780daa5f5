"""`gatehouse studio`: `langgraph dev` on Gatehouse's storage; a thread started elsewhere
is registered so Studio can open it. The key is this OS user's install secret."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
import uuid
import webbrowser
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import quote

import httpx

from gatehouse.graph import install_secret, load_access, load_settings, secret_path

GRAPH = "gatehouse"
STUDIO = "https://smith.langchain.com/studio"
DEFAULT_PORT = 2024


def how_to_connect(base_url: str, key_file: Path) -> str:
    """Where the server and its key are, and how each client connects."""
    return f"""Gatehouse on LangGraph Server: {base_url} (graph "{GRAPH}")
Key: the install secret in {key_file} (readable by you only). Every client sends it,
  as `Authorization: Bearer <key>` or `X-Api-Key: <key>`; a wrong key gets 401.
Connect with:
  langgraph-sdk   from pathlib import Path; from langgraph_sdk import get_sync_client
                  client = get_sync_client(url="{base_url}",
                                           api_key=Path({str(key_file)!r}).read_text().strip())
  Agent Chat UI / Agent Inbox   deployment URL {base_url}, graph "{GRAPH}", the key in their
                  API key field. They may call from http://localhost:3000; to run them on
                  other ports, list their origins in one setting (langgraph.json stays as is):
                  GATEHOUSE_SERVER_ORIGINS=http://localhost:3000,http://localhost:3001
  LangGraph Studio  {studio_url(base_url)}
                  a hosted page (smith.langchain.com): it needs internet and a LangSmith
                  sign-in; add the header Authorization: Bearer <key> in its connection
                  settings (advanced: custom headers)."""


def studio_url(base_url: str, thread_id: str | None = None) -> str:
    where = f"/thread/{thread_id}" if thread_id else "/"
    return f"{STUDIO}{where}?baseUrl={quote(base_url, safe='')}"


def valid_server_thread_id(thread_id: str) -> str | None:
    """Why LangGraph Server cannot open this thread id (it takes dashed UUIDs only), or None."""
    try:
        canonical = str(uuid.UUID(thread_id))
    except ValueError:
        return f"{thread_id!r} is not a UUID"
    if canonical != thread_id:
        return f"{thread_id!r} is not in the dashed UUID form LangGraph Server uses ({canonical})"
    return None


def key_file(db: str | None = None) -> Path:
    settings = load_settings()
    return secret_path(db or settings.db, load_access(settings.access))


def run_studio(
    cmd: Sequence[str],
    cwd: Path,
    *,
    port: int,
    threads: Sequence[str],
    open_browser: bool,
    say: Callable[[str], object],
) -> int:
    """Start the server, register `threads`, print (and open) Studio's links; Ctrl-C stops it."""
    base_url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(list(cmd), cwd=cwd)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base_url}/ok", timeout=2).status_code == 200:
                    break
            time.sleep(0.3)
        else:
            exited = f"exited with code {proc.returncode}" if proc.poll() is not None else ""
            raise RuntimeError(
                f"langgraph dev {exited or f'did not answer at {base_url} within 120 s'}"
            )
        # This OS user's install secret as a bearer key (graph/service/server_auth.py).
        credentials = {"Authorization": f"Bearer {install_secret(key_file())}"}
        # Each thread made known to the server: its runs then use its checkpoints.
        known = {"if_exists": "do_nothing", "metadata": {"graph_id": GRAPH}}
        for thread_id in threads:
            httpx.post(
                f"{base_url}/threads",
                json={"thread_id": thread_id, **known},
                headers=credentials,
                # The server's first request waits while it imports the graph: tens of seconds
                # on a busy machine (a 30 s limit ended `gatehouse studio --thread` there).
                timeout=180,
            ).raise_for_status()
        links = [studio_url(base_url, t) for t in threads] or [studio_url(base_url)]
        for link in links:
            say(f"Studio: {link}")
        say(how_to_connect(base_url, key_file()))
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

"""`langgraph dev` on the project's langgraph.json, for tests through langgraph-sdk.

    with langgraph_dev(tmp, db=..., workspace=...) as server:
        client = get_sync_client(url=server.url)

The server runs in a temp folder (it keeps its own run records in `.langgraph_api/`
there), offline: no OpenAI settings (the demo model answers), no tracing, no CLI
analytics. The project's langgraph.json is used with any file paths made absolute, so its
checkpointer is Gatehouse's own storage on `db`: the threads live where a Session on
the same file reads them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.web.server import stop_group, wait_ready
from tests.support.postgres import free_port

ROOT = Path(__file__).resolve().parents[2]
GRAPH = "gatehouse"


def langgraph_cli() -> str:
    beside = Path(sys.executable).parent / "langgraph"
    found = str(beside) if beside.exists() else shutil.which("langgraph")
    if not found:
        raise RuntimeError("the langgraph CLI is missing: install langgraph-cli[inmem] (uv sync)")
    return found


@dataclass
class DevServer:
    url: str
    proc: subprocess.Popen[bytes]
    home: Path
    log: Path
    # The install secret the server signs the local user in with (its bearer key).
    secret: str = ""

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secret}"}

    def client(self) -> Any:
        """A langgraph-sdk client with the documented credentials."""
        from langgraph_sdk import get_sync_client

        return get_sync_client(url=self.url, headers=self.headers)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """Like a power cut: the whole process group, at once."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def _secret_env(db: Path | str, home: Path) -> dict[str, str]:
    return {"GATEHOUSE_SECRET_FILE": str(home / "gatehouse.secret")} if "://" in str(db) else {}


def server_env(db: Path | str, workspace: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "GATEHOUSE_", "LANGSMITH_", "LANGCHAIN_"))
    }
    env.update(
        GATEHOUSE_WORKSPACE=str(workspace),
        GATEHOUSE_DB=str(db),
        LANGSMITH_TRACING="false",
        LANGCHAIN_TRACING_V2="false",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


def located(spec: str) -> str:
    """A `./file.py:name` made absolute; a `module:name` (the installed package) as it is."""
    return str((ROOT / spec).resolve()) if spec.startswith(".") else spec


def write_config(home: Path) -> Path:
    """The project's langgraph.json, runnable from `home`."""
    config = json.loads((ROOT / "langgraph.json").read_text())
    config["dependencies"] = [str((ROOT / d).resolve()) for d in config["dependencies"]]
    config["graphs"] = {name: located(spec) for name, spec in config["graphs"].items()}
    if isinstance(config.get("env"), str):
        config["env"] = str((ROOT / config["env"]).resolve())
    if "auth" in config:
        config["auth"]["path"] = located(config["auth"]["path"])
    if "http" in config and "app" in config["http"]:
        config["http"]["app"] = located(config["http"]["app"])
    path = home / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


def secret_for(db: Path | str, home: Path) -> str:
    """The install secret of a server on `db`, made now (0600) so the test knows it: next
    to a SQLite file; for Postgres, the file GATEHOUSE_SECRET_FILE names in `home`."""
    from gatehouse.graph.service.access import install_secret

    return install_secret(
        Path(db).parent / "gatehouse.secret" if "://" not in str(db) else home / "gatehouse.secret"
    )


@contextmanager
def langgraph_dev(
    home: Path, *, db: Path | str, workspace: Path, timeout: float = 180, **env: str
) -> Iterator[DevServer]:
    home.mkdir(parents=True, exist_ok=True)
    config = write_config(home)
    port = free_port()
    log = home / f"server-{port}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                langgraph_cli(),
                "dev",
                "--no-browser",
                "--no-reload",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--config",
                str(config),
            ],
            cwd=home,
            env=server_env(db, workspace, **_secret_env(db, home), **env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = DevServer(f"http://127.0.0.1:{port}", proc, home, log, secret_for(db, home))
    try:
        wait_ready(f"{server.url}/ok", proc, log, timeout, "langgraph dev", 0.3)
        yield server
    finally:
        stop_group(proc, grace=20)

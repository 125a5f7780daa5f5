"""One database wherever Gatehouse is run from (issue 33, item 5).

Relative database and workspace paths (`--db`, GATEHOUSE_DB, the default) are made
absolute against the directory a command is run from, before anything changes
directory: `gatehouse studio` runs its server in the project root, and it still uses
the files the shell it was started from would use. Every front end says which
database it is on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from gatehouse.graph import open_reader
from gatehouse.graph.service.config import load_settings, location_env
from tests.support.langgraph_dev import GRAPH, server_env
from tests.support.postgres import free_port

ROOT = Path(__file__).resolve().parents[1]


def test_relative_locations_are_fixed_against_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = load_settings(env={})
    assert settings.db == str(tmp_path / ".gatehouse" / "gatehouse.db")
    assert settings.workspace == str(tmp_path / "workspace")
    settings = load_settings(env={"GATEHOUSE_DB": "rel.db", "GATEHOUSE_WORKSPACE": "../files"})
    assert settings.db == str(tmp_path / "rel.db") and settings.workspace == str(
        tmp_path.parent / "files"
    )
    assert (
        load_settings(env={"GATEHOUSE_DB": "postgresql://u:p@localhost/x"}).db
        == "postgresql://u:p@localhost/x"
    )
    # What a server started elsewhere is given: the same absolute files.
    monkeypatch.chdir(tmp_path.parent)
    env = location_env(settings)
    assert env["GATEHOUSE_DB"] == str(tmp_path / "rel.db")


def _env() -> dict[str, str]:
    env = server_env("unused", Path("unused"), PYTHONPATH=str(ROOT))
    del env["GATEHOUSE_DB"], env["GATEHOUSE_WORKSPACE"]
    return env


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gatehouse.ui.term.cli", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_studio_and_the_terminal_share_a_relative_db_from_another_directory(tmp_path: Path) -> None:
    here = tmp_path / "elsewhere"
    here.mkdir()
    port = free_port()
    from gatehouse.graph import install_secret

    secret = install_secret(
        here / "gatehouse.secret"
    )  # beside the database: the server's credentials
    log = tmp_path / "studio.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gatehouse.ui.term.cli",
                "studio",
                "--no-browser",
                "--port",
                str(port),
                "--db",
                "rel.db",
            ],
            cwd=here,
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/ok", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        assert f"Database: {here / 'rel.db'}" in log.read_text()
        from langgraph_sdk import get_sync_client

        client = get_sync_client(
            url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {secret}"}
        )
        tid = client.threads.create()["thread_id"]
        client.runs.wait(
            tid, GRAPH, input={"messages": [{"role": "user", "content": "write where.md: here"}]}
        )
        client.runs.wait(tid, GRAPH, command={"resume": {"decisions": [{"type": "approve"}]}})
        # The server wrote this directory's file and workspace, not the project root's.
        assert (here / "workspace" / "where.md").read_text().strip() == "here"
        reader = open_reader(str(here / "rel.db"))
        try:
            assert any(t.thread_id == tid for t in reader.threads())
        finally:
            reader.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    # The terminal, from the same directory with the same relative --db, lists it and says where.
    listed = _cli(here, "threads", "--db", "rel.db")
    assert listed.returncode == 0, listed.stderr
    assert (
        f"Database: {here / 'rel.db'}" in listed.stdout
        and tid in listed.stdout + _cli(here, "threads", "--db", "rel.db", "--json").stdout
    )
    # And from a third directory, pointing at the same file.
    other = tmp_path / "third"
    other.mkdir()
    again = _cli(other, "threads", "--db", "../elsewhere/rel.db", "--json")
    assert tid in again.stdout

"""The first five minutes (issue 57, item 6): what `gatehouse` prints first, what
`gatehouse studio` tells a person, `--help`, and a fast CLI where
PYTHONDONTWRITEBYTECODE is set."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.clean_env import without_settings
from tests.support.postgres import free_port

ROOT = Path(__file__).resolve().parent.parent
GATEHOUSE = Path(sys.executable).parent / "gatehouse"


def test_the_sign_in_link_is_the_first_thing_gatehouse_prints(tmp_path: Path) -> None:
    env = {**without_settings(), "NO_COLOR": "1", "GATEHOUSE_NO_COMPILE": "1"}
    proc = subprocess.Popen(
        [str(GATEHOUSE), "ui", "--port", str(free_port()), "--no-browser"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 180
        while not any("sign-in link" in line for line in seen):
            assert proc.poll() is None and time.monotonic() < deadline, seen
            seen.append(proc.stdout.readline())  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    *before, link = seen
    # Nothing before it: not Streamlit's plain URL (it leads to the sign-in page), not
    # its welcome, not the command line.
    assert [line for line in before if line.strip()] == [], seen
    assert "/?token=" in link and "Streamlit" not in "".join(seen)


def test_the_sign_in_page_and_readme_name_the_quick_starts_command() -> None:
    readme = (ROOT / "README.md").read_text()
    trust = readme.split("## Sign-in and trust", 1)[1].split("\n## ", 1)[0]
    assert "gatehouse ui" not in trust and "`gatehouse` prints" in trust
    assert "internet" in readme and "LangSmith sign-in" in readme
    source = (ROOT / "ui" / "web" / "guard.py").read_text()
    assert "<code>gatehouse ui</code>" not in source and "<code>gatehouse</code>" in source


def test_gatehouse_studio_says_where_the_key_is_and_how_each_client_connects(
    tmp_path: Path,
) -> None:
    from gatehouse.ui.term.studio import how_to_connect

    key = tmp_path / 'it"s here' / "gatehouse.secret"
    text = how_to_connect("http://127.0.0.1:2024", key)
    assert "http://127.0.0.1:2024" in text and str(key) in text
    assert "Authorization: Bearer <key>" in text and "X-Api-Key" in text
    # The SDK snippet runs as printed (the path quoted as Python quotes it).
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if "get_sync_client(url=" in line)
    ast.parse(lines[at].split("client = ", 1)[1] + lines[at + 1].strip())
    assert repr(str(key)) in text
    assert "Agent Chat UI / Agent Inbox" in text and "GATEHOUSE_SERVER_ORIGINS=" in text
    flat = " ".join(text.split())
    assert "smith.langchain.com" in flat and "internet" in flat and "LangSmith sign-in" in flat


def test_help_shows_each_commands_whole_first_sentence() -> None:
    from gatehouse.ui.term.cli import app

    shown = CliRunner().invoke(app, ["--help"], terminal_width=80).output
    assert "..." not in shown.split("Commands:", 1)[1]
    assert "on Gatehouse's own database" in " ".join(shown.split())  # studio's, no longer cut


PYC_CHECK = """
import sys
from pathlib import Path
from gatehouse.ui.term.bytecode import warm
child = warm(Path(sys.argv[1]), Path(sys.argv[2]))
print("started" if child is not None else "nothing to do")
if child is not None:
    child.wait()
"""


def _warm(root: Path, site: Path, **env: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", PYC_CHECK, str(root), str(site)],
        cwd=ROOT,
        env={
            **{k: v for k, v in without_settings().items() if k != "PYTHONDONTWRITEBYTECODE"},
            "PYTHONPATH": str(ROOT),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.strip()


def test_bytecode_is_compiled_once_where_pythondontwritebytecode_is_set(tmp_path: Path) -> None:
    from gatehouse.ui.term.bytecode import compiled, lock_path

    root, site = tmp_path / "project", tmp_path / "site"
    sources = [root / p / f for p in ("graph", "tools", "ui") for f in ("__init__.py", "m.py")]
    sources.append(site / "langgraph" / "types.py")
    for source in sources:
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text("X = 1\n")
    # Without the flag Python saves bytecode itself: nothing to do.
    assert _warm(root, site) == "nothing to do"
    assert _warm(root, site, PYTHONDONTWRITEBYTECODE="1") == "started"
    assert all(compiled(s) for s in sources)
    assert not lock_path(root).exists()
    # Once compiled, a command only looks (a few stats) and starts nothing.
    assert _warm(root, site, PYTHONDONTWRITEBYTECODE="1") == "nothing to do"
    (root / "graph" / "__pycache__").rename(tmp_path / "moved")
    assert _warm(root, site, PYTHONDONTWRITEBYTECODE="1", GATEHOUSE_NO_COMPILE="1") == (
        "nothing to do"
    )


@pytest.mark.parametrize("flag", ["1"])
def test_a_compile_under_way_is_not_started_twice(tmp_path: Path, flag: str) -> None:
    from gatehouse.ui.term.bytecode import lock_path

    root, site = tmp_path / "project", tmp_path / "site"
    (root / "graph").mkdir(parents=True)
    (root / "graph" / "__init__.py").write_text("")
    site.mkdir()
    lock_path(root).touch()
    try:
        assert _warm(root, site, PYTHONDONTWRITEBYTECODE=flag) == "nothing to do"
    finally:
        lock_path(root).unlink()

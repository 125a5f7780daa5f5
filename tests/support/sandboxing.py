"""Shared by the sandbox tests: run_command with the bubblewrap sandbox or without
one, the honest "did the attack get through" check, and a folder the sandbox shows."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool

from gatehouse.tools.sandbox import Sandbox, choose_sandbox, detect_bubblewrap, home_folders
from gatehouse.tools.shell import make_shell_tool
from gatehouse.tools.workspace import Workspace

MODES = ("sandbox", "fallback")
REPO = Path(__file__).resolve().parents[2]
# Folders the sandbox replaces wholesale; a test that must see the sandbox hide one
# particular thing puts it somewhere else.
PRIVATE = (Path("/tmp"), Path("/var/tmp"), Path("/run"))
# A Python outside any home folder (the sandbox hides homes; uv's Pythons live there).
SYSTEM_PYTHON = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")


def sandbox_for(mode: str, workspace: Path, **kwargs: Any) -> Sandbox:
    if mode == "fallback":
        return choose_sandbox("off", workspace, **kwargs)
    support = detect_bubblewrap()
    if not support.usable:
        # .ci/run installs bubblewrap and sets this: there, a missing sandbox fails.
        if os.environ.get("GATEHOUSE_SANDBOX_TESTS") == "require":
            pytest.fail(f"bubblewrap is required for these tests: {support.reason}")
        pytest.skip(f"no working bubblewrap here: {support.reason}")
    return choose_sandbox("require", workspace, **kwargs)


def shell(
    mode: str,
    ws: Workspace,
    *,
    allow: tuple[str, ...] | list[str] = (),
    timeout_s: float = 10,
    **kwargs: Any,
) -> BaseTool:
    return make_shell_tool(
        ws, allow=allow, timeout_s=timeout_s, sandbox=sandbox_for(mode, ws.root, **kwargs)
    )


def outcome(mode: str, got_through: bool, *, fallback_stops: bool, evidence: str = "") -> None:
    """The sandbox stops every attack. Unsandboxed, an attack gets through unless the
    fallback stops it too (environment allow list, git hardening, ulimits): asserted
    either way, so a fallback that starts stopping one — or stops stopping one — shows."""
    expected = mode == "fallback" and not fallback_stops
    assert got_through == expected, (
        f"{mode}: the attack {'got through' if got_through else 'was stopped'}, expected it to "
        f"{'get through (unsandboxed)' if expected else 'be stopped'}\n{evidence}"
    )


def visible_base() -> Path | None:
    """A writable folder the sandbox shows: not /tmp, /var/tmp, /run or a home."""
    hidden = [*PRIVATE, *home_folders()]
    for candidate in (REPO / ".sandbox-test", Path("/srv/gatehouse-sandbox-test")):
        real = candidate.parent.resolve()
        if any(real == h.resolve() or h.resolve() in real.parents for h in hidden if h.exists()):
            continue
        try:
            candidate.mkdir(exist_ok=True)
        except OSError:
            continue
        return candidate
    return None


@pytest.fixture
def site() -> Iterator[Path]:
    """A folder outside every place the sandbox hides wholesale, so what it hides there
    (a database, a config file) is hidden by name — and `neighbour.txt` beside the
    workspace proves the place itself is visible."""
    base = visible_base()
    if base is None:
        pytest.skip("no writable folder outside /tmp and the home folders to test hiding in")
    folder = base / uuid.uuid4().hex[:12]
    folder.mkdir()
    (folder / "neighbour.txt").write_text("visible neighbour\n")
    (folder / "workspace").mkdir()
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if base.exists() and not any(base.iterdir()):
            base.rmdir()

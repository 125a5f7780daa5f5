"""Secrets never reach a tool (issue 54, item 8): with the workspace at the project root
(`workspace = "."`, "work on my project") and Gatehouse's database in it, the free file
tools and the allow-listed `cat` return neither the install secret nor the database's
bytes, in the bubblewrap sandbox and without one. Through the real wiring: a config
file, load_settings, open_session (which writes the database), build_tools, Policy.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from gatehouse.graph import Policy, install_secret, load_access, open_session, secret_path
from gatehouse.graph.service.config import load_settings
from gatehouse.graph.service.toolset import build_tools
from gatehouse.tools.workspace import PathError
from tests.support.sandboxing import MODES, outcome, site  # noqa: F401

WORDS = "s3cret-" + uuid.uuid4().hex  # what the person typed: it is in the database


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


LAYOUTS = {  # the database, and where the secret is
    ".gatehouse/": (".gatehouse/gatehouse.db", ".gatehouse/gatehouse.secret", "cat .gatehouse/*"),
    "project root": ("gatehouse.db", "gatehouse.secret", "cat gatehouse.*"),
    "[access] secret_file": (".gatehouse/gatehouse.db", "keys/install.secret", "cat keys/*"),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_free_tools_never_return_the_secret_or_the_database(
    mode: str,
    site: Path,  # noqa: F811
    layout: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = site / "workspace"
    (project / "README.md").write_text("# My project\n")
    monkeypatch.chdir(project)
    db_name, secret_name, glob = LAYOUTS[layout]
    db, secret_file = project / db_name, project / secret_name
    sandbox = "require" if mode == "sandbox" else "off"
    access = f'[access]\nsecret_file = "{secret_name}"\n' if "secret_file" in layout else ""
    (project / "gatehouse.toml").write_text(
        f'db = "{db_name}"\nworkspace = "."\n[tools]\nshell_sandbox = "{sandbox}"\n{access}'
    )
    settings = load_settings(project / "gatehouse.toml", env={})
    # Configured in the project, or an install from before that keeps its secret next
    # to the database: still hidden.
    secret = install_secret(secret_file)
    assert secret_path(str(db), load_access(settings.access)).absolute() == secret_file
    try:
        tools = {t.name: t for t in build_tools(settings)}
    except Exception as exc:  # noqa: BLE001 - "require" without bubblewrap
        pytest.skip(f"no sandbox here: {exc}")
    session = open_session(settings)
    try:
        session.send(None, f"write todo.md: {WORDS}").collect()  # paused: in the database
    finally:
        session.close()
    listing = tools["list_files"].invoke({"path": ".", "recursive": True})
    shown = "README.md  13 B" + ("\nkeys/" if access else "")  # the secret's folder is yours
    assert listing == shown, listing  # nor the config file: it may hold a key
    (project / "door").symlink_to(secret_file)

    def leaked(text: str) -> bool:
        return secret in text or WORDS in text

    # The file tools: named, through a symlink, searched, listed.
    gatehouse_files = [secret_file, db, Path(str(db) + "-wal"), project / "door"]
    for path in gatehouse_files:
        with pytest.raises(PathError, match="Gatehouse's own"):
            tools["read_file"].func(path=str(path.relative_to(project)))  # type: ignore[attr-defined]
    for pattern in (secret, WORDS, "s3cret"):
        found = tools["search_files"].invoke({"pattern": pattern})
        assert found.startswith(f"no matches for {pattern!r} in 1 file(s)"), found  # README.md
    with pytest.raises(PathError, match="Gatehouse's own"):
        tools["delete_file"].func(path=str(db.relative_to(project)))  # type: ignore[attr-defined]
    with pytest.raises(PathError, match="Gatehouse's own"):
        tools["move_file"].func(source=str(db.relative_to(project)), destination="x")  # type: ignore[attr-defined]

    # `cat` is allow-listed, but not on these paths: each asks a person.
    run = tools["run_command"]
    policy = Policy.from_mapping({})
    names = " ".join(str(p.relative_to(project)) for p in gatehouse_files)
    assert policy.evaluate("run_command", {"command": "cat README.md"}, run, []).mode == "allow"
    for command in (f"cat {names}", "cat *", glob, "cat door"):
        assert policy.evaluate("run_command", {"command": command}, run, []).mode == "ask", command
    # Approved anyway (or a command that finds them itself): the sandbox shows nothing.
    words = f"tr -c 'A-Za-z0-9_-' '\\n' | grep -x -e '{secret}' -e '{WORDS}'"
    found = run.invoke(
        {"command": f"cat {names} 2>&1 | {words}; grep -rao 's3cret-[0-9a-f]*' .; ls"}
    )
    assert "README.md" in found
    outcome(mode, leaked(found), fallback_stops=False, evidence=found)
    assert os.path.exists(db)  # nothing happened to the database itself


def test_a_folder_holding_the_database_is_neither_deleted_nor_moved(tmp_path: Path) -> None:
    from gatehouse.tools.files import delete_file, move_file
    from gatehouse.tools.workspace import Workspace

    db = tmp_path / "data" / "state" / "gatehouse.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"SQLite format 3\x00")
    (tmp_path / "data" / "notes.md").write_text("mine\n")
    ws = Workspace(tmp_path, hidden=[db])
    for refused in (
        lambda: delete_file(ws, "data", recursive=True),
        lambda: move_file(ws, "data", "elsewhere"),
        lambda: move_file(ws, "data/state", "elsewhere"),
    ):
        with pytest.raises(PathError, match="holds Gatehouse's own database"):
            refused()
    assert db.exists() and delete_file(ws, "data/notes.md").startswith("deleted")

"""Path safety: every way out of the workspace is refused with a clear error, and
nothing inside or outside is touched."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from langchain_core.tools import BaseTool

from gatehouse.tools.files import make_file_tools
from gatehouse.tools.workspace import MAX_PATH_CHARS, PathError, Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "workspace")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret\n")
    return folder


@pytest.fixture
def tools(ws: Workspace) -> dict[str, BaseTool]:
    return {t.name: t for t in make_file_tools(ws)}


def snapshot(*folders: Path) -> dict[str, bytes | str]:
    """Everything under the folders: paths, contents and link targets."""
    seen: dict[str, bytes | str] = {}
    for folder in folders:
        for p in sorted(folder.rglob("*")):
            if p.is_symlink():
                seen[str(p)] = "-> " + os.readlink(p)
            elif p.is_file():
                seen[str(p)] = p.read_bytes()
            else:
                seen[str(p)] = "dir"
    return seen


def refused(tool: BaseTool, args: dict, match: str) -> None:
    with pytest.raises(PathError, match=match):
        tool.invoke(args)


def test_dot_dot_escape_is_refused_for_read_write_and_list(
    ws: Workspace, outside: Path, tools: dict
) -> None:
    before = snapshot(outside)
    refused(tools["read_file"], {"path": "../outside/secret.txt"}, r"'\.\.' to leave the workspace")
    refused(tools["write_file"], {"path": "../outside/new.txt", "content": "x"}, r"'\.\.'")
    refused(tools["list_files"], {"path": "sub/../../outside"}, r"'\.\.'")
    assert snapshot(outside) == before
    # `..` that stays inside is an ordinary path.
    tools["write_file"].invoke({"path": "a/../b.txt", "content": "ok"})
    assert (ws.root / "b.txt").read_text() == "ok"


def test_absolute_path_outside_the_root_is_refused(
    ws: Workspace, outside: Path, tools: dict
) -> None:
    before = snapshot(outside)
    refused(tools["read_file"], {"path": str(outside / "secret.txt")}, "outside the workspace")
    refused(
        tools["write_file"],
        {"path": str(outside / "x.txt"), "content": "x"},
        "outside the workspace",
    )
    refused(tools["delete_file"], {"path": str(outside / "secret.txt")}, "outside the workspace")
    assert snapshot(outside) == before
    # An absolute path inside the root is fine.
    tools["write_file"].invoke({"path": str(ws.root / "in.txt"), "content": "in"})
    assert tools["read_file"].invoke({"path": str(ws.root / "in.txt")}) == "in"


def test_symlink_that_escapes_is_refused_and_nothing_is_touched(
    ws: Workspace, outside: Path, tools: dict
) -> None:
    (ws.root / "door").symlink_to(outside)
    (ws.root / "key.txt").symlink_to(outside / "secret.txt")
    before = snapshot(outside, ws.root)
    message = "symlink that leads outside"
    refused(tools["read_file"], {"path": "door/secret.txt"}, message)
    refused(tools["read_file"], {"path": "key.txt"}, message)
    refused(tools["write_file"], {"path": "door/planted.txt", "content": "x"}, message)
    refused(tools["write_file"], {"path": "key.txt", "content": "overwritten"}, message)
    refused(tools["edit_file"], {"path": "key.txt", "old_text": "top", "new_text": "no"}, message)
    refused(tools["list_files"], {"path": "door"}, message)
    # (delete_file removes such a link itself: test_tools_files.py)
    refused(tools["move_file"], {"source": "key.txt", "destination": "moved.txt"}, message)
    assert snapshot(outside, ws.root) == before
    # A listing shows the link without following it.
    assert "key.txt -> " in tools["list_files"].invoke({"path": "."})


def test_symlink_swapped_in_after_the_check_is_not_followed(ws: Workspace, outside: Path) -> None:
    # The race a path check alone cannot close: `notes/` is a real folder when the path
    # is resolved, then becomes a link outside before the file is opened.
    (ws.root / "notes").mkdir()
    real = ws.resolve("notes/todo.txt")
    (ws.root / "notes").rmdir()
    (ws.root / "notes").symlink_to(outside)
    with pytest.raises(PathError, match="not a plain folder"):
        ws.write_bytes(real, b"planted")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    (ws.root / "notes").unlink()
    (ws.root / "notes").mkdir()
    (ws.root / "notes" / "todo.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(PathError, match="symlink"):
        ws.read_bytes(real)


def test_symlink_inside_the_workspace_is_followed(ws: Workspace, tools: dict) -> None:
    (ws.root / "real.txt").write_text("hello\n")
    (ws.root / "alias.txt").symlink_to("real.txt")
    assert tools["read_file"].invoke({"path": "alias.txt"}) == "hello\n"


def test_fifo_is_refused_without_blocking(ws: Workspace, tools: dict) -> None:
    os.mkfifo(ws.root / "pipe")
    refused(tools["read_file"], {"path": "pipe"}, "not a regular file or folder")
    refused(tools["write_file"], {"path": "pipe", "content": "x"}, "not a regular file or folder")
    assert stat.S_ISFIFO((ws.root / "pipe").lstat().st_mode)


def test_device_file_is_refused(ws: Workspace, tools: dict) -> None:
    try:
        os.mknod(ws.root / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("cannot create a device node here (needs CAP_MKNOD)")
    refused(tools["read_file"], {"path": "null"}, "device")
    refused(tools["write_file"], {"path": "null", "content": "x"}, "device")
    # And a device outside the workspace is refused as outside.
    refused(tools["read_file"], {"path": "/dev/zero"}, "outside the workspace")


def test_path_that_is_too_long_is_refused(ws: Workspace, tools: dict) -> None:
    refused(
        tools["write_file"], {"path": "a/" * (MAX_PATH_CHARS // 2 + 1), "content": "x"}, "too long"
    )
    refused(tools["write_file"], {"path": "n" * 300 + ".txt", "content": "x"}, "longer than 255")
    refused(tools["read_file"], {"path": "x" * 5000}, "too long")
    assert list(ws.root.iterdir()) == []


def test_nul_in_path_is_refused(tools: dict) -> None:
    refused(tools["read_file"], {"path": "notes\x00.txt"}, "NUL")


def test_workspace_root_is_created_on_first_use(tmp_path: Path) -> None:
    root = tmp_path / "fresh" / "workspace"
    tools = {t.name: t for t in make_file_tools(Workspace(root))}
    assert not root.exists()
    assert tools["list_files"].invoke({}) == "(empty folder)"
    assert root.is_dir()

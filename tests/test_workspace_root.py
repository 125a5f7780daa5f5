"""The workspace's real root is kept between calls (a realpath is a stat per path
component, read a few dozen times a turn), but never outlives what the configured path
names: re-pointed or moved, the root is resolved again."""

from __future__ import annotations

import os
from pathlib import Path

from gatehouse.tools.workspace import Workspace


def test_the_root_follows_the_configured_path_when_it_is_re_pointed_or_moved(
    tmp_path: Path,
) -> None:
    a, b, link = tmp_path / "a", tmp_path / "b", tmp_path / "ws"
    a.mkdir()
    b.mkdir()
    link.symlink_to(a)
    ws = Workspace(link)
    assert ws.root == a.resolve()
    assert ws.root == a.resolve()  # kept

    link.unlink()
    link.symlink_to(b)  # another directory
    assert ws.root == b.resolve()
    assert ws.resolve("x.md") == b.resolve() / "x.md"

    moved = tmp_path / "moved"
    b.rename(moved)  # the same directory (same inode) under another name
    link.unlink()
    link.symlink_to(moved)
    assert ws.root == moved.resolve()
    assert ws.resolve("x.md") == moved.resolve() / "x.md"


def test_a_removed_root_is_created_again(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    first = ws.root
    os.rmdir(first)
    assert ws.root == first and first.is_dir()

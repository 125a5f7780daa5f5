"""What a gated file call will change, shown on the approval card. The edit logic lives
here too (`apply_edit`): preview and tool agree, and a failing edit says so on the card.
"""

from __future__ import annotations

import contextlib
import difflib
import itertools
import os
import re
import stat
from pathlib import Path
from typing import Any

from tools.workspace import PathError, Workspace

PREVIEW_LINES = 40
BINARY_SNIFF_BYTES = 8192


class EditError(ValueError):
    """An exact-text edit that cannot be applied as asked."""


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def decode(data: bytes) -> str:
    # surrogateescape: bytes that are not UTF-8 survive an edit unchanged.
    return data.decode("utf-8", errors="surrogateescape")


def encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def printable(text: str) -> str:
    return encode(text).decode("utf-8", errors="replace")


def size_text(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    exp = next((e for e in (1, 2) if n < 1024 ** (e + 1)), 3)
    return f"{n / 1024**exp:.1f} {('KB', 'MB', 'GB')[exp - 1]}"


def unified_diff(old: str, new: str, path: str) -> str:
    lines = difflib.unified_diff(
        printable(old).splitlines(keepends=True),
        printable(new).splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    end = "\n\\ No newline at end of file\n"
    return "".join(line if line.endswith("\n") else line + end for line in lines) or "(no change)"


def line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def apply_edit(text: str, old: str, new: str, *, replace_all: bool, path: str) -> tuple[str, int]:
    """Replace `old` with `new`; refuse when `old` is missing or (unless replace_all) not unique."""
    if old == "":
        raise EditError("old_text is empty; give the exact text to replace")
    count = text.count(old)
    if count == 0:
        hint = ""
        stripped = old.strip()
        if stripped and stripped in text:
            hint = " (it is there with different surrounding whitespace or line breaks)"
        raise EditError(
            f"old_text was not found in {path}{hint}; read the file and copy the text exactly"
        )
    if count > 1 and not replace_all:
        found = itertools.islice(re.finditer(re.escape(old), text), 10)
        lines = [str(line_of(text, m.start())) for m in found]
        raise EditError(
            f"old_text appears {count} times in {path} (lines {', '.join(lines)}); "
            "include more surrounding text to make it unique, or set replace_all"
        )
    return text.replace(old, new) if replace_all else text.replace(old, new, 1), count


def tree_size(real: Path) -> tuple[int, int, int]:
    """(files, folders, bytes) under a folder, symlinks counted as files and not followed."""
    files = folders = total = 0
    for top, dirs, names in os.walk(real, followlinks=False):
        folders += len(dirs)
        for name in names:
            files += 1
            try:
                st = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return files, folders, total


# Previews (args -> text) never raise PathError, they show it.
def preview_write(ws: Workspace, args: dict[str, Any]) -> str | None:
    try:
        target = ws.resolve(str(args.get("path", "")))
    except PathError as exc:
        return f"refused: {exc}"
    content = str(args.get("content", ""))
    rel = ws.relative(target)
    if target.is_dir():
        return f"refused: {rel} is a folder"
    if not target.is_file():  # whole: the card cuts it by its own rule and says how much
        return f"new file {rel} ({size_text(len(encode(content)))}):\n" + printable(content)
    data = ws.read_bytes(target)
    if is_binary(data):
        return f"overwrite binary file {rel} ({size_text(len(data))}) with {size_text(len(encode(content)))} of text"
    return unified_diff(decode(data), content, rel)


def preview_edit(ws: Workspace, args: dict[str, Any]) -> str | None:
    try:
        target = ws.resolve(str(args.get("path", "")), must_exist=True)
        rel = ws.relative(target)
        if not target.is_file():
            return f"refused: {rel} is not a file"
        text = decode(ws.read_bytes(target))
        new, _ = apply_edit(
            text,
            str(args.get("old_text", "")),
            str(args.get("new_text", "")),
            replace_all=bool(args.get("replace_all", False)),
            path=rel,
        )
    except (PathError, EditError) as exc:
        return f"will fail: {exc}"
    return unified_diff(text, new, rel)


def preview_delete(ws: Workspace, args: dict[str, Any]) -> str | None:
    path = str(args.get("path", ""))
    target = None
    with contextlib.suppress(PathError):
        target = link_itself(ws, path)
    try:
        target = target or ws.resolve(path, must_exist=True, follow_final=False)
    except PathError as exc:
        return f"will fail: {exc}"
    rel = ws.relative(target)
    if target.is_symlink():
        return f"delete symlink {rel} -> {os.readlink(target)} (its target is kept)"
    if target.is_dir():
        files, folders, total = tree_size(target)
        if files == 0 and folders == 0:
            return f"delete empty folder {rel}/"
        what = f"delete folder {rel}/ with {files} file(s) and {folders} subfolder(s), {size_text(total)} in all"
        if not args.get("recursive"):
            what = f"will fail: {rel}/ is not empty and recursive is false ({what[7:]})"
        return what
    data = ws.read_bytes(target, PREVIEW_LINES * 200)
    size = target.stat().st_size
    if is_binary(data):
        return f"delete binary file {rel} ({size_text(size)})"
    lines = printable(decode(data)).splitlines()[:10]
    return f"delete file {rel} ({size_text(size)}), which starts:\n" + "\n".join(lines)


def preview_move(ws: Workspace, args: dict[str, Any]) -> str | None:
    try:
        source = ws.resolve(str(args.get("source", "")), must_exist=True, follow_final=False)
        dest = destination_of(ws, source, str(args.get("destination", "")))
    except PathError as exc:
        return f"will fail: {exc}"
    line = f"move {ws.relative(source)}{'/' if source.is_dir() else ''} -> {ws.relative(dest)}"
    if dest.exists() or dest.is_symlink():
        if not args.get("overwrite"):
            return f"will fail: {ws.relative(dest)} already exists and overwrite is false"
        line += f" (replaces the existing {ws.relative(dest)}, {size_text(dest.stat().st_size)})"
    return line


def destination_of(ws: Workspace, source: Path, destination: str) -> Path:
    """Like `mv`: moving onto an existing folder moves the entry into it."""
    dest = ws.resolve(destination, follow_final=False)
    if dest.is_dir() and not dest.is_symlink():
        dest = dest / source.name
        ws.resolve(ws.relative(dest))  # the new name may itself be too long
    if source.is_dir() and not source.is_symlink() and (dest == source or source in dest.parents):
        raise PathError(f"cannot move {ws.relative(source)} into itself")
    return dest


def link_itself(ws: Workspace, path: str) -> Path | None:
    """The symlink `path` names, when its folder is inside, wherever it points: deleting
    a link never touches its target, and one that leads out is the one to delete."""
    if not isinstance(path, str) or not path.strip() or path.rstrip().endswith("/"):
        return None
    raw = Path(path.strip())
    if raw.name in ("", ".", ".."):
        return None
    folder = ws.resolve(str(raw.parent), must_exist=True)
    link = folder / raw.name
    return link if link.is_symlink() and link != ws.root else None

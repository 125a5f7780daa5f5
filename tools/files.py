"""Workspace file tools: list, read and search run freely; write, edit, delete and move
ask, with a preview of what they will change. Each is a function of the workspace and
its arguments, bound by `make_file_tools`. Previews share the tools' logic (`apply_edit`):
preview and tool agree, and a failing edit says so on the card."""

from __future__ import annotations

import contextlib
import difflib
import functools
import itertools
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

from langchain_core.tools import BaseTool
from pydantic import Field

from gatehouse.tools.base import bound_tool
from gatehouse.tools.workspace import PathError, Workspace

READ_CAP_BYTES = 200_000
COUNT_LINES_BYTES = 20_000_000
LIST_CAP = 1_000
SEARCH_MATCH_CAP = 200
SEARCH_FILE_CAP_BYTES = 2_000_000
SEARCH_LINE_CHARS = 300
PREVIEW_LINES = 40
BINARY_SNIFF_BYTES = 8192
# Folders a recursive listing or a search skips: tool caches, not the user's work.
SKIP_DIRS = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
)

PathArg = Annotated[str, Field(description="Path relative to the workspace root")]


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
        files = folders = total = 0
        for top, dirs, names in os.walk(target, followlinks=False):
            folders, files = folders + len(dirs), files + len(names)
            for name in names:
                with contextlib.suppress(OSError):
                    st = os.lstat(os.path.join(top, name))
                    total += st.st_size if stat.S_ISREG(st.st_mode) else 0
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


def entries(ws: Workspace, folder: Path) -> list[Path]:
    return [e for e in sorted(folder.iterdir()) if not ws.hides(e)]


def walk(ws: Workspace, top: Path) -> Iterator[Path]:
    """Entries under `top`, depth first; links and tool caches not entered, hidden not listed."""
    for entry in entries(ws, top):
        yield entry
        if entry.is_dir() and not entry.is_symlink() and entry.name not in SKIP_DIRS:
            yield from walk(ws, entry)


def _existing(ws: Workspace, path: str, *, folder: bool = False) -> Path:
    target = ws.resolve(path, must_exist=True)  # a regular file or a folder
    if target.is_dir() != folder:
        raise PathError(f"{path!r} is not a {'folder' if folder else 'file'}")
    return target


def list_files(
    ws: Workspace,
    path: PathArg = ".",
    recursive: Annotated[bool, Field(description="Also list everything in subfolders")] = False,
) -> str:
    """List files and folders under a workspace folder, with sizes in bytes.

    Folders end with `/`; symlinks show their target. A recursive listing skips
    tool caches such as .git and node_modules and stops after 1000 entries.
    """
    folder = _existing(ws, path, folder=True)
    rows: list[str] = []
    for entry in walk(ws, folder) if recursive else entries(ws, folder):
        if len(rows) == LIST_CAP:
            rows.append(f"… (stopped after {LIST_CAP} entries; list a subfolder to see more)")
            break
        rel = ws.relative(entry)
        if entry.is_symlink():
            rows.append(f"{rel} -> {os.readlink(entry)}")
        else:
            rows.append(f"{rel}/" if entry.is_dir() else f"{rel}  {entry.lstat().st_size} B")
    return "\n".join(rows) or "(empty folder)"


def read_file(
    ws: Workspace,
    path: PathArg,
    start_line: Annotated[
        int | None, Field(ge=1, description="First line to return (1-based)")
    ] = None,
    end_line: Annotated[
        int | None, Field(ge=1, description="Last line to return (inclusive)")
    ] = None,
) -> str:
    """Read a text file from the workspace, whole or a range of lines.

    At most 200 KB come back per call; for a bigger file ask for line ranges.
    Binary files are reported by size, not shown.
    """
    target = _existing(ws, path)
    if start_line is not None and end_line is not None and end_line < start_line:
        raise ValueError(f"end_line ({end_line}) is before start_line ({start_line})")
    rel, size = ws.relative(target), target.stat().st_size
    if is_binary(ws.read_bytes(target, BINARY_SNIFF_BYTES)):
        return f"{rel} is a binary file ({size_text(size)}); not shown."
    if start_line is None and end_line is None:
        data = ws.read_bytes(target, READ_CAP_BYTES + 1)
        if len(data) <= READ_CAP_BYTES:
            return printable(decode(data))
        cut = data[:READ_CAP_BYTES]
        cut = cut[: cut.rfind(b"\n") + 1] or cut
        shown = cut.count(b"\n")
        return printable(decode(cut)) + (
            f"\n… (showing lines 1-{shown} of a {size_text(size)} file; "
            f"use start_line={shown + 1} to read on)"
        )
    first, last = start_line or 1, end_line
    picked: list[bytes] = []
    used, seen, capped_at = 0, 0, None
    count_all = size <= COUNT_LINES_BYTES  # say "of N lines" unless that means reading gigabytes
    with os.fdopen(ws.open_fd(target), "rb") as fh:
        for seen, line in enumerate(fh, start=1):
            if seen < first:
                continue
            if (last is not None and seen > last) or capped_at:
                if count_all:
                    continue
                break
            if used + len(line) > READ_CAP_BYTES:
                capped_at = seen if picked else seen + 1
                if not picked:  # one enormous line: show its start
                    picked.append(line[:READ_CAP_BYTES] + b"\n")
                continue
            picked.append(line)
            used += len(line)
    if first > seen:
        return f"{rel} has only {seen} line(s); nothing at line {first}."
    of = f"of {seen}" if count_all else f"of a {size_text(size)} file"
    note = f"\n… (lines {first}-{first + len(picked) - 1} {of} in {rel})"
    if capped_at:
        note += f"; size cap reached, use start_line={capped_at} to read on"
    return printable(decode(b"".join(picked))) + note


def search_files(
    ws: Workspace,
    pattern: Annotated[
        str, Field(description="Text to find (or a Python regex when regex is true)")
    ],
    path: Annotated[
        str, Field(description="Folder (or file) to search, relative to the workspace")
    ] = ".",
    regex: Annotated[bool, Field(description="Treat pattern as a regular expression")] = False,
    ignore_case: bool = False,
    glob: Annotated[
        str | None, Field(description="Only files whose name matches, e.g. '*.py'")
    ] = None,
) -> str:
    """Search text files in the workspace for a string or regex.

    Answers `path:line: text` per matching line (at most 200). Skips binary
    files, files over 2 MB, symlinks and tool caches such as .git.
    """
    if pattern == "":
        raise ValueError("pattern is empty")
    try:
        needle = re.compile(pattern if regex else re.escape(pattern), re.I if ignore_case else 0)
    except re.error as exc:
        raise ValueError(f"bad regex {pattern!r}: {exc}") from exc
    top = ws.resolve(path, must_exist=True)
    files = (
        [top] if top.is_file() else [p for p in walk(ws, top) if p.is_file() and not p.is_symlink()]
    )
    hits: list[str] = []
    searched = 0
    for file in files:
        if (glob and not file.match(glob)) or file.lstat().st_size > SEARCH_FILE_CAP_BYTES:
            continue
        try:
            data = ws.read_bytes(file)
        except (OSError, PathError):
            continue
        if is_binary(data):
            continue
        searched += 1
        for n, line in enumerate(printable(decode(data)).splitlines(), start=1):
            if needle.search(line):
                if len(hits) == SEARCH_MATCH_CAP:
                    hits.append(f"… (stopped after {SEARCH_MATCH_CAP} matches; narrow the search)")
                    return "\n".join(hits)
                text = line if len(line) <= SEARCH_LINE_CHARS else line[:SEARCH_LINE_CHARS] + " …"
                hits.append(f"{ws.relative(file)}:{n}: {text}")
    return "\n".join(hits) or f"no matches for {pattern!r} in {searched} file(s)"


def write_file(
    ws: Workspace,
    path: PathArg,
    content: Annotated[str, Field(description="The whole new content")],
) -> str:
    """Create or overwrite a text file in the workspace with the given content.

    Missing folders are created. To change part of a file, prefer edit_file.
    """
    target = ws.resolve(path)
    if target.is_dir():
        raise PathError(f"{path!r} is a folder")
    how = "overwrote" if target.exists() else "created"
    data = encode(content)
    ws.write_bytes(target, data)
    return f"wrote {len(data)} bytes to {ws.relative(target)} ({how})"


def edit_file(
    ws: Workspace,
    path: PathArg,
    old_text: Annotated[str, Field(description="Exact text to replace, copied from the file")],
    new_text: Annotated[str, Field(description="Text to put in its place")],
    replace_all: Annotated[
        bool, Field(description="Replace every occurrence, not just a unique one")
    ] = False,
) -> str:
    """Replace an exact piece of text in a workspace file.

    old_text must match the file exactly (spaces and line breaks too) and be
    unique unless replace_all is true; otherwise nothing changes and the error
    says why.
    """
    target = _existing(ws, path)
    rel = ws.relative(target)
    data = ws.read_bytes(target)
    if is_binary(data):
        raise EditError(f"{rel} is a binary file; edit_file only edits text")
    text = decode(data)
    new, count = apply_edit(text, old_text, new_text, replace_all=replace_all, path=rel)
    ws.write_bytes(target, encode(new))
    at = line_of(text, text.index(old_text))
    return f"edited {rel}: replaced {count} occurrence(s), first at line {at}"


def delete_file(
    ws: Workspace,
    path: PathArg,
    recursive: Annotated[
        bool, Field(description="Needed to delete a folder that is not empty")
    ] = False,
) -> str:
    """Delete a file, a symlink (not its target) or a folder from the workspace."""
    target = link_itself(ws, path) or ws.resolve(path, must_exist=True, follow_final=False)
    rel = ws.relative(target)
    # From here on only directory fds: the path is never resolved again (issue 29, 9).
    was_folder = target.is_dir() and not target.is_symlink()
    files, folders, total = ws.remove(target, recursive=recursive)
    if not was_folder:
        return f"deleted {rel} ({size_text(total)})"
    return f"deleted folder {rel}/ ({files} file(s), {folders} subfolder(s), {size_text(total)})"


def move_file(
    ws: Workspace,
    source: Annotated[str, Field(description="File or folder to move, relative to the workspace")],
    destination: Annotated[str, Field(description="New path; an existing folder means 'into it'")],
    overwrite: Annotated[
        bool, Field(description="Replace an existing file at the destination")
    ] = False,
) -> str:
    """Move or rename a file or folder inside the workspace (missing folders are created)."""
    src = ws.resolve(source, must_exist=True, follow_final=False)
    if src == ws.root:
        raise PathError("refusing to move the workspace root itself")
    ws.refuse_holder(src)
    dest = destination_of(ws, src, destination)
    if dest == src:
        raise PathError(f"{source!r} and {destination!r} are the same path")
    if dest.exists() or dest.is_symlink():
        if not overwrite:
            raise PathError(f"{ws.relative(dest)} already exists; set overwrite to replace it")
        if dest.is_dir() and not dest.is_symlink():
            raise PathError(f"{ws.relative(dest)} is a folder; move into it or delete it first")
    # Through directory fds (O_NOFOLLOW from the root), the destination checked again there.
    with ws.parent_fd(src) as src_fd, ws.parent_fd(dest, create=True) as dest_fd:
        try:
            there = os.stat(dest.name, dir_fd=dest_fd, follow_symlinks=False)
        except FileNotFoundError:
            there = None
        if there is not None and (not overwrite or stat.S_ISDIR(there.st_mode)):
            raise PathError(f"{ws.relative(dest)} appeared while moving; nothing was moved")
        try:
            os.rename(src.name, dest.name, src_dir_fd=src_fd, dst_dir_fd=dest_fd)
        except OSError as exc:
            raise PathError(
                f"cannot move {ws.relative(src)} to {ws.relative(dest)}: {exc.strerror}"
            ) from exc
    return f"moved {ws.relative(src)} -> {ws.relative(dest)}"


def make_file_tools(ws: Workspace) -> list[BaseTool]:
    def bind(fn: Any, risk: str, canonical: Any, preview: Any = None, **facts: Any) -> BaseTool:
        facts.setdefault("match_arg", "path")
        return bound_tool(fn, ws, risk=risk, preview=preview, canonical=canonical, **facts)

    folder = functools.partial(canonical_path, default=".")

    return [
        bind(list_files, "read", folder),
        bind(read_file, "read", canonical_path),
        bind(search_files, "read", folder),
        bind(write_file, "write", canonical_path, preview_write, idempotent=True),
        bind(edit_file, "write", canonical_path, preview_edit),
        bind(delete_file, "delete", canonical_entry, preview_delete),
        bind(move_file, "write", canonical_move, preview_move, match_arg="source"),
    ]


# Canonical forms for policy rules and grants: what a call touches, resolved as the tool
# resolves it, or None when it leaves the workspace (no rule or grant matches it).
def _relative_or_none(ws: Workspace, value: Any, resolve: Any) -> str | None:
    try:  # what is not a string `ws.resolve` refuses too
        return ws.relative(resolve(value))
    except (PathError, OSError, ValueError):
        return None


def canonical_path(
    ws: Workspace, args: dict[str, Any], default: str | None = None
) -> dict[str, str | None]:
    return {"path": _relative_or_none(ws, args.get("path", default), ws.resolve)}


def canonical_entry(ws: Workspace, args: dict[str, Any]) -> dict[str, str | None]:
    """A delete touches the entry itself: a symlink is the link, not its target."""
    path = _relative_or_none(
        ws, args.get("path"), lambda p: link_itself(ws, p) or ws.resolve(p, follow_final=False)
    )
    return {"path": path}


def canonical_move(ws: Workspace, args: dict[str, Any]) -> dict[str, str | None]:
    """Both ends of a move: a grant for `notes/*` covers a move only inside notes/."""
    source = _relative_or_none(ws, args.get("source"), lambda p: ws.resolve(p, follow_final=False))
    destination = None
    if source is not None and isinstance(args.get("destination"), str):
        src = ws.resolve(str(args["source"]), follow_final=False)
        destination = _relative_or_none(
            ws, args["destination"], lambda p: destination_of(ws, src, p)
        )
    return {"source": source, "destination": destination}

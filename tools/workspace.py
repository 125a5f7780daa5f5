"""The one folder file tools may touch. `resolve` refuses a bad path before anything is
touched, then `open_fd` / `parent_fd` / `remove` walk from the root with `O_NOFOLLOW`,
so a symlink swapped in after the check cannot lead out. Gatehouse's database and
install secret are hidden even inside the root: whoever reads them can approve.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

MAX_PATH_CHARS = 1024
MAX_NAME_CHARS = 255

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_OPEN_DIR = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
_READ_FILE = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC  # a FIFO must not block the open
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
# What `Path.exists` takes for "not there" (pathlib's _IGNORED_ERRNOS).
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


class PathError(ValueError):
    """A path the agent gave points outside the workspace or at something unsafe."""


def _checked_text(path: str) -> Path:
    """`path` as a Path; refused if not a string, with a NUL, or too long."""
    if not isinstance(path, str) or "\x00" in path:
        raise PathError("path must be a string without NUL characters")
    if len(path) > MAX_PATH_CHARS:
        raise PathError(f"path is too long ({len(path)} characters, limit {MAX_PATH_CHARS})")
    raw = Path(path.strip() or ".")
    if any(len(part) > MAX_NAME_CHARS for part in raw.parts):
        raise PathError(f"path {path!r} has a name longer than {MAX_NAME_CHARS} characters")
    return raw


class Workspace:
    """A root folder, created on first use; paths resolve inside it, never into `hidden`."""

    def __init__(
        self, root: str | os.PathLike[str], *, hidden: Iterable[str | os.PathLike[str]] = ()
    ) -> None:
        self._root = Path(root).expanduser().absolute()
        self._resolved: Path | None = None
        self._hidden = [Path(p).expanduser().resolve() for p in hidden]

    def hides(self, real: Path) -> bool:
        return any(self._inside(real, h) for h in self._hidden)

    def refuse_holder(self, real: Path) -> None:
        if any(self._inside(h, real) for h in self._hidden):
            raise PathError(
                f"{self.relative(real)!r} holds Gatehouse's own database or secret; "
                "no tool deletes or moves it"
            )

    @property
    def root(self) -> Path:
        # Read dozens of times a turn: the real path is kept while both paths name the
        # same directory (two stats, not one per component).
        if not self._root.is_dir():  # a failing mkdir costs more than the stat
            self._root.mkdir(parents=True, exist_ok=True)
        now, kept = os.stat(self._root), self._resolved
        if kept is not None:
            with contextlib.suppress(OSError):
                if os.path.samestat(os.stat(kept), now):
                    return kept
        self._resolved = real = self._root.resolve()
        return real

    def resolve(self, path: str, *, must_exist: bool = False, follow_final: bool = True) -> Path:
        """The real path of a workspace-relative (or absolute, inside) path; escapes, links
        that lead out, devices and over-long paths refused. `follow_final=False`: a final
        symlink as itself (to delete or move it); it must still point inside."""
        raw = _checked_text(path)
        root = self.root
        candidate = raw if raw.is_absolute() else root / raw
        try:
            real = candidate.resolve(strict=False)
        except (OSError, RuntimeError) as exc:  # symlink loops, ENAMETOOLONG
            raise PathError(f"cannot resolve path {path!r}: {exc}") from exc
        if not self._inside(real, root):
            raise self._why_outside(path, raw, candidate, root)
        if len(str(real)) > MAX_PATH_CHARS + len(str(root)):
            raise PathError(f"path {path!r} is too long once resolved")
        lexical = Path(os.path.normpath(candidate))
        if self.hides(real) or self.hides(lexical):
            raise PathError(
                f"path {path!r} is Gatehouse's own (its database or secret); no tool reaches it"
            )
        if not follow_final and lexical != root and lexical.is_symlink():
            # The link itself: its parent resolved, its name kept (its target checked above).
            link = lexical.parent.resolve() / lexical.name
            if not self._inside(link.parent, root):
                raise PathError(f"path {path!r} is outside the workspace ({root})")
            return link
        try:  # one stat where `exists()` and `stat()` would make two
            mode = os.stat(real).st_mode
        except OSError as exc:
            if exc.errno not in _ABSENT:
                raise
            if must_exist:
                raise PathError(f"{path!r} does not exist in the workspace") from None
            return real
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise PathError(
                f"path {path!r} is not a regular file or folder (device, pipe or socket)"
            )
        return real

    def _why_outside(self, path: str, raw: Path, candidate: Path, root: Path) -> PathError:
        if ".." in raw.parts:
            return PathError(f"path {path!r} uses '..' to leave the workspace ({root})")
        inside = [p for p in (candidate, *candidate.parents) if self._inside(p, root)]
        if any(p.is_symlink() for p in inside if p != root):
            return PathError(
                f"path {path!r} goes through a symlink that leads outside the workspace"
            )
        return PathError(f"path {path!r} is outside the workspace ({root})")

    def relative(self, real: Path) -> str:
        root = self.root
        if self._inside(real, root):  # the prefix cut off (see `_inside`), no new Paths
            r, p = str(root), str(real)
            return p[len(r) if r.endswith("/") else len(r) + 1 :] or "."
        return real.relative_to(root).as_posix()  # raises ValueError, as it always did

    @staticmethod
    def _inside(real: Path, root: Path) -> bool:
        # `real == root or root in real.parents` on the normalised strings: building
        # `parents` cost more than the rest of `resolve`.
        r, p = str(root), str(real)
        return p == r or p.startswith(r if r.endswith("/") else r + "/")

    @contextlib.contextmanager
    def parent_fd(self, real: Path, *, create: bool = False) -> Iterator[int]:
        """A directory fd for `real.parent`, reached from the root with O_NOFOLLOW."""
        root = self.root
        if self.hides(real):  # every read, write and delete passes here, checked or not
            raise PathError(f"{self.relative(real)!r} is Gatehouse's own; no tool reaches it")
        parts = real.relative_to(root).parts[:-1]
        fd = os.open(root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            for part in parts:
                try:
                    nxt = os.open(part, _OPEN_DIR, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise PathError(f"folder {part!r} does not exist") from None
                    os.mkdir(part, 0o777, dir_fd=fd)
                    nxt = os.open(part, _OPEN_DIR, dir_fd=fd)
                except OSError as exc:
                    raise PathError(
                        f"{part!r} in {self.relative(real)!r} is not a plain folder "
                        f"(a symlink or a file appeared): {exc.strerror}"
                    ) from exc
                os.close(fd)
                fd = nxt
            yield fd
        finally:
            os.close(fd)

    def open_fd(self, real: Path) -> int:
        """Open a regular file inside the workspace to read; symlinks and device files refused."""
        with self.parent_fd(real) as dir_fd:
            try:
                fd = os.open(real.name, _READ_FILE, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EMLINK):  # EMLINK: O_NOFOLLOW on FreeBSD
                    raise PathError(f"{self.relative(real)!r} became a symlink; refused") from exc
                raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise PathError(f"{self.relative(real)!r} is not a regular file")
        return fd

    def read_bytes(self, real: Path, limit: int | None = None) -> bytes:
        with os.fdopen(self.open_fd(real), "rb") as fh:
            return fh.read(limit)  # None: all of it

    def write_bytes(self, real: Path, data: bytes) -> None:
        """Replace the file atomically (a crash never leaves half a file), keeping its mode."""
        with self.parent_fd(real, create=True) as dir_fd:
            try:
                old_mode = stat.S_IMODE(os.lstat(real.name, dir_fd=dir_fd).st_mode)
            except FileNotFoundError:
                old_mode = None
            tmp = f".{real.name[:200]}.gatehouse-{os.getpid()}-{os.urandom(4).hex()}.tmp"
            fd = os.open(tmp, _NEW_FILE, 0o666, dir_fd=dir_fd)
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                    if old_mode is not None:
                        os.fchmod(fh.fileno(), old_mode)
                os.replace(tmp, real.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
                raise

    def remove(self, real: Path, *, recursive: bool) -> tuple[int, int, int]:
        """Delete the entry `real` through directory fds; (files, folders, bytes) removed."""
        if real == self.root:
            raise PathError("refusing to delete the workspace root itself")
        self.refuse_holder(real)
        rel = self.relative(real)
        with self.parent_fd(real) as dir_fd:
            try:
                st = os.stat(real.name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                raise PathError(f"{rel!r} does not exist in the workspace") from None
            if not stat.S_ISDIR(st.st_mode):
                os.unlink(real.name, dir_fd=dir_fd)
                return 1, 0, st.st_size  # a symlink: the length of its target text, as `ls -l`
            fd = _open_dir(real.name, dir_fd)
            try:
                if fd is None or not os.path.samestat(st, os.fstat(fd)):
                    raise PathError(
                        f"{rel!r} changed while it was being deleted; nothing was deleted"
                    )
                counts = _tree(fd, delete=recursive)
                if (counts[0] or counts[1]) and not recursive:
                    raise PathError(
                        f"{rel}/ is not empty ({counts[0]} file(s)); set recursive to delete it all"
                    )
            finally:
                if fd is not None:
                    os.close(fd)
            os.rmdir(real.name, dir_fd=dir_fd)
            return counts


def _open_dir(name: str, dir_fd: int) -> int | None:
    try:
        return os.open(name, _OPEN_DIR, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK, errno.ENOENT):
            return None
        raise


def _tree(fd: int, *, delete: bool) -> tuple[int, int, int]:
    """(files, folders, bytes) below the folder `fd`, symlinks counted as files; with
    `delete`, each entry removed on the way, depth first (as shutil.rmtree's fd walk)."""
    files = folders = total = 0
    with os.scandir(fd) as it:
        entries = [(e.name, e.stat(follow_symlinks=False)) for e in it]
    for name, st in entries:
        sub = _open_dir(name, fd) if stat.S_ISDIR(st.st_mode) else None
        if sub is None and delete:
            # A file, a symlink, or a folder swapped for one: the entry itself goes.
            try:
                os.unlink(name, dir_fd=fd)
            except IsADirectoryError:  # a plain folder appeared: walk it through its fd
                sub = _open_dir(name, fd)
            except FileNotFoundError:
                pass
        if sub is None:
            files += 1
            total += st.st_size if stat.S_ISREG(st.st_mode) else 0
            continue
        try:
            f, d, b = _tree(sub, delete=delete)
        finally:
            os.close(sub)
        files, folders, total = files + f, folders + d + 1, total + b
        if delete:
            os.rmdir(name, dir_fd=fd)
    return files, folders, total

"""Where `run_command` runs: a bubblewrap sandbox, or (where there is none) the plain
process, said on every approval card. `Bubblewrap`: an allow-listed environment, every
namespace unshared (the network only when granted), no capabilities, `/` read-only,
private `/tmp`, `/var/tmp` and `/run` (docker.sock, D-Bus), homes and Gatehouse's
database hidden, the workspace bound (read-only for allow-listed commands), ulimits,
a pids cgroup as root (tools/pids_cap.py) and a /proc watchdog. `Unsandboxed`: the
environment allow list and ulimits only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import math
import os
import shutil
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from gatehouse.tools import disk_cache, pids_cap

try:
    import pwd
except ImportError:  # Windows: no password database (and no sandbox)
    pwd = None  # type: ignore[assignment]  # the module is absent there; callers check for None

log = logging.getLogger("gatehouse.sandbox")

SandboxMode = Literal["auto", "require", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("auto", "require", "off")

# The environment a command gets: these names (when set) plus what the config names.
ENV_ALLOW = ("PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME")
ENV_ALLOW_PREFIXES = ("LC_",)
FIXED_ENV = {"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
# Never hidden, whatever a home or a config entry says: hiding them breaks every command.
SYSTEM_DIRS = frozenset(
    Path(p) for p in ("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/opt", "/proc",
                      "/sbin", "/sys", "/usr", "/var", "/srv", "/mnt", "/media")
)  # fmt: skip
# Only root can read these: a sandbox started by root could, so they are hidden.
ROOT_ONLY_SECRETS = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
                     "/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key")  # fmt: skip
WATCH_EVERY_S = 0.05
PROBE_TIMEOUT_S = 10.0
BASE_MOUNTS = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
# A usable probe is kept on disk (tools/disk_cache.py): a new process need not run bwrap
# three times (~15 ms). Keyed by all the trial depended on (`_probe_key`); an unusable
# result is never kept, so a machine that gains a working bwrap is never told otherwise.
PROBE_FILE = "bwrap-probe.json"
PROBE_VERSION = 1  # of the probe and its entry: a change re-probes everywhere
PROBE_SYSCTLS = (
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "/proc/sys/kernel/random/boot_id",
)
Env = Mapping[str, str]
NO_ENV: Env = MappingProxyType({})


class SandboxUnavailable(RuntimeError):
    """The config requires the sandbox and this machine cannot provide one."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """Approximate per-command limits. `cpu_s` None: the timeout times the cores."""

    memory_mb: int = 4096  # RLIMIT_DATA per process: heap and private mappings
    max_processes: int = 512
    cpu_s: int | None = None
    tmpfs_mb: int = 1024  # each private /tmp, /var/tmp, home (RAM-backed)


@dataclasses.dataclass(frozen=True)
class Access:
    """What one command may touch beyond reading."""

    writable: bool = True  # the workspace
    network: bool = False


@dataclasses.dataclass(frozen=True)
class Support:
    """What this machine's bubblewrap can do, found by `detect_bubblewrap`."""

    path: str | None
    version: str = ""
    reason: str = ""  # why it is unusable; empty when usable
    disable_userns: bool = False
    tmpfs_size: bool = False

    @property
    def usable(self) -> bool:
        return self.path is not None and not self.reason


@dataclasses.dataclass(eq=False)
class Running:
    """A started command; `info_fd`: bwrap's `--info-fd` (names the sandbox's PID 1)."""

    proc: subprocess.Popen[bytes]
    info_fd: int | None = None
    max_processes: int | None = None
    _pids_group: Path | None = None
    _info: bytes = b""
    _sandbox_pid: int | None = None
    _pidfd: int | None = None  # names the sandbox's PID 1 even after its number is reused
    _checked: float = 0.0

    def over_limit(self) -> str | None:
        """Why the command must be stopped now (too many processes), or None."""
        now = time.monotonic()
        if self.max_processes is None or now - self._checked < WATCH_EVERY_S:
            return None
        self._checked = now
        if (pid := self._read_info()) is None:
            return None
        sandbox_proc = f"/proc/{pid}/root/proc"
        try:
            # Until bwrap has pivoted, its root is the host's (same /proc device).
            if os.stat(sandbox_proc).st_dev == os.stat("/proc").st_dev:
                return None
            # The sandbox's own /proc lists exactly the processes of its PID namespace.
            count = sum(name.isdigit() for name in os.listdir(sandbox_proc))
        except OSError:
            return None
        if count - 1 <= self.max_processes:  # PID 1 is bwrap's reaper, not the command's
            return None
        return f"more than {self.max_processes} processes"

    def stop(self) -> None:
        """SIGKILL the sandbox's PID 1 (the kernel kills its namespace), then the group."""
        self._read_info()
        if self._pidfd is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
        elif self._sandbox_pid is not None and self.proc.poll() is None:
            # No pidfd (old kernel): while bwrap runs, its child's PID is still its own.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self._sandbox_pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def close(self) -> None:
        for fd in (self.info_fd, self._pidfd):
            if fd is not None:
                os.close(fd)
        self.info_fd = self._pidfd = None
        pids_cap.remove(self._pids_group)
        self._pids_group = None

    def _read_info(self) -> int | None:
        if self._sandbox_pid is None and self.info_fd is not None:
            with contextlib.suppress(BlockingIOError):
                while chunk := os.read(self.info_fd, 4096):
                    self._info += chunk
            with contextlib.suppress(ValueError, KeyError, TypeError):
                self._sandbox_pid = int(json.loads(self._info)["child-pid"])
            if self._sandbox_pid is not None and hasattr(os, "pidfd_open"):
                with contextlib.suppress(OSError):
                    self._pidfd = os.pidfd_open(self._sandbox_pid)
        return self._sandbox_pid


class Sandbox(ABC):
    """How commands are started, and the one line an approval card shows about it."""

    def __init__(
        self, workspace: Path, *, env_names: Sequence[str] = (), limits: Limits = Limits()
    ) -> None:
        self.workspace = Path(workspace)
        self.env_names = tuple(env_names)
        self.limits = limits

    @abstractmethod
    def describe(self, access: Access) -> str:
        """Exactly what a command with `access` may touch, for the approval card."""

    @abstractmethod
    def start(
        self, argv: Sequence[str], access: Access, *, timeout_s: float, extra_env: Env = NO_ENV
    ) -> Running:
        """Start `argv` in the workspace; stdout and stderr merged into `proc.stdout`."""

    def environment(self, home: str, extra: Env) -> dict[str, str]:
        """An allow list, never a deny list: a secret under an innocent name would pass."""
        names = set(ENV_ALLOW) | set(self.env_names)
        env = {
            k: v for k, v in os.environ.items() if k in names or k.startswith(ENV_ALLOW_PREFIXES)
        }
        env["PATH"] = safe_path(env.get("PATH", DEFAULT_PATH), self.workspace)
        return {**env, "HOME": home, **FIXED_ENV, **extra}

    def wrap(self, argv: Sequence[str], timeout_s: float, *, count_processes: bool) -> list[str]:
        """`argv` behind a bash that sets the limits (`preexec_fn` is unsafe in threads)."""
        cpu = self.limits.cpu_s or math.ceil(timeout_s * (os.cpu_count() or 1)) + 1
        steps = ["ulimit -c 0", f"ulimit -t {cpu}", f"ulimit -d {self.limits.memory_mb * 1024}"]
        if count_processes:
            # RLIMIT_NPROC counts all the user's threads: what runs now plus the share.
            steps.append(f"ulimit -u {user_threads() + self.limits.max_processes}")
        script = "; ".join(f"{s} 2>/dev/null" for s in steps) + '; exec "$@"'
        return [system_shell(), "-c", script, "gatehouse-limits", *argv]


def _popen(command: list[str], **options: Any) -> subprocess.Popen[bytes]:
    """Output merged into one pipe, no stdin, a process group of its own (for stop())."""
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        **options,
    )


class Unsandboxed(Sandbox):
    """No isolation beyond the environment allow list and ulimits."""

    def describe(self, access: Access) -> str:
        return f"NOT sandboxed · full access as {_user()}"

    def start(
        self, argv: Sequence[str], access: Access, *, timeout_s: float, extra_env: Env = NO_ENV
    ) -> Running:
        # No `ulimit -u`: outside a user namespace a busy desktop would fail every fork.
        command = self.wrap(argv, timeout_s, count_processes=False)
        env = self.environment(os.path.expanduser("~"), extra_env)
        return Running(_popen(command, env=env, cwd=self.workspace))


class Refusing(Unsandboxed):
    """`shell_sandbox = "require"` on a machine without a working bubblewrap."""

    def __init__(self, workspace: Path, reason: str, **options: Any) -> None:
        super().__init__(workspace, **options)
        self.reason = reason

    def describe(self, access: Access) -> str:
        return f"NOT sandboxed · will be refused: the sandbox is required and {self.reason}"

    def start(self, *args: Any, **kwargs: Any) -> Running:
        raise SandboxUnavailable(
            f'run_command refused: shell_sandbox = "require" and {self.reason}. Install bubblewrap '
            "(Debian/Ubuntu: apt install bubblewrap) where user namespaces work, or set "
            'shell_sandbox = "auto" to run commands without a sandbox.'
        )


class Bubblewrap(Sandbox):
    def __init__(
        self,
        workspace: Path,
        *,
        support: Support,
        hide: Iterable[str | os.PathLike[str]] = (),
        show: Iterable[str | os.PathLike[str]] = (),
        **options: Any,
    ) -> None:
        super().__init__(workspace, **options)
        if not support.usable or support.path is None:
            raise SandboxUnavailable(f"bubblewrap is not usable: {support.reason or 'not found'}")
        self.support = support
        self.hide = [Path(p).expanduser() for p in hide]
        self.show = [Path(p).expanduser() for p in show]

    def describe(self, access: Access) -> str:
        ws = "writable" if access.writable else "read-only"
        net = "NETWORK ALLOWED (any host, this machine included)" if access.network else ""
        return f"sandboxed · workspace {ws} · {net or 'no network'}"

    def start(
        self, argv: Sequence[str], access: Access, *, timeout_s: float, extra_env: Env = NO_ENV
    ) -> Running:
        homes = home_folders()
        # HOME: the user's home folder, hidden — an empty, writable, throwaway tmpfs.
        home = homes[0] if homes and homes[0].is_dir() and homes[0] not in SYSTEM_DIRS else "/tmp"
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        group = pids_cap.new_cap(self.limits.max_processes)
        try:
            command = [
                *self.arguments(access, homes, info_fd=write_fd),
                "--",
                *self.wrap(argv, timeout_s, count_processes=True),
            ]
            proc = _popen(
                pids_cap.joining(group, command) if group is not None else command,
                env=self.environment(str(home), extra_env),  # bwrap's is visible as PID 1's
                pass_fds=(write_fd,),
            )
        except BaseException:
            os.close(read_fd)
            pids_cap.remove(group)
            raise
        finally:
            os.close(write_fd)
        return Running(proc, read_fd, self.limits.max_processes, group)

    def arguments(
        self, access: Access, homes: Sequence[Path], *, info_fd: int | None = None
    ) -> list[str]:
        """bwrap's options, mounts in order: later mounts layer over earlier ones."""
        ws = self.workspace.resolve()
        args = [*namespace_arguments(self.support, network=access.network), *BASE_MOUNTS]
        for private in map(Path, ("/tmp", "/var/tmp", "/run")):
            if private.is_dir() and not private.is_symlink():
                args += self._tmpfs(private)
        hidden = self._hidden(homes, ws)
        args += self._masks(*hidden, ws, inside=False)
        shown = [p.resolve() for p in self.show if p.exists()]
        # /etc/resolv.conf often links into /run (systemd-resolved), hidden above.
        resolv = Path("/etc/resolv.conf")
        if access.network and resolv.is_symlink() and resolv.exists():
            shown.append(resolv.resolve())
        for real in shown:
            args += ["--ro-bind", str(real), str(real)]
        args += ["--bind" if access.writable else "--ro-bind", str(ws), str(ws)]
        # What is hidden inside the workspace (a database kept there) goes over it.
        args += [*self._masks(*hidden, ws, inside=True), "--chdir", str(ws)]
        return args + (["--info-fd", str(info_fd)] if info_fd is not None else [])

    def _masks(self, dirs: list[Path], files: list[Path], ws: Path, *, inside: bool) -> list[str]:
        """Mounts over the hidden places inside the workspace, or outside (it itself too)."""
        args: list[str] = []
        for d in dirs:
            if (_within(d, ws) and d != ws) == inside:
                args += self._tmpfs(d)
        for f in files:
            if _within(f, ws) == inside:
                args += ["--ro-bind", "/dev/null", str(f)]
        return args

    def _tmpfs(self, path: Path) -> list[str]:
        size = str(self.limits.tmpfs_mb * 1024 * 1024)
        return [*(["--size", size] if self.support.tmpfs_size else []), "--tmpfs", str(path)]

    def _hidden(self, homes: Sequence[Path], ws: Path) -> tuple[list[Path], list[Path]]:
        """Folders to cover with a tmpfs (outermost first) and files with /dev/null;
        what a hidden folder covers is skipped, except HOME (it must exist, writable)."""
        home = _resolved(homes[0]) if homes else None
        machine = [Path(p) for p in ROOT_ONLY_SECRETS if os.access(p, os.R_OK)]
        found = (_resolved(raw) for raw in [*homes, *self.hide, *machine])
        candidates = dict.fromkeys(p for p in found if p not in SYSTEM_DIRS and p.exists())
        dirs = sorted((p for p in candidates if p.is_dir()), key=lambda p: len(p.parts))

        def covered(path: Path, by: list[Path]) -> bool:
            return (
                path != home
                and not _within(path, ws)
                and any(_within(path, d) and path != d for d in by)
            )

        kept: list[Path] = []
        for d in dirs:
            if not covered(d, kept):
                kept.append(d)
        return kept, [f for f in candidates if not f.is_dir() and not covered(f, kept)]


def namespace_arguments(support: Support, *, network: bool) -> list[str]:
    assert support.path is not None
    args = [support.path, "--unshare-all", "--unshare-user"]
    if support.disable_userns:
        args.append("--disable-userns")  # no nested user namespaces: less kernel to attack
    if network:
        args.append("--share-net")
    # bwrap keeps every capability (in its namespace) when started by root.
    return [*args, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]


def choose_sandbox(
    mode: SandboxMode | str,
    workspace: str | os.PathLike[str],
    *,
    hide: Iterable[str | os.PathLike[str]] = (),
    show: Iterable[str | os.PathLike[str]] = (),
    env_names: Sequence[str] = (),
    limits: Limits = Limits(),
    support: Support | None = None,
) -> Sandbox:
    """Bubblewrap if it works here (unless `off`), else refusing for `require`, else none."""
    if mode not in SANDBOX_MODES:
        raise ValueError(f"shell_sandbox must be one of {', '.join(SANDBOX_MODES)}, not {mode!r}")
    ws = Path(workspace).expanduser().absolute()
    found = None if mode == "off" else (support or detect_bubblewrap())
    if found is not None and found.usable:
        return Bubblewrap(
            ws, support=found, hide=hide, show=show, env_names=env_names, limits=limits
        )
    if found is not None and mode == "require":
        reason = found.reason or "bubblewrap was not found"
        return Refusing(ws, reason, env_names=env_names, limits=limits)
    return Unsandboxed(ws, env_names=env_names, limits=limits)


def sandbox_status(mode: SandboxMode | str = "auto", support: Support | None = None) -> str:
    """One line for the session info and the start-up log."""
    if mode == "off":
        return 'NOT sandboxed: shell_sandbox = "off"; commands run with full access as ' + _user()
    found = support or detect_bubblewrap()
    if found.usable:
        return f"sandboxed: bubblewrap {found.version} (own namespaces, read-only system, no network unless granted)"
    if mode == "require":
        return f'commands refused: shell_sandbox = "require" and {found.reason}'
    return f"NOT sandboxed: {found.reason}; commands run with full access as {_user()}"


_announced: set[str] = set()


def announce(mode: SandboxMode | str = "auto") -> str:
    """`sandbox_status`, logged as a warning the first time it is not sandboxed."""
    status = sandbox_status(mode)
    if not status.startswith("sandboxed") and status not in _announced:
        _announced.add(status)
        log.warning("run_command: %s", status)
    return status


@functools.cache
def detect_bubblewrap(path: str | None = None) -> Support:
    """bwrap on PATH and a trial run with the options Gatehouse uses."""
    found = path or shutil.which("bwrap")
    if not found:
        return Support(None, reason="bubblewrap (bwrap) is not installed")
    entry = disk_cache.read_entries(PROBE_FILE).get(found)
    with contextlib.suppress(TypeError, KeyError):  # the key worked out only for an entry
        if entry and entry["key"] == _probe_key(found):
            return Support(found, **entry["support"])
    run = functools.partial(
        subprocess.run,
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
        env={"PATH": DEFAULT_PATH},
    )
    try:
        version, helptext = run([found, "--version"]), run([found, "--help"])
    except (OSError, subprocess.SubprocessError) as exc:
        return Support(found, reason=f"{found} cannot be run: {exc}")
    support = Support(
        found,
        version=version.stdout.strip().removeprefix("bubblewrap ").strip(),
        disable_userns="--disable-userns" in helptext.stdout,
        tmpfs_size="--size" in helptext.stdout,
    )
    true = shutil.which("true", path=DEFAULT_PATH) or "/bin/true"
    argv = [*namespace_arguments(support, network=False), *BASE_MOUNTS, "--tmpfs", "/tmp", "--"]
    try:
        trial = run([*argv, true])
    except (OSError, subprocess.SubprocessError) as exc:
        return dataclasses.replace(support, reason=f"bubblewrap trial run failed: {exc}")
    if trial.returncode != 0:
        why = (trial.stderr.strip().splitlines() or [f"exit code {trial.returncode}"])[-1]
        reason = f"bubblewrap cannot create a sandbox here ({why})"
        return dataclasses.replace(support, reason=reason)
    if disk_cache.cache_dir() is not None and (key := _probe_key(found)) is not None:
        kept = {k: v for k, v in dataclasses.asdict(support).items() if k not in ("path", "reason")}
        disk_cache.write_entries(PROBE_FILE, {found: {"key": key, "support": kept}}, keep=8)
    return support


def _probe_key(binary: str) -> str | None:
    """The binary (path, inode, size, mtime), kernel, user and sysctls a probe depended on."""
    try:
        st = os.stat(binary)
    except OSError:
        return None
    where = [os.path.realpath(binary), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    parts: list[Any] = [PROBE_VERSION, *where, os.uname().release, os.getuid()]
    for name in PROBE_SYSCTLS:
        try:
            parts.append(Path(name).read_text().strip())
        except OSError:
            parts.append(None)
    return json.dumps(parts)


def home_folders() -> list[Path]:
    """The user's home ($HOME, the password database), /home and /root."""
    candidates = [os.environ.get("HOME", "")]
    if pwd is not None:
        with contextlib.suppress(KeyError):
            candidates.append(pwd.getpwuid(os.getuid()).pw_dir)
    found = [*candidates, "/home", "/root"]
    return list(dict.fromkeys(Path(c) for c in found if c and os.path.isabs(c)))


def database_paths(
    db: str | os.PathLike[str] | None, workspace: str | os.PathLike[str]
) -> list[Path]:
    """What hides a SQLite database: its folder when its own (`.gatehouse/`, or any
    folder outside the workspace), else the file and its journals."""
    if not db or str(db).startswith(("postgres://", "postgresql://")):
        return []
    path = Path(db).expanduser().absolute()
    folder = path.parent
    ws = Path(workspace).expanduser().absolute()
    own = folder.name == ".gatehouse" or not _within(folder, ws)
    if folder not in SYSTEM_DIRS and not _within(ws, folder) and own:
        return [folder]
    return [path.with_name(path.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")]


def safe_path(value: str, workspace: Path) -> str:
    """PATH without relative entries or workspace folders: `ls` must be the system's."""
    ws = workspace.expanduser().absolute()
    inside = (ws, ws.resolve())
    kept = [
        entry
        for entry in value.split(os.pathsep)
        if os.path.isabs(entry)
        and not any(_within(Path(os.path.realpath(entry)), w) for w in inside)
    ]
    return os.pathsep.join(dict.fromkeys(kept)) or DEFAULT_PATH


def system_shell() -> str:
    """bash from the system folders, never the home's (hidden) or the workspace's."""
    found = shutil.which("bash", path=DEFAULT_PATH) or shutil.which("sh", path=DEFAULT_PATH)
    return found or "/bin/sh"


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path.expanduser()))  # a symlink loop: a path that never exists


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def user_threads() -> int:
    """The user's threads on the machine (what RLIMIT_NPROC counts), at most once a second."""
    return _user_threads(int(time.monotonic()))


@functools.lru_cache(maxsize=1)
def _user_threads(_second: int) -> int:
    uid, total = str(os.getuid()), 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as f:
                fields = dict(
                    line.split(":", 1) for line in f if line.startswith(("Uid:", "Threads:"))
                )
        except OSError:
            continue
        if fields.get("Uid", "").split()[:1] == [uid]:
            total += int(fields.get("Threads", "1").strip() or 1)
    return total


def _user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except (KeyError, AttributeError):
        return os.environ.get("USERNAME") or os.environ.get("USER") or "the Gatehouse user"

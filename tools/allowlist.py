"""Which commands `run_command` runs without asking, and how they stay what they look like.

Runs freely: one simple command with an allow-listed prefix, no argument reaching
outside the workspace (`ls ..`, `~`, a glob matching a FIFO), no never-ending form
(`tail -f`), no option that writes or runs a program (`--output`, `--ext-diff`).
Looking harmless is not enough (`git status` runs the `core.fsmonitor` an untrusted
`.git/config` names), so a listed command runs `hardened`: read-only, no network, git
without the repository's drivers and refused when its config points outside.
"""

from __future__ import annotations

import glob
import io
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from gatehouse.tools.sandbox import DEFAULT_PATH, safe_path
from gatehouse.tools.workspace import PathError, Workspace

# Characters that make a command more than one simple command, or expand to one.
SHELL_SYNTAX = set(";&|<>()`$\n\r\\{}!")
GLOB_CHARS = set("*?[")
# Options that write files or run programs; a prefix catches abbreviations (`--ext`).
WRITING_OPTIONS = (
    "--output",
    "--ext",
    "--textc",
    "--exec",
    "-exec",
    "--upload-pack",
    "--config-env",
)
# git subcommands that diff, and so would run external diff and textconv drivers.
GIT_DIFFING = frozenset({"diff", "log", "show", "whatchanged"})
GIT_SAFE_FLAGS = ("--no-ext-diff", "--no-textconv")
# Command-line scope: wins over the repository's config (and anything it includes).
GIT_SAFE_CONFIG = {
    "core.fsmonitor": "false",
    "core.hooksPath": "/dev/null",
    "core.pager": "cat",
    "core.editor": ":",  # ":" is git's "no editor"
    "sequence.editor": ":",
    "core.sshCommand": "ssh",
    "core.askPass": "",
    "core.attributesFile": "/dev/null",
    "credential.helper": "",  # an empty value clears the list of helpers
    "protocol.allow": "never",  # no transport: no ssh, no remote helpers
    "gpg.program": "gpg",
    "gpg.ssh.program": "ssh-keygen",
    "gpg.x509.program": "gpgsm",
    "gpg.openpgp.program": "gpg",
    "gpg.ssh.allowedSignersFile": "/dev/null",  # read by log --show-signature
    "gpg.ssh.revocationFile": "/dev/null",
    "gpg.ssh.defaultKeyCommand": "",
    "mailmap.file": "/dev/null",  # a path the repository names: read, and shown by `git log`
    "mailmap.blob": "",
    "diff.orderFile": "/dev/null",
    "log.showSignature": "false",
    "safe.bareRepository": "explicit",  # a bare repository planted in the workspace is ignored
    "diff.ignoreSubmodules": "all",  # a submodule's own config is never read
    "submodule.recurse": "false",
    "status.submoduleSummary": "false",
    "gc.auto": "0",
    "maintenance.auto": "false",
}
GIT_SAFE_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",  # status does not rewrite the index (and so runs no hook)
    "GIT_PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_SEQUENCE_EDITOR": ":",
    "GIT_TERMINAL_PROMPT": "0",
}
_DRIVER_KEY = re.compile(r"^(filter|diff)\.(.+)\.(clean|smudge|process|required|textconv|command)$")
# What a driver the repository names becomes.
_FILTER_OFF = {"clean": "", "smudge": "", "process": "", "required": "false"}
_DIFF_OFF = {"textconv": "cat", "command": "false"}
GIT_CONFIG_TIMEOUT_S = 5.0


class GitConfigUnreadable(RuntimeError):
    """Listing the repository's config failed."""


class GitRepositoryRefused(RuntimeError):
    """The repository points git outside the workspace (core.worktree ...)."""


def listed(command: str, allow: Sequence[str]) -> list[str] | None:
    """The allow-list entry (as tokens) a simple `command` starts with, from text alone."""
    if not command.strip() or any(ch in SHELL_SYNTAX for ch in command):
        return None
    try:
        tokens = shlex.split(command, comments=False, posix=True)
    except ValueError:  # unbalanced quotes
        return None
    return next((p for p in map(shlex.split, allow) if p and tokens[: len(p)] == p), None)


def allowed_by_list(command: str, allow: Sequence[str], ws: Workspace) -> bool:
    """A listed simple command whose arguments stay in the workspace, that ends."""
    prefix = listed(command, allow)
    if prefix is None:
        return False
    tokens = shlex.split(command, comments=False, posix=True)
    return (
        not never_ending(tokens)
        and not _risky_git_option(tokens)
        and all(_harmless_arg(t, ws) for t in tokens[len(prefix) :])
    )


def never_ending(tokens: Sequence[str]) -> bool:
    """Forms that wait for more input forever: `tail -f`, `-F`, `--follow`, `-5f`, `+1f`."""
    if not tokens or os.path.basename(tokens[0]) != "tail":
        return False
    for t in tokens[1:]:
        if t == "--":
            break
        if t.startswith("--"):
            if t.startswith(("--f", "--retry", "--pid")):  # any abbreviation of --follow
                return True
        elif t.startswith(("-", "+")) and ("f" in t or "F" in t):
            return True
    return False


def _risky_git_option(tokens: Sequence[str]) -> bool:
    """`-c` wins over the hardening; `git status -v` diffs through textconv drivers."""
    if len(tokens) < 2 or os.path.basename(tokens[0]) != "git":
        return False
    if "-c" in tokens:
        return True
    return tokens[1] == "status" and any(
        (t.startswith("--") and len(t) > 3 and "--verbose".startswith(t.split("=")[0]))
        or (t.startswith("-") and not t.startswith("--") and "v" in t)
        for t in tokens[2:]
    )


def _harmless_arg(token: str, ws: Workspace) -> bool:
    # Writes a file, runs a program, or the shell would expand ~ to the home folder.
    if token.startswith(WRITING_OPTIONS) or token.startswith("~") or "=~" in token or ":~" in token:
        return False
    if token.startswith("-"):
        if "=" not in token:
            return True  # a plain flag such as -la
        token = token.split("=", 1)[1]
    if any(seg.startswith(".") and GLOB_CHARS & set(seg) for seg in token.split("/")):
        return False  # `.*` may match `..` in older bash
    try:
        ws.resolve(token)  # absolute paths, `..` and symlinks that lead out are refused
    except PathError:
        return False
    if GLOB_CHARS & set(token):
        # Each match must be a plain file or folder inside (a FIFO would block `cat *`):
        # `resolve` refuses the rest.
        for match in glob.glob(token, root_dir=ws.root):
            try:
                ws.resolve(match)
            except (PathError, OSError):
                return False
    return True


def harden(command: str, allow: Sequence[str], ws: Workspace) -> tuple[str, dict[str, str]]:
    """The command as it runs and its extra environment: a listed git command's overrides;
    any other command as it is (as approved)."""
    if listed(command, allow) is None:
        return command, {}
    tokens = shlex.split(command, comments=False, posix=True)
    if os.path.basename(tokens[0]) != "git":
        return command, {}
    # Never look above the workspace for a repository (the ceiling itself is not searched).
    env = {**GIT_SAFE_ENV, "GIT_CEILING_DIRECTORIES": str(ws.root.parent)}
    overrides = {**GIT_SAFE_CONFIG, **_driver_overrides(ws, env)}
    env["GIT_CONFIG_COUNT"] = str(len(overrides))
    for i, (key, value) in enumerate(overrides.items()):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    if len(tokens) > 1 and tokens[1] in GIT_DIFFING:
        # The raw text after the first two words, as the shell will read it.
        lexer = shlex.shlex(stream := io.StringIO(command), posix=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        for _ in range(2):
            lexer.get_token()
        rest = command[stream.tell() :]
        command = f"{shlex.join(tokens[:2])} {' '.join(GIT_SAFE_FLAGS)} {rest}".rstrip()
    return command, env


def _driver_overrides(ws: Workspace, env: dict[str, str]) -> dict[str, str]:
    """Empty every driver the repository's config defines (its names are its choice)."""
    path = safe_path(os.environ.get("PATH", DEFAULT_PATH), ws.root)
    git = shutil.which("git", path=path)
    if git is None:
        return {}

    def git_out(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [git, *args],
            cwd=ws.root,
            env={"PATH": path, "HOME": "/nonexistent", **env},
            capture_output=True,
            text=True,
            timeout=GIT_CONFIG_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )

    try:
        _check_repository(ws, git_out("rev-parse", "--absolute-git-dir", "--git-common-dir"))
        listing = git_out("config", "--show-origin", "--name-only", "-z", "--list")
    except (OSError, subprocess.SubprocessError) as exc:
        # Fail closed: without the list, a filter the repository defines would run.
        raise GitConfigUnreadable(
            f"cannot read the repository's git config to run git safely: {exc}"
        ) from exc
    fields = listing.stdout.split("\0")
    # A config git cannot parse (exit 128) stops the command itself just as early.
    overrides: dict[str, str] = {}
    for origin, name in zip(fields[0::2], fields[1::2], strict=False):
        included = origin.removeprefix("file:")
        if included != origin and not _inside(ws.root / included, ws.root):
            raise GitRepositoryRefused(
                f"refused: the repository's git config includes {included}, outside the "
                "workspace; allow-listed git commands run only on a repository configured inside it"
            )
        key = name.strip()
        if key.lower() == "core.worktree":
            raise GitRepositoryRefused(
                "refused: the repository sets core.worktree, which points git at files outside the "
                "repository (an allow-listed `git diff` would show them); remove it with "
                "`git config --unset core.worktree` to use allow-listed git commands"
            )
        if key == "diff.external":
            overrides[key] = "false"
        elif m := _DRIVER_KEY.match(key):
            section, driver, kind = m.groups()
            if section == "filter":
                overrides.update({f"filter.{driver}.{k}": v for k, v in _FILTER_OFF.items()})
            elif kind in _DIFF_OFF:
                overrides[f"diff.{driver}.{kind}"] = _DIFF_OFF[kind]
    return overrides


def _check_repository(ws: Workspace, found: subprocess.CompletedProcess[str]) -> None:
    """Refuse a repository whose git, common folder or object alternates lie outside."""
    lines = found.stdout.splitlines()
    if found.returncode != 0 or len(lines) < 2:
        return  # no repository: the git command itself says so
    git_dir, common = Path(lines[0]), ws.root / lines[1]
    for what, folder in (("git folder", git_dir), ("common git folder", common)):
        if not _inside(folder, ws.root):
            raise GitRepositoryRefused(
                f"refused: the repository's {what} is {folder.resolve()}, outside the workspace; "
                "allow-listed git commands run only on a repository inside it"
            )
    objects = common.resolve() / "objects"
    try:
        alternates = (objects / "info" / "alternates").read_text(errors="replace").splitlines()
    except OSError:
        alternates = []
    for line in alternates:
        entry = line.strip()
        if entry and not entry.startswith("#") and not _inside(objects / entry, ws.root):
            raise GitRepositoryRefused(
                f"refused: the repository borrows objects from {entry} (objects/info/alternates), outside "
                "the workspace; allow-listed git commands run only on a repository inside it"
            )


def _inside(path: Path, root: Path) -> bool:
    real = Path(os.path.realpath(path))
    return real == root or root in real.parents

"""`run_command`: a shell command in the workspace, streamed line by line while it runs.

It asks by default. The configured allow list (`ls`, `git status` …) lets a command
run freely only when the *parsed* command is one simple command with an allowed
prefix: no `;`, `&&`, pipes, redirections, substitutions or newlines, and no argument
that reaches outside the workspace (`cat /etc/passwd`, `ls ..`, `cat ~/.ssh/...`).
Anything else asks, as the tool's default.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Annotated, Any

from langchain_core.tools import BaseTool
from pydantic import Field

from graph.protocol.tools import stream_output
from tools.base import gatehouse_tool
from tools.workspace import PathError, Workspace

OUTPUT_CAP_CHARS = 30_000
STREAM_LINE_CHARS = 2_000
EXIT_GRACE_S = 0.3
# Environment variables whose names say they hold a secret are not passed on.
SECRET_NAME = re.compile(
    r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|DSN|DATABASE_URL)",
    re.IGNORECASE,
)
# Values that are secrets whatever the variable is called: a URL with a password,
# well-known API token prefixes.
SECRET_VALUE = re.compile(r"://[^/\s:@]+:[^/\s@]+@|^(sk-|sk_live_|ghp_|gho_|ghs_|github_pat_|glpat-|xox[abp]-|AKIA)")
# Characters that make a command more than one simple command, or expand to one.
SHELL_SYNTAX = set(";&|<>()`$\n\r\\{}!")
GLOB_CHARS = set("*?[")
# Options of otherwise read-only commands that write files or run programs.
WRITING_OPTIONS = ("--output", "--ext-diff", "--exec", "-exec", "--upload-pack", "--config-env")


def clean_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The parent environment minus anything that looks like a secret, plus pager-free git."""
    source = dict(os.environ if env is None else env)
    kept = {k: v for k, v in source.items() if not SECRET_NAME.search(k) and not SECRET_VALUE.search(v)}
    kept.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "TERM": "dumb"})
    return kept


def allowed_by_list(command: str, allow: Sequence[str], ws: Workspace) -> bool:
    """True when `command` is one simple command starting with an allowed prefix and
    every argument stays inside the workspace. Decided on the parsed command."""
    if not command.strip() or any(ch in SHELL_SYNTAX for ch in command):
        return False
    try:
        tokens = shlex.split(command, comments=False, posix=True)
    except ValueError:  # unbalanced quotes
        return False
    if not tokens:
        return False
    for entry in allow:
        prefix = shlex.split(entry)
        if prefix and tokens[: len(prefix)] == prefix:
            return all(_harmless_arg(t, ws) for t in tokens[len(prefix) :])
    return False


def _harmless_arg(token: str, ws: Workspace) -> bool:
    if token.startswith(WRITING_OPTIONS) or token.startswith("~") or "=~" in token or ":~" in token:
        return False  # writes a file, or the shell would expand ~ to the home folder
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
    return True


def make_shell_tool(
    ws: Workspace,
    *,
    allow: Sequence[str] = (),
    timeout_s: float = 60.0,
    output_cap: int = OUTPUT_CAP_CHARS,
) -> BaseTool:
    shell = shutil.which("bash") or "/bin/sh"
    allow = list(allow)

    def preview(args: dict[str, Any]) -> str:
        return f"$ {args.get('command', '')}\n(runs in {ws.root}, timeout {timeout_s:g}s, secrets removed from the environment)"

    @gatehouse_tool(
        risk="execute",
        match_arg="command",
        preview=preview,
        auto_allow=lambda a: allowed_by_list(str(a.get("command", "")), allow, ws),
        compound=lambda a: any(ch in SHELL_SYNTAX for ch in str(a.get("command", ""))),
    )
    def run_command(
        command: Annotated[str, Field(description="A shell command line, run with bash in the workspace folder")],
    ) -> str:
        """Run a shell command in the workspace folder and return its output and exit code.

        stdout and stderr are merged; output streams while the command runs. There
        is no stdin, a timeout, an output cap, and API keys / tokens are removed
        from the environment. Most commands wait for a person's approval.
        """
        if not command.strip():
            raise ValueError("command is empty")
        return _run(shell, command, ws, timeout_s, output_cap)

    return run_command


def _run(shell: str, command: str, ws: Workspace, timeout_s: float, cap: int) -> str:
    proc = subprocess.Popen(
        [shell, "-c", command],
        cwd=ws.root,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # one process group: a timeout kills its children too
    )
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    kept: list[str] = []
    kept_chars, dropped_chars = 0, 0
    pending = b""
    deadline = time.monotonic() + timeout_s
    timed_out = False
    exited_at: float | None = None

    def take(line: str) -> None:
        nonlocal kept_chars, dropped_chars
        room = cap - kept_chars
        if len(line) > room:
            dropped_chars += len(line) - max(room, 0)
            line = line[: max(room, 0)]
            if not line:
                return
        kept.append(line)
        kept_chars += len(line)
        stream_output(line.rstrip("\n")[:STREAM_LINE_CHARS])

    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > EXIT_GRACE_S:
                break  # the command ended; a background child still holds the pipe
            if not sel.select(timeout=min(0.1, deadline - now)):
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:  # every writer closed the pipe; the command may still run
                try:
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                take(raw.decode(errors="replace") + "\n")
            if len(pending) > STREAM_LINE_CHARS * 4:  # a huge line with no newline yet
                take(pending.decode(errors="replace"))
                pending = b""
        if pending:
            take(pending.decode(errors="replace"))
    finally:
        sel.close()
        # Stop whatever is left of the group: a timed-out command, background children.
        _kill_group(proc)
        code = proc.wait()
        proc.stdout.close()
    out = "".join(kept)
    if dropped_chars:
        out += f"\n… ({dropped_chars} more characters of output not shown)"
    if timed_out:
        status = f"[timed out after {timeout_s:g}s; the command was stopped]"
    else:
        status = f"[exit code {code}]"
    return f"{out.rstrip()}\n{status}" if out.strip() else status


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)

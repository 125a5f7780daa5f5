"""`run_command`: a shell command in the workspace, streamed line by line while it runs.

Where it runs, and what it may touch, is tools/sandbox.py's business (bubblewrap:
workspace writable, no network unless the call asks for it; or, said on every card,
not sandboxed). Which commands run without asking, and how they are kept harmless,
is tools/allowlist.py's. It asks by default; a call with `network=true` always asks
(glob rules and pattern grants never cover it), and policy may deny it with a rule
on the `network` argument.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain_core.tools import BaseTool
from pydantic import Field

from graph.protocol.tools import stop_requested, stream_output
from tools.allowlist import SHELL_SYNTAX, allowed_by_list, harden, listed
from tools.base import gatehouse_tool
from tools.sandbox import Access, Sandbox, choose_sandbox, system_shell
from tools.workspace import Workspace

__all__ = ["allowed_by_list", "make_shell_tool"]

OUTPUT_CAP_CHARS = 30_000
STREAM_LINE_CHARS = 2_000
EXIT_GRACE_S = 0.3
# How often the loop looks at the command when it prints nothing (exit, limits).
POLL_S = 0.05


def make_shell_tool(
    ws: Workspace,
    *,
    allow: Sequence[str] = (),
    timeout_s: float = 60.0,
    output_cap: int = OUTPUT_CAP_CHARS,
    sandbox: Sandbox | None = None,
) -> BaseTool:
    shell = system_shell()
    allow = list(allow)
    box = sandbox or choose_sandbox("auto", ws.root)

    def access(args: Mapping[str, Any]) -> Access:
        # A listed command runs with the workspace read-only, whoever approved it.
        listed_command = listed(str(args.get("command", "")), allow) is not None
        return Access(writable=not listed_command, network=bool(args.get("network")))

    def describe(args: dict[str, Any]) -> str:
        return box.describe(access(args))

    def preview(args: dict[str, Any]) -> str:
        return f"$ {args.get('command', '')}\n({describe(args)}; runs in {ws.root}, timeout {timeout_s:g}s)"

    @gatehouse_tool(
        risk="execute",
        match_arg="command",
        preview=preview,
        describe=describe,
        auto_allow=lambda a: (
            not a.get("network") and allowed_by_list(str(a.get("command", "")), allow, ws)
        ),
        # The network is a choice of its own: no glob rule or pattern grant covers it.
        compound=lambda a: (
            bool(a.get("network")) or any(ch in SHELL_SYNTAX for ch in str(a.get("command", "")))
        ),
    )
    def run_command(
        command: Annotated[
            str, Field(description="A shell command line, run with bash in the workspace folder")
        ],
        network: Annotated[
            bool,
            Field(
                description="Let this command use the network; only when it needs it (a person must approve)"
            ),
        ] = False,
    ) -> str:
        """Run a shell command in the workspace folder and return its output and exit code.

        stdout and stderr are merged; output streams while the command runs. There
        is no stdin, a timeout, an output cap, and only a few environment variables
        (PATH, HOME, LANG ...). In the sandbox only the workspace is writable, the
        home folder is empty and there is no network unless `network` is true. Most
        commands wait for a person's approval.
        """
        if not command.strip():
            raise ValueError("command is empty")
        hardened = harden(command, allow, ws)
        return _run(
            box,
            [shell, "-c", hardened.command if hardened else command],
            access({"command": command, "network": network}),
            timeout_s,
            output_cap,
            hardened.env if hardened else {},
        )

    return run_command


def _run(
    box: Sandbox,
    argv: list[str],
    access: Access,
    timeout_s: float,
    cap: int,
    extra_env: Mapping[str, str],
) -> str:
    running = box.start(argv, access, timeout_s=timeout_s, extra_env=extra_env)
    proc = running.proc
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
    stopped: str | None = None
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
        eof = False
        while True:
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if proc.poll() is not None:
                if eof:
                    break
                exited_at = exited_at or now
                if now - exited_at > EXIT_GRACE_S:
                    break  # the command ended; a background child still holds the pipe
            stopped = running.over_limit() or (
                "stopped by the person" if stop_requested() else None
            )
            if stopped:
                break
            wait = min(POLL_S, deadline - now)
            if eof:  # every writer closed the pipe; the command may still run
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=wait)
                continue
            if not sel.select(timeout=wait):
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                eof = True
                continue
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
        # Stop whatever is left: a timed-out command, background children, the sandbox.
        running.stop()
        code = proc.wait()
        proc.stdout.close()
        running.close()
    out = "".join(kept)
    if dropped_chars:
        out += f"\n… ({dropped_chars} more characters of output not shown)"
    if timed_out:
        status = f"[timed out after {timeout_s:g}s; the command was stopped]"
    elif stopped:
        status = f"[stopped: {stopped}]"
    else:
        status = f"[exit code {code}]"
    return f"{out.rstrip()}\n{status}" if out.strip() else status

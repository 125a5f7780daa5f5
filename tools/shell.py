"""`run_command`: a shell command in the workspace, streamed line by line. Where it runs
is tools/sandbox.py's business, what runs unasked tools/allowlist.py's; `network=true`
always asks (no glob rule or pattern grant covers it).
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain_core.tools import BaseTool
from pydantic import Field

from gatehouse.graph.protocol.tools import stop_requested, stream_output
from gatehouse.tools.allowlist import SHELL_SYNTAX, allowed_by_list, harden, listed
from gatehouse.tools.base import gatehouse_tool
from gatehouse.tools.sandbox import Access, Running, Sandbox, choose_sandbox, system_shell
from gatehouse.tools.workspace import Workspace

OUTPUT_CAP_CHARS = 30_000
STREAM_LINE_CHARS = 2_000
EXIT_GRACE_S = 0.3
# How often the loop looks at the command when it prints nothing (exit, limits).
POLL_S = 0.05
TIMED_OUT = "timed out"


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
        line, env = harden(command, allow, ws)
        running = box.start(
            [shell, "-c", line],
            access({"command": command, "network": network}),
            timeout_s=timeout_s,
            extra_env=env,
        )
        kept = _Kept(output_cap)
        try:
            cut_short = _pump(running, kept, time.monotonic() + timeout_s)
        finally:
            # Stop whatever is left: a timed-out command, background children, the sandbox.
            running.stop()
            code = running.proc.wait()
            assert running.proc.stdout is not None
            running.proc.stdout.close()
            running.close()
        if cut_short == TIMED_OUT:
            status = f"[timed out after {timeout_s:g}s; the command was stopped]"
        else:
            status = f"[stopped: {cut_short}]" if cut_short else f"[exit code {code}]"
        out = kept.text()
        return f"{out.rstrip()}\n{status}" if out.strip() else status

    return run_command


class _Kept:
    """The output the model gets (at most `cap` characters), each line streamed as it comes."""

    def __init__(self, cap: int) -> None:
        self.cap, self.parts, self.chars, self.dropped = cap, list[str](), 0, 0

    def take(self, line: str) -> None:
        room = max(self.cap - self.chars, 0)
        self.dropped += max(len(line) - room, 0)
        if line := line[:room]:
            self.parts.append(line)
            self.chars += len(line)
            stream_output(line.rstrip("\n")[:STREAM_LINE_CHARS])

    def text(self) -> str:
        out = "".join(self.parts)
        if self.dropped:
            out += f"\n… ({self.dropped} more characters of output not shown)"
        return out


def _pump(running: Running, kept: _Kept, deadline: float) -> str | None:
    """Read the output into `kept` until the command ends; why it was cut short, or None."""
    proc = running.proc
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    poller = select.poll()  # not select(): a busy server's fd numbers pass 1024
    poller.register(fd, select.POLLIN)
    pending, eof, exited_at = b"", False, None
    while True:
        now = time.monotonic()
        if now >= deadline:
            cut_short: str | None = TIMED_OUT
            break
        if proc.poll() is not None:
            exited_at = exited_at or now
            if eof or now - exited_at > EXIT_GRACE_S:
                cut_short = None
                break  # ended; past the grace, a background child still holds the pipe
        cut_short = running.over_limit() or ("stopped by the person" if stop_requested() else None)
        if cut_short:
            break
        wait = min(POLL_S, deadline - now)
        if eof:  # every writer closed the pipe; the command may still run
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=wait)
            continue
        if not poller.poll(wait * 1000):
            continue
        with contextlib.suppress(BlockingIOError):
            chunk = os.read(fd, 65536)
            eof = chunk == b""
            pending = _lines(pending + chunk, kept)
    if pending:
        kept.take(pending.decode(errors="replace"))
    return cut_short


def _lines(pending: bytes, kept: _Kept) -> bytes:
    """Hand `kept` each whole line of `pending`; the rest (unless huge) is returned."""
    *lines, rest = pending.split(b"\n")
    for raw in lines:
        kept.take(raw.decode(errors="replace") + "\n")
    if len(rest) > STREAM_LINE_CHARS * 4:
        kept.take(rest.decode(errors="replace"))
        return b""
    return rest

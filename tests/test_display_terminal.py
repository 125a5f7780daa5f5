"""What the person sees in the terminal is what runs: escape sequences, carriage
returns and bidi overrides in a call, a preview or a tool's output are shown
escaped, never obeyed by the terminal.

The output of the real console script is fed to a terminal emulator (pyte) and the
assertions read its screen, as a person would: a `run_command` whose text hides
`rm -rf ./*` behind `ESC[2K CR $ ls -la` must show the whole command; an OSC 52
(clipboard write) in a file's content must not reach the terminal; rich markup in
tool text stays literal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pyte
import pytest

from gatehouse.graph.protocol.display import visible
from tests.support import terminal

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(sys.platform == "win32", reason="needs a pty"),
]

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "gatehouse"
COLS, ROWS = 160, 60
# Clears the line, returns the cursor and prints a harmless command over the real one.
HIDDEN = "rm -rf ./* #\x1b[2K\r$ ls -la"
OSC52 = "\x1b]52;c;cm0gLXJmIH4K\x07"


def base_cmd() -> list[str]:
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "gatehouse.ui.term.cli"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GATEHOUSE_"))}
    e.update(
        GATEHOUSE_DB=str(tmp_path / "gh.db"),
        GATEHOUSE_WORKSPACE=str(tmp_path / "ws"),
        PYTHONPATH=str(ROOT),
        TERM="xterm-256color",
        COLUMNS=str(COLS),
        LINES=str(ROWS),
        PROMPT_TOOLKIT_NO_CPR="1",
    )
    for name in ("NO_COLOR", "EDITOR", "VISUAL"):
        e.pop(name, None)
    (tmp_path / "ws").mkdir()
    return e


def gh(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*base_cmd(), *args], env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=60
    )


def on_screen(raw: str) -> list[str]:
    """The lines a terminal shows after printing `raw`."""
    screen = pyte.Screen(COLS, ROWS)
    screen.set_mode(pyte.modes.LNM)  # a bare \n starts a new line, as a tty's onlcr does
    pyte.Stream(screen).feed(raw)
    return [line.rstrip() for line in screen.display]


def in_tty(env: dict[str, str], *args: str) -> str:
    """Everything the command writes to a real pseudo-terminal (colours included)."""
    cmd = base_cmd()
    child = terminal.spawn(
        cmd[0],
        [*cmd[1:], *args],
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=60,
        dimensions=(ROWS, COLS),
    )
    child.expect(pexpect.EOF)
    return child.before


def test_visible_escapes_what_hides_or_moves_text_and_keeps_layout() -> None:
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("line\r\nnext") == "line\nnext"
    assert visible(HIDDEN) == "rm -rf ./* #\\x1b[2K\\x0d$ ls -la"
    assert visible(OSC52) == "\\x1b]52;c;cm0gLXJmIH4K\\x07"
    assert visible("\x1bP1$r\x1b\\") == "\\x1bP1$r\\x1b\\"  # DCS
    assert visible("\x9b2J") == "\\x9b2J"  # C1 CSI
    assert visible("ok\x08\x08no") == "ok\\x08\\x08no"
    assert visible("\u202eexe.txt\u202c") == "\\u202eexe.txt\\u202c"
    assert visible("a\u2066b\u2069\u200e\u200f") == "a\\u2066b\\u2069\\u200e\\u200f"
    assert visible("ad\u200bmin\ufeff\u2060") == "ad\\u200bmin\\ufeff\\u2060"
    assert visible("tag\U000e0041\U000e0042") == "tag\\U000e0041\\U000e0042"
    # What draws as itself stays: accents, CJK, emoji (a joiner inside an emoji too).
    assert visible("déjà vu 中文 👩\u200d💻 ✓") == "déjà vu 中文 👩\u200d💻 ✓"
    assert visible("x\u200dy") == "x\\u200dy"


def test_every_control_and_format_character_is_escaped() -> None:
    """The fast scan's list of characters against this Python's Unicode tables."""
    import unicodedata

    missed = [
        hex(c)
        for c in range(0x110000)
        if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp", "Cs")
        and chr(c) not in "\n\t"
        and visible(chr(c)) == chr(c)
    ]
    assert missed == []


@pytest.mark.slow
def test_pending_and_show_print_a_hidden_command_escaped_on_a_real_terminal(
    env: dict[str, str], tmp_path: Path
) -> None:
    sent = gh(env, "send", "--json", f"run: {HIDDEN} [red]not red[/red] \u202eexe.txt")
    assert sent.returncode == 3, sent.stderr
    thread_id = json.loads(sent.stdout)["thread_id"]
    for args in (("pending",), ("show", thread_id)):
        raw = in_tty(env, *args)
        assert "\x1b[2K" not in raw and "\r$ ls" not in raw  # never sent to the terminal as codes
        lines = on_screen(raw)
        text = "\n".join(lines)
        # The card's command as the emulator shows it: all of it, codes spelled out.
        assert "$ rm -rf ./* #\\x1b[2K\\x0d$ ls -la [red]not red[/red] \\u202eexe.txt" in text, text
        assert not any(line.strip().lstrip("│ ").startswith("$ ls -la") for line in lines), text
        # The request id the decision commands must name is on the card.
        assert "request " in text and "--interrupt-id" in text
    # Piped (a log, `| less`): the same text, no codes either.
    piped = gh(env, "pending").stdout
    assert "\x1b" not in piped and "\r" not in piped
    assert "$ rm -rf ./* #\\x1b[2K\\x0d$ ls -la" in piped
    # --json: the exact arguments once parsed, and no character a terminal would act on.
    raw_json = gh(env, "pending", "--json").stdout
    assert "\x1b" not in raw_json and "\u202e" not in raw_json and "\\u202e" in raw_json
    command = json.loads(raw_json)[0]["calls"][0]["args"]["command"]
    assert command == f"{HIDDEN} [red]not red[/red] \u202eexe.txt"


@pytest.mark.slow
def test_free_tool_output_with_osc52_and_markup_never_reaches_the_terminal_raw(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "ws" / "notes.md").write_text(
        f"hello{OSC52}\n[bold red]shout[/bold red]\n\u202egnp.exe\n"
    )
    raw = in_tty(env, "send", "read notes.md")
    assert "\x1b]52" not in raw and "\u202e" not in raw
    text = "\n".join(on_screen(raw))
    assert "hello\\x1b]52;c;cm0gLXJmIH4K\\x07" in text, text
    assert "[bold red]shout[/bold red]" in text  # literal, not rich markup
    assert "\\u202egnp.exe" in text
    thread_id = json.loads(gh(env, "threads", "--json").stdout)[0]["thread_id"]
    messages = json.loads(gh(env, "show", thread_id, "--json").stdout)["messages"]
    call_id = next(m["tool_call_id"] for m in messages if m["role"] == "tool")
    # `gatehouse output` on a terminal escapes; piped to a file it stays byte for byte.
    shown = in_tty(env, "output", thread_id, call_id)
    assert "\x1b]52" not in shown and "hello\\x1b]52;c;" in shown
    assert OSC52 in gh(env, "output", thread_id, call_id).stdout


@pytest.mark.slow
def test_interactive_card_shows_the_hidden_command_escaped(
    env: dict[str, str], tmp_path: Path
) -> None:
    # Keys typed at the prompt cannot carry ESC: the model's call comes from a script.
    sent = gh(env, "send", "--json", f"run: {HIDDEN}")
    thread_id = json.loads(sent.stdout)["thread_id"]
    cmd = base_cmd()
    child = terminal.spawn(
        cmd[0],
        [*cmd[1:], "chat", "--thread", thread_id],
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=60,
        dimensions=(ROWS, COLS),
    )
    child.expect("decision>")
    seen = child.before
    assert "\x1b[2K" not in seen
    lines = on_screen(seen)
    text = "\n".join(lines)
    assert "│ $ rm -rf ./* #\\x1b[2K\\x0d$ ls -la" in text, text
    assert not any(line.lstrip("│ ").startswith("$ ls -la") for line in lines)
    child.sendline("r")
    child.expect("reason>")
    child.sendline("hidden codes")
    child.expect("you")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    tools = [
        m
        for m in json.loads(gh(env, "show", thread_id, "--json").stdout)["messages"]
        if m["role"] == "tool"
    ]
    assert "hidden codes" in tools[-1]["content"]


def test_a_command_that_exits_non_zero_shows_failed_with_its_code_on_a_terminal(
    env: dict[str, str],
) -> None:
    # `ls` runs freely (the allow list); it exits 2 on a missing file.
    live = "\n".join(on_screen(in_tty(env, "send", "run: ls no-such-file")))
    assert "✗ run_command error (exit code 2)" in live, live
    assert "✓ run_command" not in live
    thread_id = json.loads(gh(env, "threads", "--json").stdout)[0]["thread_id"]
    history = "\n".join(on_screen(in_tty(env, "show", thread_id)))
    assert "✗ run_command (exit code 2):" in history, history

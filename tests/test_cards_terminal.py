"""Issue 55 in a real terminal: what `gatehouse chat` shows before a person approves.

The console script runs on a pseudo-terminal (pexpect) and its output is drawn on a
pyte screen of the same size, so each test asserts what a person SEES: the tail of a
long command line on screen, the exact count of hidden lines, approval refused until
the person paged through all of it (`v`), a risky call confirmed with the whole call,
and the narrow "always allow" (`w`) covering only its own command.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
import pyte
import pytest

from tests.support import terminal
from tests.test_cli_interactive import ROOT, TIMEOUT, base_cmd, env, screen

__all__ = ["env"]  # the fixture, shared with tests/test_cli_interactive.py

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(180),
    pytest.mark.skipif(sys.platform == "win32", reason="needs a pty"),
]
ROWS, COLS = 40, 120


class Screen:
    """The terminal as a person sees it: the child's output drawn by pyte."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.screen = pyte.Screen(COLS, ROWS)
        self.stream = pyte.Stream(self.screen)
        child.logfile_read = self

    def write(self, data: str) -> None:
        self.stream.feed(data)

    def flush(self) -> None:
        pass

    def rows(self) -> list[str]:
        return [row.rstrip() for row in self.screen.display]


def chat(env: dict[str, str]) -> tuple[pexpect.spawn, Screen]:
    cmd = base_cmd()
    child = terminal.spawn(
        cmd[0],
        [*cmd[1:], "chat"],
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(ROWS, COLS),
    )
    seen = Screen(child)
    child.expect(screen("you ▸"))
    return child, seen


def on_screen(seen: Screen, text: str) -> list[str]:
    return [row for row in seen.rows() if text in row]


def test_a_hidden_tail_is_in_view_and_a_command_asks_with_the_whole_call(
    env: dict[str, str], tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "keep.txt").write_text("precious\n")
    child, seen = chat(env)
    child.sendline("run: echo build-ok" + " " * 3000 + "; rm -rf ./*")
    child.expect(screen("call 1/1: run_command"))
    child.expect(screen("decision>"))
    # The blank run is counted, so what follows it is on the card, on screen.
    card = [r for r in on_screen(seen, "echo build-ok ⟨3,000 spaces⟩ ; rm -rf ./*") if "│" in r]
    assert card and card[0].startswith('│ {"command": "echo build-ok'), seen.rows()
    child.sendline("a")
    child.expect(screen("Approve run_command? it executes a command. The whole call:"))
    child.expect(screen("approve it? [y/N]"))
    assert on_screen(seen, '"command": "echo build-ok ⟨3,000 spaces⟩ ; rm -rf ./*"')
    child.sendline("n")
    child.expect(screen("not approved; decide again."))
    child.expect(screen("decision>"))
    child.sendline("r")
    child.expect(screen("reason>"))
    child.sendline("no")
    child.expect(screen("you ▸"))
    assert (ws / "keep.txt").read_text() == "precious\n"
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_a_long_preview_says_exactly_what_is_hidden_and_is_paged_before_approval(
    env: dict[str, str], tmp_path: Path
) -> None:
    child, seen = chat(env)
    lines = [f"line {i}" for i in range(1, 121)]
    child.sendline("write big.md: " + "\\n".join(lines))
    child.expect(screen("decision>"))
    # 121 rows of preview ("new file …" and 120 lines), 20 shown: 101 hidden.
    assert on_screen(seen, "… 101 more lines hidden (")
    assert on_screen(seen, "— v to view all")
    previewed = [r.split()[2] for r in seen.rows() if r.startswith("│ line ")]
    assert previewed[-1] == "19" and "20" not in previewed, seen.rows()
    child.sendline("a")  # not before all of it was seen
    child.expect(screen("Part of this call is hidden: v to view all of it first."))
    assert not (tmp_path / "ws" / "big.md").exists()
    # 132 screen rows (the arguments wrap to 10, a blank, the preview's 121), 37 a page.
    child.sendline("v")
    for left in (95, 58, 21):
        child.expect(screen(f"-- {left} more lines: Enter for more, q to stop --"))
        assert f"line {120 - left}" in seen.rows()  # the page's last line is on screen
        child.sendline("")
    child.expect(screen("line 120"))
    child.expect(screen("decision>"))
    child.sendline("a")
    child.expect(screen("✓ write_file ok"))
    child.expect(screen("you ▸"))
    assert (tmp_path / "ws" / "big.md").read_text() == "\n".join(lines) + "\n"
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_always_allow_is_narrow_first_and_rm_still_asks(
    env: dict[str, str], tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    (ws / "x").write_text("keep\n")
    child, seen = chat(env)
    child.sendline("run: seq 1 3")
    child.expect(screen("w covers `run_command` of exactly the command `seq 1 3`;"))
    child.expect(screen("decision>"))
    child.sendline("w")
    child.expect(screen("approve it? [y/N]"))  # it executes: confirmed first
    child.sendline("y")
    child.expect(screen("always allowed from now on: `run_command` of exactly the command"))
    child.expect(screen("✓ run_command ok"))
    child.expect(screen("you ▸"))
    child.sendline("run: seq 1 3")  # covered: runs without a card
    child.expect(screen("[always allowed (run_command:seq 1 3)]"))
    child.expect(screen("✓ run_command ok"))
    child.expect(screen("you ▸"))
    child.sendline("run: rm -f x")  # not covered: asks
    child.expect(screen("call 1/1: run_command"))
    child.expect(screen("decision>"))
    assert on_screen(seen, '"command": "rm -f x"')
    child.sendline("r")
    child.expect(screen("reason>"))
    child.sendline("no")
    child.expect(screen("you ▸"))
    assert (ws / "x").read_text() == "keep\n"
    child.sendline("/exit")
    child.expect(pexpect.EOF)

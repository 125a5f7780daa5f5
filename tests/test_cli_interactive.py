"""`gatehouse chat` driven through a pseudo-terminal, keystroke by keystroke.

Each test starts the real console script under pexpect with its own database and
workspace, types what a person would type, and checks both the screen and the
thread afterwards (through the non-interactive commands, as a script would).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from tests.support import terminal

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(120),
    pytest.mark.skipif(sys.platform == "win32", reason="needs a pty"),
]

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "gatehouse"
TIMEOUT = 30


# Rich styles and prompt_toolkit cursor moves land between characters on a real
# terminal; `screen()` turns plain text into a pattern that tolerates them.
ESC = r"(?:\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z])"


def screen(text: str) -> str:
    return "".join(f"(?:[ ]|{ESC})+" if ch == " " else re.escape(ch) + f"{ESC}*" for ch in text)


def base_cmd() -> list[str]:
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "gatehouse.ui.term.cli"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GATEHOUSE_"))}
    e.update(
        GATEHOUSE_DB=str(tmp_path / "gh.db"),
        GATEHOUSE_WORKSPACE=str(tmp_path / "ws"),
        NO_COLOR="1",
        TERM="xterm",
        PROMPT_TOOLKIT_NO_CPR="1",
        PYTHONPATH=str(ROOT),
        COLUMNS="120",
        LINES="40",
    )
    e.pop("EDITOR", None)
    e.pop("VISUAL", None)
    (tmp_path / "ws").mkdir()
    return e


def spawn(env: dict[str, str], *args: str) -> pexpect.spawn:
    cmd = base_cmd()
    child = terminal.spawn(
        cmd[0],
        [*cmd[1:], "chat", *args],
        env=env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 120),
    )
    return child


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*base_cmd(), *args],
        env=env,
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def thread_json(env: dict[str, str], thread_id: str) -> dict:
    result = cli(env, "show", thread_id, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def start(env: dict[str, str]) -> tuple[pexpect.spawn, str]:
    child = spawn(env)
    child.expect(screen("new thread ") + "([0-9a-f-]{36})")
    thread_id = child.match.group(1)
    child.expect(screen("you ▸"))
    return child, thread_id


def test_approve_and_always_allow_then_exit_with_ctrl_c(
    env: dict[str, str], tmp_path: Path
) -> None:
    child, thread_id = start(env)
    child.sendline("write todo.md: buy milk")
    child.expect(screen("call 1/1: write_file"))
    child.expect(screen("buy milk"))
    child.expect(screen("decision>"))
    child.sendline("a")
    child.expect(screen("✓ write_file ok"))
    child.expect(screen("you ▸"))
    assert (tmp_path / "ws" / "todo.md").read_text() == "buy milk\n"

    # Always allow, narrow first: `w` covers exactly this file, and says so.
    child.sendline("write a.md: one")
    child.expect(screen("w covers `write_file` of exactly the file `a.md`"))
    child.expect(screen("decision>"))
    child.sendline("w")
    child.expect(screen("always allowed from now on: `write_file` of exactly the file `a.md`"))
    child.expect(screen("✓ write_file ok"))
    child.expect(screen("you ▸"))
    child.sendline("write a.md: again")  # the same file: runs without asking
    child.expect(screen("✓ write_file ok"))
    child.expect(screen("you ▸"))
    assert (tmp_path / "ws" / "a.md").read_text() == "again\n"
    child.sendline("write b.md: two")  # another file: asks; W grants the whole tool
    child.expect(screen("call 1/1: write_file"))
    child.expect(screen("decision>"))
    child.sendline("W")
    child.expect(screen("always allowed from now on: every `write_file` call in this thread"))
    child.expect(screen("✓ write_file ok"))
    child.expect(screen("you ▸"))
    child.sendline("write c.md: three")
    child.expect(screen("✓ write_file ok"))
    child.expect(screen("you ▸"))
    assert (tmp_path / "ws" / "c.md").read_text() == "three\n"

    child.sendcontrol("c")  # Ctrl-C at the prompt exits
    child.expect(screen(f"gatehouse chat --thread {thread_id}"))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert thread_json(env, thread_id)["thread"]["status"] == "completed"


def test_edit_inline_json_with_validation(env: dict[str, str], tmp_path: Path) -> None:
    child, thread_id = start(env)
    child.sendline("write todo.md: buy milk")
    child.expect(screen("decision>"))
    child.sendline("e")
    child.expect(screen("args (JSON)>"))
    child.sendcontrol("a")
    child.sendcontrol("k")  # clear the prefilled arguments
    child.sendline('{"path": "todo.md"}')  # missing "content": refused, stays in the prompt
    child.expect(screen("Field required"))
    child.sendcontrol("a")
    child.sendcontrol("k")
    child.sendline('{"path": "todo.md", "content": "buy oat milk\\n"}')
    # The edited call is shown (a diff of its arguments) and asked about before it runs.
    child.expect(screen('-  "content": "buy milk\\n"'))
    child.expect(screen('+  "content": "buy oat milk\\n"'))
    child.expect(screen("run the edited call? [y/N]"))
    assert not (tmp_path / "ws" / "todo.md").exists()
    child.sendline("y")
    child.expect(screen("✓ write_file ok"))
    child.expect(screen("you ▸"))
    assert (tmp_path / "ws" / "todo.md").read_text() == "buy oat milk\n"
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    tools = [m for m in thread_json(env, thread_id)["messages"] if m["role"] == "tool"]
    assert tools and tools[-1]["status"] == "success"


def test_reject_with_reason_then_resume_thread_shows_history(
    env: dict[str, str], tmp_path: Path
) -> None:
    child, thread_id = start(env)
    child.sendline("list files then write todo.md: buy milk")
    child.expect(screen("✓ list_files ok"))
    child.expect(screen("decision>"))
    child.sendline("r")
    child.expect(screen("reason>"))
    child.sendline("not today")
    child.expect(screen("declined"))
    child.expect(screen("you ▸"))
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    assert not (tmp_path / "ws" / "todo.md").exists()
    tool_texts = [
        m["content"] for m in thread_json(env, thread_id)["messages"] if m["role"] == "tool"
    ]
    assert any("not today" in t for t in tool_texts)

    # Resuming shows the history and the id.
    child = spawn(env, "--thread", thread_id)
    child.expect(screen(f"thread {thread_id}"))
    child.expect(screen("you ▸ list files then write todo.md: buy milk"))
    child.expect(screen("you ▸"))
    child.sendeof()
    child.expect(pexpect.EOF)


def test_ctrl_c_at_a_decision_leaves_the_thread_waiting(env: dict[str, str]) -> None:
    child, thread_id = start(env)
    child.sendline("write todo.md: buy milk")
    child.expect(screen("decision>"))
    child.sendcontrol("c")
    child.expect(screen("waiting for a decision"))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 3
    # ... and a later chat on the thread asks for the decision first.
    child = spawn(env, "--thread", thread_id)
    child.expect(screen("call 1/1: write_file"))
    child.expect(screen("decision>"))
    child.sendline("s")
    child.expect(screen("response>"))
    child.sendline("write it tomorrow instead")
    child.expect(screen("you ▸"))
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    tools = [m for m in thread_json(env, thread_id)["messages"] if m["role"] == "tool"]
    assert tools[-1]["content"] == "write it tomorrow instead"


def test_ctrl_c_during_a_run_stops_it_cleanly(env: dict[str, str]) -> None:
    env = {**env, "GATEHOUSE_MODEL_FACTORY": "tests.support.slow_cli_model:model"}
    child, thread_id = start(env)
    child.sendline("tell me a long story")
    child.expect(screen("Still going"))
    child.sendcontrol("c")
    child.expect(screen("stopping at the next safe point"))
    child.expect(screen("run stopped by you"))
    child.expect(screen("you ▸"))  # still in the chat, ready for the next message
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    data = thread_json(env, thread_id)
    assert data["thread"]["status"] == "cancelled"
    assert data["pending"] is None
    user, partial, *notices = data["messages"]
    assert user["role"] == "user" and partial["role"] == "assistant"
    # The reply was cut short and has no dangling tool calls.
    assert "Still going" in partial["content"] and len(partial["content"]) < len(
        "Still going… " * 60
    )
    assert not partial.get("tool_calls")
    assert all(m.get("notice") for m in notices), notices


def test_edit_in_editor_then_approve_all_without_colour(
    env: dict[str, str], tmp_path: Path
) -> None:
    import io

    # An "editor" that changes the file it is given, as a person would.
    editing = {**env, "EDITOR": "sed -i s/one/uno/"}
    child, thread_id = start(editing)
    seen = io.StringIO()
    child.logfile_read = seen
    child.sendline("write a.md: one then write b.md: two then write c.md: three")
    child.expect(screen("call 1/3: write_file"))
    child.expect(screen("decision>"))
    child.sendline("e")
    child.expect(screen('+  "content": "uno\\n"'))
    child.expect(screen("run the edited call? [y/N]"))
    child.sendline("y")
    child.expect(screen("call 2/3: write_file"))
    child.expect(screen("decision>"))
    child.sendline("A")  # approve this one and every remaining call: each is shown first
    child.expect(screen("call 3/3: write_file"))
    child.expect(screen("three"))
    child.expect(screen("approve this call too? [y/N]"))
    child.sendline("y")
    child.expect(screen("you ▸"))
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    ws = tmp_path / "ws"
    assert [(ws / n).read_text() for n in ("a.md", "b.md", "c.md")] == ["uno\n", "two\n", "three\n"]
    # NO_COLOR: styles such as bold may remain, colours may not (SGR codes, ending in `m`;
    # a cursor move such as `ESC[30D` is no colour).
    colour = re.search(r"\x1b\[(?:[0-9;]*;)?(?:3[0-7]|9[0-7]|38)(?:;[0-9;]*)?m", seen.getvalue())
    assert not colour, seen.getvalue()[colour.start() - 80 : colour.end() + 20]


def test_auto_approve_banner_prompt_and_switches(env: dict[str, str], tmp_path: Path) -> None:
    child = spawn(env, "--auto-approve")
    child.expect(screen("new thread ") + "([0-9a-f-]{36})")
    thread_id = child.match.group(1)
    child.expect(screen("AUTO-APPROVE ON for this session"))
    child.expect(screen("you [auto-approve] ▸"))
    child.sendline("write todo.md: buy milk")
    child.expect(screen("write_file"))
    child.expect(screen("[auto-approved]"))
    child.expect(screen("✓ write_file ok"))
    child.expect(screen("you [auto-approve] ▸"))
    assert (tmp_path / "ws" / "todo.md").read_text() == "buy milk\n"

    child.sendline("/auto off")
    child.expect(screen("auto-approve is off"))
    child.expect(screen("you ▸"))
    child.sendline("write a.md: one")
    child.expect(screen("decision>"))  # asked again
    child.sendline("r")
    child.expect(screen("reason"))
    child.sendline("later")
    child.expect(screen("you ▸"))
    assert not (tmp_path / "ws" / "a.md").exists()

    # The thread's own switch is stored: it holds after this process exits.
    child.sendline("/auto thread on")
    child.expect(screen("AUTO-APPROVE ON for this thread"))
    child.expect(screen("you [auto-approve] ▸"))
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    sent = json.loads(cli(env, "send", "--thread", thread_id, "write b.md: two", "--json").stdout)
    assert sent["status"] == "completed" and sent["auto_approve"] == "thread"
    assert (tmp_path / "ws" / "b.md").read_text() == "two\n"

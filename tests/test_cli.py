"""The scriptable `gatehouse` commands, run as a script or cron job would run them:
real subprocesses of the console script, their exit codes, stdout/stderr and --json.

Exit codes under test: 0 ok, 1 failed / not found, 2 usage or refused decision,
3 waiting for a decision, 130 cancelled with Ctrl-C.
"""

from __future__ import annotations

import getpass
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

pytestmark = pytest.mark.timeout(240)
# Each command is a fresh process that imports the agent: seconds, not milliseconds.
slow = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(sys.executable).parent / "gatehouse"
TWO_WRITES = "list files then write todo.md: buy milk then write b.md: x"


def base_cmd() -> list[str]:
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "gatehouse.ui.term.cli"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GATEHOUSE_"))}
    e.update(
        GATEHOUSE_DB=str(tmp_path / "gh.db"),
        GATEHOUSE_WORKSPACE=str(tmp_path / "ws"),
        PYTHONPATH=str(ROOT),
    )
    e.pop("NO_COLOR", None)
    (tmp_path / "ws").mkdir()
    return e


def gh(
    env: dict[str, str], *args: str, code: int | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*base_cmd(), *args], env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=120
    )
    if code is not None:
        assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    return result


def gh_json(env: dict[str, str], *args: str, code: int = 0) -> object:
    return json.loads(gh(env, *args, "--json", code=code).stdout)


def request_of(env: dict[str, str], thread_id: str) -> str:
    """The pending request's id, as a script reads it to name the request it decides."""
    return next(p["interrupt_id"] for p in gh_json(env, "pending") if p["thread_id"] == thread_id)


def named(env: dict[str, str], thread_id: str) -> tuple[str, str, str]:
    return thread_id, "--interrupt-id", request_of(env, thread_id)


@slow
def test_send_pause_partial_decisions_refused_then_answered(
    env: dict[str, str], tmp_path: Path
) -> None:
    sent = gh_json(env, "send", TWO_WRITES, code=3)
    thread_id = sent["thread_id"]
    assert sent["status"] == "awaiting_approval"
    assert [c["call"] for c in sent["pending"]["calls"]] == [1, 2]
    assert [t["name"] for t in sent["tools"]] == ["list_files"]  # the free call already ran

    listed = gh_json(env, "threads")
    assert [(t["thread_id"], t["status"], t["pending"]) for t in listed] == [
        (thread_id, "awaiting_approval", 2)
    ]
    inbox = gh_json(env, "pending")
    assert inbox[0]["thread_id"] == thread_id
    assert [c["args"]["path"] for c in inbox[0]["calls"]] == ["todo.md", "b.md"]

    # Ambiguous or partial decisions are refused with the undecided calls named; nothing changes.
    refused = gh(env, "approve", *named(env, thread_id), code=2)
    assert "1 (write_file), 2 (write_file)" in refused.stderr
    refused = gh(env, "approve", *named(env, thread_id), "--call", "1", code=2)
    assert "still undecided: 2 (write_file)" in refused.stderr
    gh(env, "approve", *named(env, thread_id), "--call", "7", "--reject-others", "no", code=2)
    gh(env, "approve", thread_id, "--all", "--interrupt-id", "not-the-pending-one", code=2)
    assert gh_json(env, "pending")[0]["interrupt_id"] == inbox[0]["interrupt_id"]
    assert not (tmp_path / "ws" / "todo.md").exists()

    done = gh_json(
        env,
        "approve",
        thread_id,
        "--call",
        "1",
        "--reject-others",
        "not b",
        "--interrupt-id",
        inbox[0]["interrupt_id"],
    )
    assert done["status"] == "completed" and done["pending"] is None
    assert {t["name"]: t["status"] for t in done["tools"] if t["status"] == "rejected"} == {
        "write_file": "rejected"
    }
    assert (tmp_path / "ws" / "todo.md").read_text() == "buy milk\n"
    assert not (tmp_path / "ws" / "b.md").exists()

    # Deciding again: nothing is pending any more.
    again = gh(env, "approve", thread_id, code=2)
    assert "not waiting for a decision" in again.stderr
    assert gh_json(env, "pending") == []


@slow
def test_respond_reject_and_always_allow(env: dict[str, str], tmp_path: Path) -> None:
    thread_id = gh_json(env, "send", "write a.md: one", code=3)["thread_id"]
    gh(env, "respond", *named(env, thread_id), "--message", "I wrote it by hand", code=0)
    transcript = gh_json(env, "show", thread_id)
    assert [m["content"] for m in transcript["messages"] if m["role"] == "tool"] == [
        "I wrote it by hand"
    ]
    assert not (tmp_path / "ws" / "a.md").exists()

    gh(env, "send", "--thread", thread_id, "write c.md: two", code=3)
    shown = gh(env, "show", thread_id, code=0).stdout
    assert "call 1/1: write_file" in shown  # the pending card is part of the transcript view
    gh(env, "reject", *named(env, thread_id), "--reason", "not now", code=0)
    assert not (tmp_path / "ws" / "c.md").exists()
    tools = [m for m in gh_json(env, "show", thread_id)["messages"] if m["role"] == "tool"]
    assert "not now" in tools[-1]["content"]

    gh(env, "send", "--thread", thread_id, "write d.md: three", code=3)
    gh(env, "approve", *named(env, thread_id), "--always", code=0)
    # --always is narrow: exactly this file runs without asking from now on, another asks.
    assert gh_json(env, "send", "--thread", thread_id, "write d.md: 3")["status"] == "completed"
    assert (tmp_path / "ws" / "d.md").read_text() == "3\n"
    # Each call a person let run says who and from where; the one the grant ran says so.
    shown = gh(env, "show", thread_id, code=0).stdout
    assert f"[approved by {getpass.getuser()} via terminal]" in shown
    assert "always allowed" in shown
    gh(env, "send", "--thread", thread_id, "write e.md: four", code=3)
    assert [g["tool"] + ":" + (g["pattern"] or "") for g in gh_json(env, "grants", thread_id)] == [
        "write_file:d.md"
    ]
    # The whole tool is its own, explicit flag: the next write runs without asking ...
    gh(env, "approve", *named(env, thread_id), "--always-tool", code=0)
    assert (tmp_path / "ws" / "e.md").read_text() == "four\n"
    assert gh_json(env, "send", "--thread", thread_id, "write g.md: six")["status"] == "completed"
    # ... but not in another thread.
    other = gh_json(env, "send", "write f.md: five", code=3)["thread_id"]
    # A call with no narrow form is refused under --always, nothing sent.
    gh(env, "reject", *named(env, other), code=0)
    gh(env, "send", "--thread", other, "run: echo a && echo b", code=3)
    refused = gh(env, "approve", *named(env, other), "--always", code=2)
    assert "no narrow grant" in refused.stderr and "--always-tool" in refused.stderr
    assert gh_json(env, "pending")[0]["thread_id"] == other


@slow
def test_send_auto_approve_runs_gated_calls_and_says_so(
    env: dict[str, str], tmp_path: Path
) -> None:
    sent = gh_json(env, "send", "--auto-approve", "write todo.md: buy milk")
    assert sent["status"] == "completed" and sent["auto_approve"] == "session"
    assert [(t["name"], t["status"], t["auto_approved"]) for t in sent["tools"]] == [
        ("write_file", "ok", True)
    ]
    assert (tmp_path / "ws" / "todo.md").read_text() == "buy milk\n"
    tools = [m for m in gh_json(env, "show", sent["thread_id"])["messages"] if m["role"] == "tool"]
    assert tools[0]["decision"] == "auto_approve"
    assert "auto-approved" in gh(env, "export", sent["thread_id"], code=0).stdout

    shown = gh(
        env, "send", "--thread", sent["thread_id"], "--auto-approve", "write b.md: x", code=0
    )
    assert "AUTO-APPROVE ON" in shown.stderr and "[auto-approved]" in shown.stdout
    # Only for that command: the next one asks again.
    assert (
        gh_json(env, "send", "--thread", sent["thread_id"], "write c.md: y", code=3)["auto_approve"]
        is None
    )
    assert not (tmp_path / "ws" / "c.md").exists()

    config = tmp_path / "gatehouse.toml"
    config.write_text('[policy]\nwirte_file = "allow"\n')
    # Any command that runs the agent refuses it (the read-only ones never load the policy).
    typo = gh({**env, "GATEHOUSE_CONFIG": str(config)}, "send", "hello", code=2)
    assert "'wirte_file'" in typo.stderr and "write_file" in typo.stderr


@slow
def test_show_export_delete_and_not_found(env: dict[str, str], tmp_path: Path) -> None:
    thread_id = gh_json(env, "send", "list files")["thread_id"]
    shown = gh(env, "show", thread_id, code=0)
    assert "list files" in shown.stdout and "\x1b[" not in shown.stdout  # no colour in a pipe

    md = gh(env, "export", thread_id, "--format", "md", code=0).stdout
    assert md.startswith("# list files") and thread_id in md
    data = json.loads(gh(env, "export", thread_id, "--format", "json", code=0).stdout)
    assert [m["role"] for m in data["messages"]][:2] == ["user", "assistant"]
    out = tmp_path / "t.md"
    gh(env, "export", thread_id, "-o", str(out), code=0)
    assert out.read_text().strip() == md.strip()
    gh(env, "export", thread_id, "--format", "xml", code=2)

    table = gh(env, "threads", code=0).stdout
    assert thread_id in table and "completed" in table

    assert gh_json(env, "delete", thread_id) == {"thread_id": thread_id, "deleted": True}
    assert "no thread" in gh(env, "show", thread_id, code=1).stderr
    gh(env, "delete", thread_id, code=1)
    gh(env, "approve", "no-such-thread", code=1)
    assert gh_json(env, "threads") == []


@slow
def test_db_option_resume_and_config_errors(env: dict[str, str], tmp_path: Path) -> None:
    other = str(tmp_path / "other.db")
    thread_id = gh_json(env, "send", "--db", other, "write x.md: y", code=3)["thread_id"]
    assert gh_json(env, "threads") == []  # not in the GATEHOUSE_DB database
    assert gh_json(env, "threads", "--db", other)[0]["thread_id"] == thread_id
    # resume is for crashed runs; a thread waiting for a person says so (exit 3).
    assert "waiting for a decision" in gh(env, "resume", "--db", other, thread_id, code=3).stderr
    request = gh_json(env, "pending", "--db", other)[0]["interrupt_id"]
    gh(env, "approve", "--db", other, thread_id, "--interrupt-id", request, code=0)
    assert gh_json(env, "resume", "--db", other, thread_id)["status"] == "completed"

    bad = {**env, "GATEHOUSE_CONFIG": str(tmp_path / "missing.toml")}
    assert "does not exist" in gh(bad, "threads", code=2).stderr
    gh(env, "approve", code=2)  # click usage error: missing argument


@slow
def test_ctrl_c_during_a_scripted_run_cancels_it(env: dict[str, str]) -> None:
    slow = {
        **env,
        "GATEHOUSE_MODEL_FACTORY": "tests.support.slow_cli_model:model",
        "PYTHONUNBUFFERED": "1",
    }
    proc = subprocess.Popen(
        [*base_cmd(), "send", "tell me a story"],
        env=slow,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    seen = ""
    deadline = time.time() + 90
    while "Still going" not in seen and time.time() < deadline:
        seen += proc.stdout.read(1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (stdout, stderr)
    assert "stopping at the next safe point" in stderr
    rows = gh_json(env, "threads")
    assert rows[0]["status"] == "cancelled"


@slow
def test_errors_under_json_are_json_and_hints_name_options_the_command_takes(
    env: dict[str, str], tmp_path: Path
) -> None:
    missing = gh(env, "approve", "no-such-thread", "--json", code=1)
    assert json.loads(missing.stdout) == {
        "error": "no thread no-such-thread (see `gatehouse threads`)",
        "exit_code": 1,
    }
    assert "no thread no-such-thread" in missing.stderr  # people still read stderr

    thread_id = gh_json(env, "send", TWO_WRITES, code=3)["thread_id"]
    partial = gh(env, "approve", *named(env, thread_id), "--call", "1", "--json", code=2)
    error = json.loads(partial.stdout)["error"]
    # Each command suggests only options it takes.
    assert "--reject-others REASON" in error and "--approve-others" not in error
    partial = gh(env, "reject", *named(env, thread_id), "--call", "1", "-m", "no", code=2)
    assert "--approve-others" in partial.stderr and "--reject-others" not in partial.stderr

    # A made-up request id is not "already decided": it was never asked.
    made_up = json.loads(
        gh(env, "approve", thread_id, "--all", "--interrupt-id", "made-up", "--json", code=2).stdout
    )
    assert "never asked approval request made-up" in made_up["error"]
    first = gh_json(env, "pending")[0]["interrupt_id"]
    gh_json(env, "approve", thread_id, "--all", "--interrupt-id", first)
    next_id = gh_json(env, "send", "--thread", thread_id, "write c.md: z", code=3)["pending"][
        "interrupt_id"
    ]
    stale = json.loads(
        gh(env, "approve", thread_id, "--interrupt-id", first, "--json", code=2).stdout
    )
    assert "already decided" in stale["error"]
    assert (
        gh_json(env, "pending")[0]["interrupt_id"] == next_id
        and not (tmp_path / "ws" / "c.md").exists()
    )


@slow
def test_approve_with_edited_arguments(env: dict[str, str], tmp_path: Path) -> None:
    thread_id = gh_json(env, "send", TWO_WRITES, code=3)["thread_id"]
    # Refused before anything is sent: not JSON, not an object, not the tool's schema, no such call.
    request = named(env, thread_id)
    assert (
        "not valid JSON"
        in gh(env, "approve", *request, "--all", "--edit", "1", "{path", code=2).stderr
    )
    assert (
        "JSON object" in gh(env, "approve", *request, "--all", "--edit", "1", "[1]", code=2).stderr
    )
    bad = gh(env, "approve", *request, "--all", "--edit", "1", '{"path": "todo.md"}', code=2)
    assert "content" in bad.stderr and "nothing was sent" in bad.stderr
    assert "--edit 5" in gh(env, "approve", *request, "--all", "--edit", "5", "{}", code=2).stderr
    assert (
        gh_json(env, "pending")[0]["thread_id"] == thread_id
        and not (tmp_path / "ws" / "todo.md").exists()
    )

    done = gh_json(
        env, "approve", *request, "--all", "--edit", "1", '{"path": "todo.md", "content": "EDITED"}'
    )
    assert done["status"] == "completed"
    assert (tmp_path / "ws" / "todo.md").read_text() == "EDITED"
    assert (tmp_path / "ws" / "b.md").read_text() == "x\n"
    [edited] = [r for r in gh_json(env, "audit", "--thread", thread_id) if r["decision"] == "edit"]
    assert edited["args"]["content"] == "EDITED"


@slow
def test_ctrl_c_during_a_long_command_stops_it_within_a_second(env: dict[str, str]) -> None:
    proc = subprocess.Popen(
        [*base_cmd(), "send", "--auto-approve", "run: echo READY$((40+2)) && sleep 20"],
        env={**env, "PYTHONUNBUFFERED": "1"},
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    seen = ""
    deadline = time.time() + 90
    while "READY42" not in seen and time.time() < deadline:  # the command's output: it runs
        seen += proc.stdout.read(1)
    asked = time.monotonic()
    proc.send_signal(signal.SIGINT)
    # Timed to the line saying the run stopped (what the person waits for), not to the
    # process's exit, which adds the interpreter's teardown: beside a CPU hog on two
    # test workers that exit alone took 1.6 s. The command would have run 20 s; the
    # bound leaves a busy machine room and still fails a stop that waits for it.
    stopped = ""
    while "Stopped by the person" not in stopped and time.monotonic() < asked + 30:
        char = proc.stdout.read(1)
        if not char:
            break
        stopped += char
    took = time.monotonic() - asked
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and took < 3, (took, seen, stopped + stdout, stderr)
    assert "Stopped by the person" in seen + stopped and "Traceback" not in stderr


@slow
def test_second_ctrl_c_quits_at_once_without_a_traceback(env: dict[str, str]) -> None:
    stuck = {
        **env,
        "GATEHOUSE_MODEL_FACTORY": "tests.support.slow_cli_model:stuck_model",
        "PYTHONUNBUFFERED": "1",
    }
    proc = subprocess.Popen(
        [*base_cmd(), "send", "hello"],
        env=stuck,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("thread ")  # the run is under way
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    # The model call hangs, so the first Ctrl-C cannot reach a safe point soon.
    assert "stopping at the next safe point" in proc.stderr.readline() + proc.stderr.readline()
    asked = time.monotonic()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - asked
    assert proc.returncode == 130 and took < 2.0, (took, stdout, stderr)
    assert "Traceback" not in stderr and "gatehouse resume" in stderr


@slow
def test_resume_continues_a_run_whose_process_died(env: dict[str, str]) -> None:
    slow_env = {
        **env,
        "GATEHOUSE_MODEL_FACTORY": "tests.support.slow_cli_model:model",
        "PYTHONUNBUFFERED": "1",
    }
    proc = subprocess.Popen(
        [*base_cmd(), "send", "tell me a story"],
        env=slow_env,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    seen = ""
    deadline = time.time() + 90
    while "Still going" not in seen and time.time() < deadline:
        seen += proc.stdout.read(1)
    proc.kill()  # a crash: no handler runs, the thread is left mid-run
    proc.wait(timeout=30)
    [row] = gh_json(env, "threads")
    assert row["status"] == "interrupted", "a killed run shows as interrupted, not running"
    resumed = gh_json(slow_env, "resume", row["thread_id"])
    assert resumed["status"] == "completed"
    messages = gh_json(env, "show", row["thread_id"])["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["content"].endswith("Still going… ")


# -- launching the web UI and Studio (in-process, the child process is faked) --------------
@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    from gatehouse.ui.term import cli_interactive as cli

    calls: list[list[str]] = []
    monkeypatch.setattr(cli, "run_child", lambda cmd, cwd=None: calls.append(cmd) or 0)
    return calls


def test_no_command_and_ui_start_streamlit(
    launched: list[list[str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from gatehouse.ui.term import cli_interactive as cli

    app_py = tmp_path / "app.py"
    app_py.write_text("")
    monkeypatch.setattr(cli, "APP_PATH", app_py)
    runner = CliRunner()
    assert runner.invoke(cli.app, []).exit_code == 0
    assert runner.invoke(cli.app, ["ui"]).exit_code == 0
    for cmd in launched:
        assert cmd[1:4] == ["-m", "streamlit", "run"] and cmd[4] == str(app_py)
        flags = dict(zip(cmd[5::2], cmd[6::2], strict=True))
        assert flags["--server.address"] == "127.0.0.1" and flags["--server.headless"] == "true"
        assert flags["--browser.gatherUsageStats"] == "false"
        assert flags["--client.toolbarMode"] == "minimal"  # no Deploy / developer menu (issue 19)
    monkeypatch.setattr(cli, "APP_PATH", tmp_path / "missing.py")
    result = runner.invoke(cli.app, ["ui"])
    assert result.exit_code == 1


def test_studio_runs_langgraph_dev_or_says_how_to_install(
    launched: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gatehouse.ui.term import cli_interactive as cli

    runner = CliRunner()
    monkeypatch.setattr(cli, "find_langgraph", lambda: "/opt/bin/langgraph")
    assert runner.invoke(cli.app, ["studio", "--no-browser"]).exit_code == 0
    assert launched == [
        [
            "/opt/bin/langgraph",
            "dev",
            "--config",
            str(ROOT / "langgraph.json"),
            "--port",
            "2024",
            "--no-browser",
        ]
    ]

    monkeypatch.setattr(cli, "find_langgraph", lambda: None)
    result = runner.invoke(cli.app, ["studio"])
    assert result.exit_code == 1
    assert "langgraph-cli[inmem]" in result.output
    assert len(launched) == 1


# -- one answer for every call (in-process, no agent needed) --------------------------
def pending_of(*names: str) -> object:
    from gatehouse.graph import Approval
    from gatehouse.graph.protocol.pauses import ApprovalRequest

    request = {
        "action_requests": [
            {"name": n, "args": {}, "description": "", "tool_call_id": f"c{i}"}
            for i, n in enumerate(names)
        ],
        "review_configs": [
            {"action_name": n, "allowed_decisions": ["approve", "reject"]} for n in names
        ],
    }
    return Approval(thread_id="t1", interrupt_id="i1", request=ApprovalRequest.from_wire(request))


def test_partial_decisions_name_the_undecided_calls() -> None:
    from gatehouse.graph.protocol.answers import ReviewAnswer
    from gatehouse.graph.protocol.operations import approve, edit, reject
    from gatehouse.ui.term import decisions as td

    def wire_answer(
        answer: ReviewAnswer,
    ) -> dict[str, Any]:  # as the session sends it in Command(resume=...)
        return answer.model_dump(mode="json", exclude_none=True)

    pending = pending_of("write_file", "run_command", "write_file")
    with pytest.raises(
        td.DecisionUsage, match=r"still undecided: 1 \(write_file\), 3 \(write_file\)"
    ):
        td.answer(pending, {2: approve()})
    with pytest.raises(td.DecisionUsage, match="no call 4"):
        td.answer(pending, {4: approve()}, reject("x"))
    answer = td.answer(pending, {2: approve(always_allow=True)}, reject("not these"))
    # What the graph receives: the HITL answer, one decision per call in request order.
    assert wire_answer(answer) == {
        "decisions": [
            {"type": "reject", "message": "not these"},
            {"type": "approve", "always_allow": True},
            {"type": "reject", "message": "not these"},
        ],
        "reject_missing": False,
    }
    assert td.describe_answer(pending, answer) == [
        "call 1 (write_file): reject: not these",
        "call 2 (run_command): approve, and always allow it in this thread",
        "call 3 (write_file): reject: not these",
    ]
    edited = td.answer(pending_of("write_file"), {1: edit("write_file", {"path": "a"})})
    assert wire_answer(edited)["decisions"][0]["edited_action"] == {
        "name": "write_file",
        "args": {"path": "a"},
    }


def test_renderer_streams_text_and_tool_progress_without_colour() -> None:
    import io

    from rich.console import Console

    from gatehouse.graph.protocol import events as ev
    from gatehouse.ui.term.render import EventRenderer

    buf = io.StringIO()
    r = EventRenderer(Console(file=buf, width=100, no_color=True, highlight=False))
    t = "t1"
    for e in [
        ev.RunStarted(thread_id=t, run_id="r"),
        ev.TextDelta(thread_id=t, text="Let me "),
        ev.TextDelta(thread_id=t, text="look."),
        ev.ToolStarted(thread_id=t, call_id="c1", name="run_command", args={"command": "ls"}),
        ev.ToolOutput(thread_id=t, call_id="c1", text="a.md\nb.md\n"),
        ev.ToolFinished(
            thread_id=t, call_id="c1", name="run_command", status="ok", output="a.md\nb.md\n"
        ),
        ev.ToolFinished(
            thread_id=t,
            call_id="c2",
            name="write_file",
            status="rejected",
            output="declined: [red]no",
        ),
        ev.RunFinished(thread_id=t, status="cancelled", reason="Stopped by the person."),
    ]:
        r.handle(e)
    assert buf.getvalue().splitlines() == [
        "Let me look.",
        '⚙ run_command {"command": "ls"}',
        "run_command │ a.md",
        "run_command │ b.md",
        "✓ run_command ok",  # its output was already shown line by line
        "✗ write_file rejected",
        "declined: [red]no",  # text from tools is never read as markup
        "■ run stopped by you: Stopped by the person.",
    ]

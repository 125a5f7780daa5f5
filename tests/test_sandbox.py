"""The sandbox as a person meets it: what the approval card says a command may touch,
what Gatehouse says at start, `auto` / `require` / `off`, and how the sandbox's
mounts layer (a workspace inside the hidden home). Attacks: test_sandbox_attacks.py."""

from __future__ import annotations

import logging
import os
import socket
import uuid
from getpass import getuser
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import gatehouse.tools.sandbox as sandbox_module
from gatehouse.graph import ConfigError, ScriptedModel, ai, build_graph, open_session, tool_call
from gatehouse.graph.service.config import DEFAULT_SHELL_ALLOW, Settings, load_settings
from gatehouse.tools.sandbox import (
    Access,
    Bubblewrap,
    Refusing,
    SandboxUnavailable,
    Support,
    Unsandboxed,
    choose_sandbox,
    detect_bubblewrap,
    sandbox_status,
)
from gatehouse.tools.shell import make_shell_tool
from gatehouse.tools.workspace import Workspace
from tests.support.sandboxing import outcome, sandbox_for, shell, site  # noqa: F401

NO_BWRAP = Support(None, reason="bubblewrap (bwrap) is not installed")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "workspace")


def pause(tool: Any, args: dict[str, Any]) -> tuple[Any, dict, dict[str, Any]]:
    """Run a scripted model that calls run_command once; return the pending request."""
    graph = build_graph(
        model=ScriptedModel(script=[ai("", tool_call("run_command", args, "c1")), "done"]),
        tools=[tool],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    for _ in graph.stream({"messages": [("user", "go")]}, config, stream_mode="updates"):
        pass
    (pending,) = graph.get_state(config).interrupts
    return graph, config, pending.value["action_requests"][0]


# -- what the card says ------------------------------------------------------------


def test_card_says_sandboxed_writable_and_no_network(ws: Workspace) -> None:
    tool = shell("sandbox", ws)
    _, _, action = pause(tool, {"command": "make build"})
    # The first line: what the call is about, then what it may touch.
    assert action["description"].split("\n")[0] == (
        "run_command make build · sandboxed · workspace writable · no network"
    )
    assert action["preview"] == (
        f"$ make build\n(sandboxed · workspace writable · no network; runs in {ws.root}, timeout 10s)"
    )


def test_network_is_shown_on_the_card_and_can_be_edited_off(ws: Workspace) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    try:
        tool = shell("sandbox", ws)
        command = f"echo hi > /dev/tcp/127.0.0.1/{port} && echo online"
        graph, config, action = pause(tool, {"command": command, "network": True})
        first = action["description"].split("\n")[0]
        assert first.endswith(
            " · sandboxed · workspace writable · NETWORK ALLOWED (any host, this machine included)"
        )
        assert action["args"]["network"] is True
        edited = {
            "type": "edit",
            "edited_action": {"name": "run_command", "args": {**action["args"], "network": False}},
        }
        for _ in graph.stream(
            Command(resume={"decisions": [edited]}), config, stream_mode="updates"
        ):
            pass
        result = [m for m in graph.get_state(config).values["messages"] if m.type == "tool"][-1]
        assert (
            result.content.endswith("[exit code 1]") and "\nonline\n" not in result.content
        )  # ran, offline
        # The same call as approved, with the network: it connects.
        assert tool.invoke({"command": command, "network": True}) == "online\n[exit code 0]"
    finally:
        server.close()


def test_listed_command_is_described_read_only(ws: Workspace) -> None:
    tool = make_shell_tool(ws, allow=DEFAULT_SHELL_ALLOW, sandbox=sandbox_for("sandbox", ws.root))
    spec = tool.metadata["gatehouse"]  # type: ignore[index]
    assert (
        spec.describe({"command": "git status"}) == "sandboxed · workspace read-only · no network"
    )
    assert (
        spec.describe({"command": "git status; rm x"})
        == "sandboxed · workspace writable · no network"
    )


def test_card_says_not_sandboxed_without_a_sandbox(ws: Workspace) -> None:
    tool = make_shell_tool(ws, sandbox=choose_sandbox("auto", ws.root, support=NO_BWRAP))
    _, _, action = pause(tool, {"command": "make build", "network": True})
    assert action["description"].split("\n")[0] == (
        f"run_command make build · NOT sandboxed · full access as {getuser()}"
    )
    assert "NOT sandboxed" in action["preview"]


def test_policy_description_follows_the_sandbox_line(ws: Workspace) -> None:
    tool = shell("sandbox", ws)
    graph = build_graph(
        model=ScriptedModel(
            script=[ai("", tool_call("run_command", {"command": "make"}, "c1")), "done"]
        ),
        tools=[tool],
        checkpointer=InMemorySaver(),
        policy={"run_command": {"description": "Builds need a second look."}},
    )
    config = {"configurable": {"thread_id": "t"}}
    for _ in graph.stream({"messages": [("user", "go")]}, config, stream_mode="updates"):
        pass
    (pending,) = graph.get_state(config).interrupts
    description = pending.value["action_requests"][0]["description"]
    head, policy_text, call = description.split("\n\n", 2)
    assert head == "run_command make · sandboxed · workspace writable · no network"
    assert policy_text == "Builds need a second look."
    # The policy's words never replace the call itself (Agent Inbox shows only this).
    assert call.startswith("**1. run_command** (call c1)") and '"command": "make"' in call


# -- auto / require / off ------------------------------------------------------------


def test_modes_choose_the_sandbox(ws: Workspace) -> None:
    usable = Support("/usr/bin/bwrap", version="0.8.0")
    assert isinstance(choose_sandbox("auto", ws.root, support=usable), Bubblewrap)
    assert isinstance(choose_sandbox("require", ws.root, support=usable), Bubblewrap)
    assert type(choose_sandbox("off", ws.root, support=usable)) is Unsandboxed
    assert type(choose_sandbox("auto", ws.root, support=NO_BWRAP)) is Unsandboxed
    assert isinstance(choose_sandbox("require", ws.root, support=NO_BWRAP), Refusing)
    with pytest.raises(ValueError, match="auto, require, off"):
        choose_sandbox("sometimes", ws.root)


def test_require_without_bubblewrap_refuses_commands_clearly(ws: Workspace) -> None:
    tool = make_shell_tool(ws, sandbox=choose_sandbox("require", ws.root, support=NO_BWRAP))
    assert (
        tool.metadata["gatehouse"]
        .describe({"command": "ls"})
        .startswith("NOT sandboxed · will be refused")
    )  # type: ignore[index]
    with pytest.raises(
        SandboxUnavailable,
        match=r'shell_sandbox = "require" and bubblewrap \(bwrap\) is not installed',
    ):
        tool.invoke({"command": "touch made-anyway"})
    assert not (ws.root / "made-anyway").exists()


def test_require_refusal_reaches_the_model_and_the_thread_goes_on(ws: Workspace) -> None:
    tool = make_shell_tool(ws, sandbox=choose_sandbox("require", ws.root, support=NO_BWRAP))
    graph, config, _ = pause(tool, {"command": "touch x"})
    for _ in graph.stream(
        Command(resume={"decisions": [{"type": "approve"}]}), config, stream_mode="updates"
    ):
        pass
    messages = graph.get_state(config).values["messages"]
    result = [m for m in messages if m.type == "tool"][-1]
    assert result.status == "error" and "bubblewrap" in result.content
    assert messages[-1].content == "done"


def fake_bwrap(tmp_path: Path, trial: str) -> str:
    """A `bwrap` that answers --version and --help and runs `trial` for anything else."""
    script = tmp_path / f"bwrap-{uuid.uuid4().hex[:6]}"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in --version) echo "bubblewrap 0.9.9";; --help) echo "--disable-userns --size";;\n'
        f"*) {trial};; esac\n"
    )
    script.chmod(0o755)
    return str(script)


def test_detection_needs_a_trial_run_that_works(tmp_path: Path) -> None:
    assert not detect_bubblewrap(str(tmp_path / "missing-bwrap")).usable
    # A container without user namespaces: bwrap is there, creating a sandbox fails.
    failing = fake_bwrap(
        tmp_path, "echo 'bwrap: No permissions to create new namespace' >&2; exit 1"
    )
    found = detect_bubblewrap(failing)
    assert not found.usable
    assert (
        found.reason
        == "bubblewrap cannot create a sandbox here (bwrap: No permissions to create new namespace)"
    )
    working = detect_bubblewrap(fake_bwrap(tmp_path, "exit 0"))
    assert (
        working.usable
        and working.version == "0.9.9"
        and working.disable_userns
        and working.tmpfs_size
    )


def test_start_says_once_when_commands_are_not_sandboxed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox_module, "_announced", set())
    settings = Settings(
        db=str(tmp_path / "g.db"), workspace=str(tmp_path / "ws"), shell_sandbox="off"
    )
    with caplog.at_level(logging.WARNING, logger="gatehouse.sandbox"):
        for _ in range(2):
            session = open_session(settings)
            assert session.info["sandbox"].startswith("NOT sandboxed")
            session.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f'run_command: NOT sandboxed: shell_sandbox = "off"; commands run with full access as {getuser()}'
    ]


def test_session_info_names_the_sandbox(tmp_path: Path) -> None:
    sandbox_for("sandbox", tmp_path)  # skips when there is no bubblewrap
    session = open_session(Settings(db=str(tmp_path / "g.db"), workspace=str(tmp_path / "ws")))
    try:
        assert session.info["sandbox"].startswith("sandboxed: bubblewrap ")
    finally:
        session.close()
    assert sandbox_status("require", NO_BWRAP) == (
        'commands refused: shell_sandbox = "require" and bubblewrap (bwrap) is not installed'
    )


def test_settings(tmp_path: Path) -> None:
    config = tmp_path / "gatehouse.toml"
    config.write_text(
        '[tools]\nshell_sandbox = "require"\nshell_env = ["JAVA_HOME"]\nshell_show = ["~/.cargo"]\n'
        "shell_memory_mb = 1024\nshell_max_processes = 64\n"
    )
    s = load_settings(config, env={})
    assert (
        s.shell_sandbox,
        s.shell_env,
        s.shell_show,
        s.shell_memory_mb,
        s.shell_max_processes,
    ) == ("require", ["JAVA_HOME"], ["~/.cargo"], 1024, 64)
    assert load_settings(config, env={"GATEHOUSE_SHELL_SANDBOX": "off"}).shell_sandbox == "off"
    config.write_text('[tools]\nshell_sandbox = "maybe"\n')
    with pytest.raises(ConfigError, match="shell_sandbox must be auto, require or off"):
        load_settings(config, env={})


# -- how the mounts layer ----------------------------------------------------------


def test_workspace_inside_the_hidden_home_is_there_and_writable(
    site: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = site / "home"
    (home / "project").mkdir(parents=True)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = abc\n")
    monkeypatch.setenv("HOME", str(home))
    ws = Workspace(home / "project")
    out = shell("sandbox", ws).invoke(
        {"command": "echo built > out.txt && cat out.txt && ls -A ~ && cat ~/.aws/credentials"}
    )
    assert out.startswith("built\nproject\n") and "aws_secret" not in out
    assert (home / "project" / "out.txt").read_text() == "built\n"


def test_show_exposes_a_folder_of_the_hidden_home_read_only(
    site: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home = site / "home"
    tools_dir = home / ".cargo" / "bin"
    tools_dir.mkdir(parents=True)
    (tools_dir / "mytool").write_text("#!/bin/sh\necho my tool runs\n")
    (tools_dir / "mytool").chmod(0o755)
    (home / ".netrc").write_text("password hidden\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{tools_dir}:{os.environ['PATH']}")
    ws = Workspace(site / "workspace")
    out = shell("sandbox", ws, show=["~/.cargo"]).invoke(
        {"command": "mytool; touch ~/.cargo/x; cat ~/.netrc"}
    )
    assert (
        out.startswith("my tool runs\n")
        and "Read-only file system" in out
        and "password" not in out
    )


def test_listed_commands_cannot_write_the_workspace(site: Path) -> None:  # noqa: F811
    """An allow-list entry for a program that runs workspace content (here `make`,
    with a Makefile the agent wrote) still cannot change anything."""
    ws = Workspace(site / "workspace")
    (ws.root / "Makefile").write_text("all:\n\techo planted > planted.txt\n")
    for mode in ("sandbox", "fallback"):
        tool = shell(mode, ws, allow=["make"])
        assert tool.metadata["gatehouse"].auto_allow({"command": "make"})  # type: ignore[index]
        out = tool.invoke({"command": "make"})
        outcome(mode, (ws.root / "planted.txt").exists(), fallback_stops=False, evidence=out)
        (ws.root / "planted.txt").unlink(missing_ok=True)


def test_arguments_layer_private_places_then_hidden_then_workspace(tmp_path: Path) -> None:
    box = Bubblewrap(
        tmp_path / "home" / "me" / "ws",
        support=Support("/usr/bin/bwrap", version="0.8.0", disable_userns=True),
        hide=[tmp_path / "home" / "me" / "ws" / "state"],
    )
    (tmp_path / "home" / "me" / "ws" / "state").mkdir(parents=True)
    args = box.arguments(
        Access(writable=False, network=True), [tmp_path / "home" / "me", tmp_path / "home"]
    )
    joined = " ".join(args)
    assert "--share-net" in args and "--disable-userns" in args and "--cap-drop ALL" in joined
    order = [
        args.index(x)
        for x in (
            f"{tmp_path}/home",
            f"{tmp_path}/home/me",
            f"{tmp_path}/home/me/ws",
            f"{tmp_path}/home/me/ws/state",
        )
    ]
    assert order == sorted(
        order
    )  # outer hidden first, then the home, the workspace, what is hidden inside it
    assert args[args.index(f"{tmp_path}/home/me/ws") - 1] == "--ro-bind"


def test_benchmark_runs_and_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    """Keeps `python -m bench.sandbox` runnable; the speed target is the benchmark's."""
    sandbox_for("sandbox", Path("/"))  # skips when there is no bubblewrap
    from bench.sandbox import main

    assert main(["--runs", "3"]) in (0, 2)  # 2: ran, but missed the target on a busy machine
    out = capsys.readouterr().out
    assert "sandbox overhead (sandbox - bash)" in out and "run_command git status (listed)" in out

"""Allow-listed git commands never run a program the repository names (issue 16).

A workspace may hold an untrusted `.git/`: each known way a repository makes
`git status` / `git diff` / `git log` run a program is set up in a real repository,
shown to work with plain git (the control), and then tried through run_command,
where the command runs without approval. Nothing may run, with the sandbox (read-only
workspace + git hardening) and without one (git hardening alone).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gatehouse.graph import Policy
from gatehouse.graph.service.config import DEFAULT_SHELL_ALLOW
from gatehouse.tools.workspace import Workspace
from tests.support.sandboxing import MODES, outcome, shell

PWNED = "GATEHOUSE-PWNED"
PLAIN_GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_DATE": "2020-01-01T00:00:00",
}


class Repo:
    """A repository in the workspace with two commits, a modified file and an
    executable `.git/evil.sh` that leaves a marker when anything runs it."""

    def __init__(self, root: Path, tmp: Path) -> None:
        self.root = root
        self.tmp = tmp
        self.marker = root / "pwned-marker"
        self.evil = root / ".git" / "evil.sh"
        self._tick = 0

    def git(
        self, *args: str, cwd: Path | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = {"PATH": os.environ["PATH"], "HOME": str(self.tmp), **PLAIN_GIT_ENV,
               "GIT_COMMITTER_DATE": "2020-01-01T00:00:00"}  # fmt: skip
        return subprocess.run(
            ["git", *args],
            cwd=cwd or self.root,
            env=env,
            capture_output=True,
            text=True,
            check=check,
        )

    def create(self) -> Repo:
        self.git("init", "-q")
        self.git("config", "user.email", "dev@example.com")
        self.git("config", "user.name", "Dev")
        (self.root / "a.txt").write_text("one\n")
        (self.root / "b.txt").write_text("steady\n")
        self.git("add", ".")
        self.git("commit", "-qm", "first")
        (self.root / "a.txt").write_text("one\ntwo\n")
        self.git("commit", "-qam", "second")
        (self.root / "a.txt").write_text("one\ntwo\nthree\n")  # a change for `git diff`
        self.evil.write_text(f"#!/bin/sh\necho {PWNED} >&2\ntouch '{self.marker}'\nexit 0\n")
        self.evil.chmod(0o755)
        return self

    def attributes(self, line: str) -> None:
        with (self.root / ".gitattributes").open("a") as fh:
            fh.write(line + "\n")

    def dirty_stat(self) -> None:
        """Same content, new mtime: git must read the file again (through filters)
        and would rewrite the index (running post-index-change)."""
        self._tick += 10
        t = time.time() + self._tick
        os.utime(self.root / "b.txt", (t, t))

    def fired(self) -> bool:
        return self.marker.exists()


def fsmonitor(r: Repo) -> None:
    r.git("config", "core.fsmonitor", str(r.evil))


def diff_external(r: Repo) -> None:
    r.git("config", "diff.external", str(r.evil))


def textconv(r: Repo) -> None:
    r.attributes("*.txt diff=conv")
    r.git("config", "diff.conv.textconv", str(r.evil))


def diff_driver_command(r: Repo) -> None:
    r.attributes("*.txt diff=ext")
    r.git("config", "diff.ext.command", str(r.evil))


def clean_filter(r: Repo) -> None:
    r.attributes("*.txt filter=tidy")
    r.git("config", "filter.tidy.clean", str(r.evil))


def process_filter(r: Repo) -> None:
    r.attributes("*.txt filter=proc")
    r.git("config", "filter.proc.process", str(r.evil))


def hooks(r: Repo) -> None:
    hook_dir = r.root / ".git" / "hooks"
    hook_dir.mkdir(exist_ok=True)
    (hook_dir / "post-index-change").write_bytes(r.evil.read_bytes())
    (hook_dir / "post-index-change").chmod(0o755)


def hooks_path(r: Repo) -> None:
    elsewhere = r.root / "tools"
    elsewhere.mkdir()
    (elsewhere / "post-index-change").write_bytes(r.evil.read_bytes())
    (elsewhere / "post-index-change").chmod(0o755)
    r.git("config", "core.hooksPath", str(elsewhere))


def include(r: Repo) -> None:
    (r.root / ".git" / "extra.cfg").write_text(f"[core]\n\tfsmonitor = {r.evil}\n")
    r.git("config", "include.path", "extra.cfg")


def gpg(r: Repo) -> None:
    """A commit with a (fake) signature, and log showing signatures via gpg.program."""
    tree = r.git("write-tree").stdout.strip()
    head = r.git("rev-parse", "HEAD").stdout.strip()
    body = (
        f"tree {tree}\nparent {head}\nauthor Dev <dev@example.com> 1577836800 +0000\n"
        "committer Dev <dev@example.com> 1577836800 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEz\n"
        " -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    sha = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=r.root, input=body,
                         capture_output=True, text=True, check=True, env={**os.environ, **PLAIN_GIT_ENV}).stdout.strip()  # fmt: skip
    r.git("update-ref", "HEAD", sha)
    r.git("config", "log.showSignature", "true")
    r.git("config", "gpg.program", str(r.evil))


def submodule(r: Repo) -> None:
    source = r.tmp / "library"
    source.mkdir()
    lib = Repo(source, r.tmp)
    lib.git("init", "-q")
    lib.git(
        "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "lib"
    )
    r.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "lib")
    r.git("commit", "-qm", "add lib")
    r.git("config", "core.fsmonitor", str(r.evil), cwd=r.root / "lib")


VECTORS: dict[str, tuple[Callable[[Repo], None], list[str]]] = {
    "core.fsmonitor": (fsmonitor, ["git status", "git diff"]),
    "diff.external": (diff_external, ["git diff"]),
    "textconv driver": (textconv, ["git diff", "git log -p"]),
    "external diff driver": (diff_driver_command, ["git diff"]),
    "clean filter": (clean_filter, ["git status", "git diff"]),
    "process filter": (process_filter, ["git status"]),
    "post-index-change hook": (hooks, ["git status"]),
    "core.hooksPath": (hooks_path, ["git status"]),
    "include.path": (include, ["git status"]),
    "gpg.program + log.showSignature": (gpg, ["git log"]),
    "submodule's core.fsmonitor": (submodule, ["git status"]),
}
CASES = [(v, c) for v, (_, commands) in VECTORS.items() for c in commands]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "workspace")


def free(tool: object, command: str) -> bool:
    return (
        Policy.from_mapping({}).evaluate("run_command", {"command": command}, tool, []).mode
        == "allow"
    )  # type: ignore[arg-type]


@pytest.mark.parametrize("vector,command", CASES, ids=[f"{v}: {c}" for v, c in CASES])
def test_repository_cannot_make_an_allow_listed_command_run_a_program(
    mode: str, ws: Workspace, tmp_path: Path, vector: str, command: str
) -> None:
    tool = shell(mode, ws, allow=DEFAULT_SHELL_ALLOW)
    repo = Repo(ws.root, tmp_path).create()
    VECTORS[vector][0](repo)

    repo.dirty_stat()
    plain = repo.git(*command.split()[1:], check=False)
    assert repo.fired(), (
        f"control: plain `{command}` did not run the program\n{plain.stdout}{plain.stderr}"
    )
    repo.marker.unlink()

    repo.dirty_stat()
    assert free(tool, command)  # runs without anyone approving it
    out = tool.invoke({"command": command})
    outcome(mode, repo.fired() or PWNED in out, fallback_stops=True, evidence=out)


def test_a_bare_repository_planted_as_the_workspace_is_not_used(
    mode: str, ws: Workspace, tmp_path: Path
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    gpg(Repo(source, tmp_path).create())
    Repo(ws.root, tmp_path).git("clone", "-q", "--bare", str(source), ".")
    bare = Repo(ws.root, tmp_path)
    bare.marker = ws.root / "pwned-marker"
    evil = ws.root / "evil.sh"
    evil.write_text(f"#!/bin/sh\necho {PWNED} >&2\ntouch '{bare.marker}'\n")
    evil.chmod(0o755)
    bare.git("config", "log.showSignature", "true")
    bare.git("config", "gpg.program", str(evil))
    bare.git("log", check=False)
    assert bare.fired(), "control: plain `git log` in the bare repository did not run gpg.program"
    bare.marker.unlink()

    out = shell(mode, ws, allow=DEFAULT_SHELL_ALLOW).invoke({"command": "git log"})
    outcome(mode, bare.fired() or PWNED in out, fallback_stops=True, evidence=out)


def test_every_vector_at_once_and_every_listed_git_command(
    mode: str, ws: Workspace, tmp_path: Path
) -> None:
    """Including the ones these commands do not reach today (pager, ssh, editor,
    credential helper): the hardening sets them anyway."""
    tool = shell(mode, ws, allow=DEFAULT_SHELL_ALLOW)
    repo = Repo(ws.root, tmp_path).create()
    for setup in (fsmonitor, diff_external, textconv, clean_filter, hooks, include, gpg):
        setup(repo)
    for key in ("core.pager", "pager.status", "pager.log", "pager.diff", "core.sshCommand", "core.editor",
                "sequence.editor", "credential.helper", "core.askPass", "core.alternateRefsCommand"):  # fmt: skip
        repo.git("config", key, str(repo.evil))
    repo.marker.unlink(missing_ok=True)  # set off by the setup's own plain git calls
    for command in ("git status", "git status --short", "git diff", "git diff HEAD~1", "git diff --stat",
                    "git log", "git log -p", "git log --stat --oneline", "git log --show-signature"):  # fmt: skip
        repo.dirty_stat()
        assert free(tool, command), command
        out = tool.invoke({"command": command})
        assert out.endswith("[exit code 0]"), out
        outcome(
            mode, repo.fired() or PWNED in out, fallback_stops=True, evidence=f"{command}\n{out}"
        )


def test_hardened_git_still_shows_the_repository(mode: str, ws: Workspace, tmp_path: Path) -> None:
    repo = Repo(ws.root, tmp_path).create()
    textconv(repo)
    tool = shell(mode, ws, allow=DEFAULT_SHELL_ALLOW)
    status = tool.invoke({"command": "git status --short"})
    assert "M a.txt" in status and status.endswith("[exit code 0]")
    diff = tool.invoke({"command": "git diff"})
    assert "+three" in diff and diff.endswith("[exit code 0]")
    log = tool.invoke({"command": "git log --oneline"})
    assert "second" in log and "first" in log


def test_a_config_that_cannot_be_listed_stops_the_command(
    mode: str, ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An include that never ends (a FIFO): without the list of drivers, git does not run."""
    import gatehouse.tools.allowlist as allowlist

    repo = Repo(ws.root, tmp_path).create()
    clean_filter(repo)
    fifo = ws.root / ".git" / "never.cfg"
    os.mkfifo(fifo)
    repo.git("config", "include.path", "never.cfg")
    tool = shell(mode, ws, allow=DEFAULT_SHELL_ALLOW)
    repo.dirty_stat()
    monkeypatch.setattr(allowlist, "GIT_CONFIG_TIMEOUT_S", 0.5)
    with pytest.raises(
        allowlist.GitConfigUnreadable, match="cannot read the repository's git config"
    ):
        tool.invoke({"command": "git status"})
    assert not repo.fired()


# -- a repository that points git outside the workspace (issue 29, item 10) -------


def passwd_tracked(r: Repo) -> None:
    """A tracked file named like one in /etc, and core.worktree pointing there: `git
    diff` then compares the index with /etc/passwd and prints it."""
    (r.root / "passwd").write_text("nothing\n")
    r.git("add", "passwd")
    r.git("commit", "-qm", "passwd")
    r.git("config", "core.worktree", "/etc")


def test_core_worktree_cannot_make_git_diff_print_files_outside(
    mode: str, ws: Workspace, tmp_path: Path
) -> None:
    repo = Repo(ws.root, tmp_path).create()
    passwd_tracked(repo)
    root_line = Path("/etc/passwd").read_text().splitlines()[0]
    plain = repo.git("diff", check=False)
    assert root_line in plain.stdout, "control: plain `git diff` prints /etc/passwd"
    tool = shell(mode, ws, allow=DEFAULT_SHELL_ALLOW)
    for command in ("git diff", "git status", "git log -p", "git diff --stat"):
        assert free(tool, command)
        with pytest.raises(Exception, match="core.worktree") as caught:
            tool.invoke({"command": command})
        assert root_line not in str(caught.value)


def test_a_git_folder_outside_the_workspace_is_refused(
    mode: str, ws: Workspace, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    Repo(elsewhere, tmp_path).create()
    (ws.root / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    tool = shell(mode, ws, allow=DEFAULT_SHELL_ALLOW)
    with pytest.raises(Exception, match="git folder is .*outside the workspace"):
        tool.invoke({"command": "git log"})
    (ws.root / ".git").unlink()
    (ws.root / ".git").symlink_to(elsewhere / ".git")
    with pytest.raises(Exception, match="outside the workspace"):
        tool.invoke({"command": "git log -p"})


def test_git_never_finds_a_repository_above_the_workspace(mode: str, tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    outer.mkdir()
    Repo(outer, tmp_path).create()
    ws = Workspace(outer / "inner" / "workspace")
    out = shell(mode, ws, allow=DEFAULT_SHELL_ALLOW).invoke({"command": "git log"})
    assert "second" not in out and "not a git repository" in out, out


def test_alternates_and_includes_outside_the_workspace_are_refused(
    mode: str, ws: Workspace, tmp_path: Path
) -> None:
    repo = Repo(ws.root, tmp_path).create()
    other = tmp_path / "other"
    other.mkdir()
    Repo(other, tmp_path).create()
    tool = shell(mode, ws, allow=DEFAULT_SHELL_ALLOW)
    alternates = ws.root / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(f"{other / '.git' / 'objects'}\n")
    with pytest.raises(Exception, match="borrows objects"):
        tool.invoke({"command": "git log"})
    alternates.unlink()
    (tmp_path / "outside.cfg").write_text("[user]\n\tname = x\n")
    repo.git("config", "include.path", str(tmp_path / "outside.cfg"))
    with pytest.raises(Exception, match="includes .*outside.cfg"):
        tool.invoke({"command": "git status"})
    repo.git("config", "--unset", "include.path")
    assert tool.invoke({"command": "git status --short"}).endswith("[exit code 0]")


def test_the_worktree_attack_through_the_agent(ws: Workspace, tmp_path: Path) -> None:
    """The model runs the allow-listed `git diff` with no card: it gets the refusal,
    never /etc/passwd."""
    from langchain_core.messages import ToolMessage

    from gatehouse.graph import ScriptedModel, Session, ai, build_graph, tool_call
    from gatehouse.graph.store import open_storage

    repo = Repo(ws.root, tmp_path).create()
    passwd_tracked(repo)
    tool = shell("fallback", ws, allow=DEFAULT_SHELL_ALLOW)
    storage = open_storage(str(tmp_path / "g.db"))
    graph = build_graph(
        model=ScriptedModel(
            script=[ai("", tool_call("run_command", {"command": "git diff"}, "g1")), "ok"]
        ),
        tools=[tool],
        checkpointer=storage.checkpointer,
        journal=storage.journal,
        decisions=storage.decisions,
    )
    session = Session(graph, storage, [tool])
    events = session.send("t1", "diff").collect()
    assert events[-1].status == "completed" and not any(
        e.type == "approval_required" for e in events
    )
    result = next(m for m in session.view("t1").messages if isinstance(m, ToolMessage))
    assert "core.worktree" in str(result.content)
    assert Path("/etc/passwd").read_text().splitlines()[0] not in str(result.content)

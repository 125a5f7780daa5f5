"""Deletes and moves work through directory fds (issue 29, item 9): a parent folder
swapped for a symlink between the check and the delete never makes Gatehouse delete
or move anything outside the workspace. A thread swaps the folder in a loop while
the tool runs, over many trials (bounded in time); then the same race through the
graph, an approved command doing the swapping in the same turn as the delete."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

from langchain_core.messages import ToolMessage

from gatehouse.graph import ScriptedModel, Session, ai, build_graph, tool_call
from gatehouse.graph.store import open_storage
from gatehouse.tools.files import make_file_tools
from gatehouse.tools.sandbox import choose_sandbox
from gatehouse.tools.shell import make_shell_tool
from gatehouse.tools.workspace import PathError, Workspace

TRIALS = 300
TIME_BUDGET_S = 4.0


def plant(folder: Path, tag: str) -> None:
    (folder / "child" / "sub").mkdir(parents=True, exist_ok=True)
    for name in ("child/a.txt", "child/b.txt", "child/sub/c.txt"):
        (folder / name).write_text(tag)


def outside_intact(outside: Path) -> bool:
    names = ("child/a.txt", "child/b.txt", "child/sub/c.txt")
    return all((outside / n).is_file() and (outside / n).read_text() == "precious" for n in names)


class Swapper(threading.Thread):
    """Swaps `ws/p` for a symlink to `outside` and back, as fast as it can."""

    def __init__(self, root: Path, outside: Path) -> None:
        super().__init__(daemon=True)
        self.p, self.real, self.outside = root / "p", root / "p_real", outside
        self.stop = threading.Event()
        self.swaps = 0
        self.hold_s = 0.0005

    def run(self) -> None:
        # Each state is held a moment (an attacker's loop with work in between), so a
        # check and an act can both fall into the same state.
        while not self.stop.is_set():
            with contextlib.suppress(OSError):
                os.rename(self.p, self.real)
                os.symlink(self.outside, self.p)
                self.stop.wait(self.hold_s)
                os.unlink(self.p)
                os.rename(self.real, self.p)
                self.swaps += 1
                self.stop.wait(self.hold_s)

    def finish(self) -> None:
        self.stop.set()
        self.join()
        restore(self.p.parent)


def restore(root: Path) -> None:
    """Put `p` back where a swap left it half-done."""
    p, real = root / "p", root / "p_real"
    if p.is_symlink():
        p.unlink()
    if real.exists() and not p.exists():
        os.rename(real, p)


def test_a_parent_swapped_for_a_symlink_never_leads_a_delete_or_move_outside(
    tmp_path: Path,
) -> None:
    ws = Workspace(tmp_path / "ws")
    outside = tmp_path / "outside"
    plant(outside, "precious")
    tools = {t.name: t for t in make_file_tools(ws)}
    deadline = time.monotonic() + TIME_BUDGET_S
    trials = deleted = refused = swaps = 0
    while trials < TRIALS and time.monotonic() < deadline:
        trials += 1
        plant(ws.root / "p", "workspace")
        swapper = Swapper(ws.root, outside)
        swapper.start()
        try:
            if trials % 2:
                tools["delete_file"].invoke({"path": "p/child", "recursive": True})
            else:
                tools["move_file"].invoke({"source": "p/child/a.txt", "destination": "moved.txt"})
            deleted += 1
        except (PathError, OSError):
            refused += 1
        finally:
            swapper.finish()
            swaps += swapper.swaps
        assert outside_intact(outside), (
            f"trial {trials}: a file outside the workspace was deleted or moved"
        )
        assert (
            not (ws.root / "moved.txt").exists()
            or (ws.root / "moved.txt").read_text() == "workspace"
        )
        with contextlib.suppress(FileNotFoundError):
            (ws.root / "moved.txt").unlink()
    # Measured here: 255 trials, 381 swaps, 182 done, 73 refused (the old code deleted
    # outside the workspace in every run, at trial 65, 115 and 195 of three).
    assert trials >= 20 and swaps >= trials // 2, "the race really ran"
    assert deleted > 0, "the tools still work while nothing is swapped"


def test_the_swap_race_through_the_graph_with_an_approved_command(tmp_path: Path) -> None:
    # As in the issue: not sandboxed, the command in the same turn swaps the parent.
    ws = Workspace(tmp_path / "ws")
    outside = tmp_path / "outside"
    plant(outside, "precious")
    shell = make_shell_tool(ws, sandbox=choose_sandbox("off", ws.root))
    swap = "for i in $(seq 80); do mv p p_real && ln -s ../outside p && rm p && mv p_real p; done"
    rounds = 2
    script = []
    for i in range(rounds):
        script += [
            ai(
                "",
                tool_call("run_command", {"command": swap}, f"s{i}"),
                tool_call("delete_file", {"path": "p/child", "recursive": True}, f"d{i}"),
            ),
            "done",
        ]
    storage = open_storage(str(tmp_path / "g.db"))
    graph = build_graph(
        model=ScriptedModel(script=script),
        tools=[*make_file_tools(ws), shell],
        checkpointer=storage.checkpointer,
        journal=storage.journal,
        decisions=storage.decisions,
    )
    session = Session(graph, storage, [*make_file_tools(ws), shell])
    for i in range(rounds):
        plant(ws.root / "p", "workspace")
        session.send("t1", f"round {i}").collect()
        events = session.resume(
            "t1", {"decisions": [{"type": "approve"}, {"type": "approve"}]}
        ).collect()
        assert events[-1].status == "completed"
        assert outside_intact(outside)
        result = {
            m.tool_call_id: str(m.content)
            for m in session.view("t1").messages
            if isinstance(m, ToolMessage)
        }[f"d{i}"]
        assert result.startswith(("deleted folder p/child/", "Error")), result
        restore(ws.root)  # a swap the command left half-done

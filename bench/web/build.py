"""Long threads for the browser benchmark, built through the Session API and cached.

Each turn is what a working session looks like: the user writes (~200 bytes), the
model calls `write_file` (gated: approved through `Session.resume`) and `read_file`
(free) in one message, both tools answer, and the model answers in ~200 bytes of
text. Five messages a turn. The tools are the app's real ones (graph/service/toolset.py),
so the web app draws the history exactly as it draws a thread a person made; the
model is scripted (no network, no sleeps) so 2,000 turns build in a couple of minutes.

A built thread is kept as one SQLite file per size in bench/results/web-cache/
(git-ignored), keyed by size and FORMAT. Bump FORMAT whenever what a turn holds
changes, so an old cache is never measured as if it were new.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from gatehouse.graph import ScriptedModel, Settings, ai, tool_call

FORMAT = 1
ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "bench" / "results" / "web-cache"
PAYLOAD_BYTES = 200
APPROVE = {"decisions": [{"type": "approve"}]}
# Seeded in every workspace: the free read of each turn returns it.
NOTES = (
    "# Notes\n"
    + "Remember the milk, the bread and the eggs; call the plumber on Tuesday. " * 2
    + "\n"
)


def payload(kind: str, turn: int) -> str:
    """About PAYLOAD_BYTES of text, unique per turn: `answer 00042: lorem …`.
    Zero-padded so one turn's marker is never a prefix of another's."""
    head = f"{kind} {turn:05d}: "
    filler = "lorem ipsum dolor sit amet consectetur adipiscing elit "
    return head + (filler * (PAYLOAD_BYTES // len(filler) + 1))[: PAYLOAD_BYTES - len(head)]


def last_message_marker(turns: int) -> str:
    """Text of the thread's last message (the last turn's answer) that the page must show."""
    return payload("answer", turns)


def thread_id_for(turns: int) -> str:
    return f"web-bench-{turns}"


def _reply(messages: list[BaseMessage]) -> AIMessage:
    turn = sum(1 for m in messages if isinstance(m, HumanMessage))
    if isinstance(messages[-1], ToolMessage):
        return ai(payload("answer", turn))
    return ai(
        "",
        tool_call(
            "write_file",
            {"path": f"turns/turn-{turn:05d}.md", "content": payload("note", turn)},
            f"write-{turn:05d}",
        ),
        tool_call("read_file", {"path": "notes.md"}, f"read-{turn:05d}"),
    )


class _TurnModel(ScriptedModel):
    """Every reply comes from `_reply`, at any thread length (no script to run out of)."""

    def reply(self, messages: list[BaseMessage]) -> AIMessage:
        return _reply(messages)


def seed_workspace(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "notes.md").write_text(NOTES)
    return path


@dataclass(frozen=True)
class BuiltThread:
    turns: int
    thread_id: str
    db: Path  # the cached file: copy it before serving (the app writes to it)
    messages: int
    build_s: float

    def copy_to(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "gatehouse.db"
        shutil.copyfile(self.db, target)
        return target


def build_thread(turns: int, db: Path, *, progress: bool = False) -> int:
    """Build a thread of `turns` turns into a new SQLite file `db`; returns its messages."""
    from gatehouse.graph import open_session

    with tempfile.TemporaryDirectory(prefix="gh-web-build-") as tmp:
        workspace = seed_workspace(Path(tmp) / "workspace")
        session = open_session(
            Settings(db=str(db), workspace=str(workspace), compaction=False),
            model=_TurnModel(chunk_chars=64),
        )
        thread_id = thread_id_for(turns)
        started = time.monotonic()
        try:
            for turn in range(1, turns + 1):
                run = session.send(thread_id, payload("user", turn))
                run.collect()
                if run.status != "awaiting_approval":
                    raise RuntimeError(
                        f"turn {turn}: expected an approval request, got {run.status}"
                    )
                run = session.resume(thread_id, APPROVE)
                run.collect()
                if run.status != "completed":
                    raise RuntimeError(
                        f"turn {turn}: expected the turn to complete, got {run.status}"
                    )
                if progress and (turn % 250 == 0 or turn == turns):
                    print(
                        f"[web-bench] built {turn}/{turns} turns in {time.monotonic() - started:.0f} s",
                        flush=True,
                    )
            count = len(session.view(thread_id).messages)
        finally:
            session.close()
    # Fold the WAL into the file so one file is the whole database.
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return count


def cached_thread(turns: int, cache: Path = CACHE, *, progress: bool = True) -> BuiltThread:
    """The thread of `turns` turns from the cache, built first when missing or stale."""
    cache.mkdir(parents=True, exist_ok=True)
    db = cache / f"thread-{turns}-v{FORMAT}.db"
    meta_path = db.with_suffix(".json")
    if db.is_file() and meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if meta.get("format") == FORMAT and meta.get("turns") == turns:
            return BuiltThread(turns, meta["thread_id"], db, meta["messages"], meta["build_s"])
    partial = db.with_suffix(".partial")
    for leftover in cache.glob(partial.name + "*"):
        leftover.unlink()
    started = time.monotonic()
    if progress:
        print(f"[web-bench] building a {turns}-turn thread (cached in {cache}) ...", flush=True)
    messages = build_thread(turns, partial, progress=progress)
    build_s = time.monotonic() - started
    partial.replace(db)
    for leftover in cache.glob(partial.name + "*"):  # -wal / -shm of the build
        leftover.unlink()
    meta = {
        "format": FORMAT,
        "turns": turns,
        "thread_id": thread_id_for(turns),
        "messages": messages,
        "build_s": round(build_s, 1),
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return BuiltThread(turns, thread_id_for(turns), db, messages, build_s)

"""A thread's branches from its checkpoint tree (undo and fork start a checkpoint from
an older one): two tips ("leaves") whose messages agree up to index i and differ there
in a user message are two versions of it, ordered by path (checkpoint ids grow).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig

from gatehouse.graph.protocol.threads import Branches, MessageView
from gatehouse.graph.service.transcript import message_view
from gatehouse.graph.store.reader import ThreadReader

CACHED = 256  # threads' answers and tips' messages kept per process


@dataclass(frozen=True)
class Tip:
    """The end of a branch: a checkpoint no other checkpoint continues from."""

    checkpoint_id: str
    path: tuple[str, ...]  # checkpoint ids from the thread's first to this one


def forked(edges: Sequence[tuple[str, str | None]]) -> bool:
    """Whether a checkpoint tree has more than one tip (a checkpoint continued twice)."""
    return len({parent for _, parent in edges}) < len(edges)


def tips_of(edges: Iterable[tuple[str, str | None]]) -> list[Tip]:
    """The tips of a tree of (checkpoint id, parent id) pairs, oldest branch first."""
    parent = dict(edges)
    continued = set(parent.values())
    tips = []
    for checkpoint_id in parent:
        if checkpoint_id in continued:
            continue
        path: list[str] = []
        at: str | None = checkpoint_id
        while at is not None and len(path) <= len(parent):  # the bound guards a damaged tree
            path.append(at)
            at = parent.get(at)
        tips.append(Tip(checkpoint_id, tuple(reversed(path))))
    return sorted(tips, key=lambda t: t.path)


def _is_user(message: MessageView) -> bool:
    """Written by the person (a compaction summary is not)."""
    return message.role == "user" and not message.summary


def first_user(transcript: Sequence[MessageView]) -> str | None:
    return next((m.content for m in transcript if _is_user(m)), None)


def _parting(a: Sequence[MessageView], b: Sequence[MessageView]) -> int:
    """The first index where the two message lists differ."""
    differ = (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x.id != y.id)
    return next(differ, min(len(a), len(b)))


@dataclass(frozen=True)
class Version:
    """One version of a user message and the latest tip of its branch."""

    message: MessageView
    tip: Tip


def branches_of(head: Sequence[MessageView], versions: dict[int, list[Version]]) -> list[Branches]:
    """At each branching user message, its versions and which one the head is on."""
    out = []
    for i in sorted(versions):
        ids = tuple(v.message.id or "" for v in versions[i])
        out.append(
            Branches(
                index=i,
                message_ids=ids,
                current=ids.index(head[i].id or ""),
                previews=tuple(" ".join(v.message.content.split())[:80] for v in versions[i]),
            )
        )
    return out


def at_checkpoint(thread_id: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": checkpoint_id,
        }
    }


class ThreadTree:
    """A Session's reads of its threads' checkpoint trees."""

    def __init__(self, agent: Any, reader: ThreadReader | None) -> None:
        self.agent = agent
        self.reader = reader
        self._lock = threading.Lock()
        self._tip_messages: dict[tuple[str, str], list[MessageView]] = {}
        self._answers: dict[str, tuple[str | None, list[Branches]]] = {}

    def latest(self, thread_id: str) -> str | None:
        if self.reader is not None:
            return self.reader.latest_checkpoint(thread_id)
        saved = self.agent.checkpointer.get_tuple({"configurable": {"thread_id": thread_id}})
        return None if saved is None else saved.config["configurable"]["checkpoint_id"]

    def edges(self, thread_id: str) -> list[tuple[str, str | None]]:
        if self.reader is not None:
            return self.reader.checkpoint_edges(thread_id)
        saved = self.agent.checkpointer.list({"configurable": {"thread_id": thread_id}})
        return [
            (
                c.config["configurable"]["checkpoint_id"],
                c.parent_config["configurable"]["checkpoint_id"] if c.parent_config else None,
            )
            for c in saved
            if not c.config["configurable"].get("checkpoint_ns")
        ]

    def head_path(self, thread_id: str) -> set[str]:
        """The checkpoints the thread's current branch runs through."""
        tips = tips_of(self.edges(thread_id))
        return set(max(tips, key=lambda t: t.checkpoint_id).path) if tips else set()

    def messages_at(self, thread_id: str, checkpoint_id: str) -> list[MessageView]:
        # Checkpoints never change: each tip's messages are read once per process.
        key = (thread_id, checkpoint_id)
        with self._lock:
            cached = self._tip_messages.get(key)
        if cached is None:
            values = self.agent.get_state(at_checkpoint(thread_id, checkpoint_id)).values or {}
            cached = [message_view(m) for m in values.get("messages", [])]
            with self._lock:
                _keep(self._tip_messages, key, cached)
        return cached

    def versions(
        self, thread_id: str, head: Sequence[MessageView], edges: Sequence[tuple[str, str | None]]
    ) -> dict[int, list[Version]]:
        """Each index of the current branch (`head`, its messages) of a forked tree where
        another branch holds a different user message: its versions, oldest first."""
        tips = tips_of(edges)
        head_tip = max(tips, key=lambda t: t.checkpoint_id)
        found: dict[int, dict[str, Version]] = {}
        for tip in tips:
            if tip is head_tip:
                continue
            messages = self.messages_at(thread_id, tip.checkpoint_id)
            i = _parting(head, messages)
            if (
                i >= len(head)
                or i >= len(messages)
                or not (_is_user(head[i]) and _is_user(messages[i]))
            ):
                continue  # not an alternative to one of the head's messages
            versions = found.setdefault(i, {})
            known = versions.get(messages[i].id or "")
            # Tips can share a version (forked again later): switching leads to the latest.
            if known is None or tip.checkpoint_id > known.tip.checkpoint_id:
                versions[messages[i].id or ""] = Version(messages[i], tip)
        out = {}
        for i, versions in found.items():
            versions[head[i].id or ""] = Version(head[i], head_tip)
            out[i] = sorted(versions.values(), key=lambda v: v.tip.path)
        return out

    def branches(self, thread_id: str, head: Callable[[], Sequence[MessageView]]) -> list[Branches]:
        # Every change to the tree writes a new latest checkpoint: the answer holds till then.
        latest = self.latest(thread_id)
        with self._lock:
            known = self._answers.get(thread_id)
        if known is not None and known[0] == latest:
            return known[1]
        found: list[Branches] = []
        # Counted in the database first: an unforked thread's edges are never fetched.
        if self.reader is None or self.reader.tip_count(thread_id) > 1:
            edges = self.edges(thread_id)
            if forked(edges):
                messages = head()
                found = branches_of(messages, self.versions(thread_id, messages, edges))
        with self._lock:
            _keep(self._answers, thread_id, (latest, found))
        return found

    def branch_end(self, thread_id: str, version: Version) -> RunnableConfig:
        """The latest checkpoint of `version`'s branch that ended a run, else its first."""
        first = None
        for checkpoint_id in reversed(version.tip.path):
            snapshot = self.agent.get_state(at_checkpoint(thread_id, checkpoint_id))
            if version.message.id not in {
                m.id for m in (snapshot.values or {}).get("messages", [])
            }:
                break
            if not snapshot.next:
                return snapshot.config
            first = snapshot.config
        if first is None:
            raise ValueError(
                f"no checkpoint of thread {thread_id} holds message {version.message.id}"
            )
        return first


def _keep(cache: dict[Any, Any], key: Any, value: Any) -> None:
    cache[key] = value
    while len(cache) > CACHED:
        cache.pop(next(iter(cache)))

"""A thread's branches, read from the shape of its checkpoint tree.

Undo, fork, regenerate and Studio's time travel never delete anything: they start a
new checkpoint from an older one, so a thread's checkpoints form a tree whose leaves
("tips") are the ends of its branches, and the latest checkpoint is the head. Two tips
whose messages agree up to index i and hold different user messages there are two
versions of that message: the front ends show `< k/n >` on it and can move the head
to the other version's branch.

Order: versions are numbered in the order their branches were made. Checkpoint ids
grow with time and every branch lies in its own subtree, so comparing the tips'
root-to-tip paths checkpoint by checkpoint orders them exactly that way.

Only the tips' messages are read (once each: a checkpoint never changes), and only
when the thread has more than one tip, so a thread that was never forked costs one
query of checkpoint ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from graph.protocol.threads import Branches, MessageView


@dataclass(frozen=True)
class Tip:
    """The end of a branch: a checkpoint no other checkpoint continues from."""

    checkpoint_id: str
    path: tuple[str, ...]  # checkpoint ids from the thread's first to this one


def tips_of(edges: Iterable[tuple[str, str | None]]) -> list[Tip]:
    """The tips of a checkpoint tree given as (checkpoint id, parent id) pairs, oldest
    branch first."""
    parent = dict(edges)
    continued = set(parent.values())
    tips = []
    for checkpoint_id in parent:
        if checkpoint_id in continued:
            continue
        path, at = [], checkpoint_id
        while at is not None and len(path) <= len(parent):  # the bound guards a damaged tree
            path.append(at)
            at = parent.get(at)
        tips.append(Tip(checkpoint_id, tuple(reversed(path))))
    return sorted(tips, key=lambda t: t.path)


def _is_user(message: MessageView) -> bool:
    return message.role == "user" and not message.summary


def _parting(a: Sequence[MessageView], b: Sequence[MessageView]) -> int:
    """The first index where the two message lists differ."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x.id != y.id:
            return i
    return min(len(a), len(b))


@dataclass(frozen=True)
class Version:
    """One version of a user message and the latest tip of its branch."""

    message: MessageView
    tip: Tip


def versions_at(
    head: Sequence[MessageView], head_tip: Tip, others: Iterable[tuple[Tip, Sequence[MessageView]]]
) -> dict[int, list[Version]]:
    """For each index of `head` where another branch holds a different user message:
    every version there, oldest first (the head's own among them)."""
    found: dict[int, dict[str, Version]] = {}
    for tip, messages in others:
        i = _parting(head, messages)
        if i >= len(head) or i >= len(messages) or not (_is_user(head[i]) and _is_user(messages[i])):
            continue  # not an alternative to one of the head's messages
        versions = found.setdefault(i, {})
        known = versions.get(messages[i].id or "")
        # Several tips can share a version (it was forked again further on): the
        # latest one is where switching to it leads.
        if known is None or tip.checkpoint_id > known.tip.checkpoint_id:
            versions[messages[i].id or ""] = Version(messages[i], tip)
    out = {}
    for i, versions in found.items():
        versions[head[i].id or ""] = Version(head[i], head_tip)
        out[i] = sorted(versions.values(), key=lambda v: v.tip.path)
    return out


def branches_of(head: Sequence[MessageView], versions: dict[int, list[Version]]) -> list[Branches]:
    """What the front ends show: at each branching user message, its versions and
    which one the head is on."""
    out = []
    for i in sorted(versions):
        ids = tuple(v.message.id or "" for v in versions[i])
        out.append(Branches(
            index=i,
            message_ids=ids,
            current=ids.index(head[i].id or ""),
            previews=tuple(" ".join(v.message.content.split())[:80] for v in versions[i]),
        ))
    return out


__all__ = ["Tip", "Version", "branches_of", "tips_of", "versions_at"]

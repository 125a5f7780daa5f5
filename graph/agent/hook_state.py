"""What a hook gets as `state`, so nothing it does to it is silently lost: a deep copy
whose every difference becomes part of its update (appending to `state["messages"]` is
the Haystack way), or with `copy_state = False` a read-only view (no ~8 ms deep copy)."""

from __future__ import annotations

import copy
import operator
from collections.abc import Mapping
from typing import Any, NoReturn

from langchain_core.messages import BaseMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from gatehouse.graph.agent.state import HOOK_KEYS, MERGED_KEYS
from gatehouse.graph.protocol.errors import HookError


def copies_state(h: Any) -> bool:
    return getattr(h, "copy_state", True) is not False


def state_for(h: Any, state: Mapping[str, Any], point: str) -> dict[str, Any]:
    if copies_state(h):
        return copy.deepcopy(dict(state))
    return _ReadOnlyDict(state, f"{point} hook {h!r}")


def in_place_changes(
    h: Any, before: Mapping[str, Any], after: Mapping[str, Any], point: str
) -> dict[str, Any]:
    """The update a hook made by changing its copy (usage: what was added)."""
    if not copies_state(h):
        return {}
    changes: dict[str, Any] = {}
    if messages := message_changes(
        list(before.get("messages") or []), list(after.get("messages") or [])
    ):
        changes["messages"] = messages
    for key in (set(before) | set(after)) - {"messages"}:
        if key in after and key in before and after[key] == before[key]:
            continue
        if key not in HOOK_KEYS:
            raise HookError(
                f"{point} hook {h!r} changed state[{key!r}] in place; a hook may change only "
                f"{sorted(HOOK_KEYS)} (in place or in the update it returns)"
            )
        if key not in after:  # deleted: its empty value
            changes[key] = {} if key in MERGED_KEYS or key in ("usage", "run_usage") else None
            if key == "usage":
                raise HookError(
                    f"{point} hook {h!r} deleted state['usage']: a thread's usage can only grow"
                )
        elif key == "usage":
            changes[key] = _usage_added(h, before.get(key) or {}, after[key] or {}, point)
        else:
            changes[key] = after[key]
    return changes


def message_changes(before: list[Any], after: list[Any]) -> list[Any]:
    """A reducer update turning `before` into `after`: removals, edits and appends when
    kept messages stay in order; else `RemoveMessage(REMOVE_ALL_MESSAGES)` and all."""
    if len(before) == len(after) and all(map(operator.eq, before, after)):
        return []
    position = {
        m.id: i for i, m in enumerate(before) if isinstance(m, BaseMessage) and m.id is not None
    }
    if len(position) != len(before):
        return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *after]
    kept = [(i, m) for i, m in enumerate(after) if getattr(m, "id", None) in position]
    order = [position[m.id] for _, m in kept]
    last_kept = kept[-1][0] if kept else -1
    # Out of order (or twice), or a new message in between: the whole list again.
    if order != sorted(set(order)) or len(kept) != last_kept + 1:
        return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *after]
    kept_ids = {m.id for _, m in kept}
    removed = [RemoveMessage(id=m.id) for m in before if m.id not in kept_ids]
    edited = [m for _, m in kept if m != before[position[m.id]]]
    return [*removed, *edited, *after[last_kept + 1 :]]


def _usage_added(
    h: Any, before: Mapping[str, Any], after: Mapping[str, Any], point: str
) -> dict[str, float]:
    # `usage` sums what each step adds: an in-place change is the amount it added.
    added: dict[str, float] = {}
    for key in set(before) | set(after):
        old, new = before.get(key, 0), after.get(key, 0)
        if not isinstance(new, int | float) or not isinstance(old, int | float):
            raise HookError(f"{point} hook {h!r}: state['usage'][{key!r}] must be a number")
        if new != old:
            added[key] = new - old
    return added


def _frozen(value: Any, owner: str) -> Any:
    if isinstance(value, dict) and not isinstance(value, _ReadOnlyDict):
        return _ReadOnlyDict(value, owner)
    if isinstance(value, list) and not isinstance(value, _ReadOnlyList):
        return _ReadOnlyList(value, owner)
    return value


class _ReadOnly:
    _owner: str

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise HookError(
            f"{self._owner} changed the state in place, but it declares copy_state = False and gets a "
            "read-only view: return the change as an update instead (or drop copy_state = False)"
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return copy.deepcopy(self.copy(), memo)  # type: ignore[attr-defined]  # a plain one


class _ReadOnlyDict(_ReadOnly, dict):
    """A dict a hook may read like any other; changing it raises `HookError`."""

    def __init__(self, data: Mapping[str, Any], owner: str) -> None:
        super().__init__({k: _frozen(v, owner) for k, v in data.items()})
        self._owner = owner

    __setitem__ = __delitem__ = __ior__ = _ReadOnly._refuse
    update = pop = popitem = clear = setdefault = _ReadOnly._refuse

    def copy(self) -> dict[str, Any]:
        return dict(self)


class _ReadOnlyList(_ReadOnly, list):
    """A list a hook may read, slice and concatenate; changing it raises `HookError`."""

    def __init__(self, data: list[Any], owner: str) -> None:
        # A history holds no dicts or lists: checked by type in one pass, taken as is.
        if any(issubclass(kind, dict | list) for kind in set(map(type, data))):
            super().__init__(_frozen(v, owner) for v in data)
        else:
            super().__init__(data)
        self._owner = owner

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _ReadOnly._refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _ReadOnly._refuse

    def copy(self) -> list[Any]:
        return list(self)


def thaw(value: Any) -> Any:
    """Plain dicts and lists again (a read-only hook's update may hold parts of its view)."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, _ReadOnlyList):
        return [thaw(v) for v in value]
    return value

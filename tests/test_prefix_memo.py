"""What the model is sent, the ids the thread holds and compaction's count are carried
from one model call to the next (graph/agent/prefix_memo.py), and always equal what a
fresh pass over the whole history gives: after appends, edits, copies of the newest
messages, compactions and branches."""

from __future__ import annotations

import marshal
import random
from collections.abc import Sequence
from hashlib import blake2b
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from gatehouse.graph.agent import call_ids, history, model_call
from gatehouse.graph.agent.builtin_hooks import token_prefix
from gatehouse.graph.agent.prefix_memo import SHORT, PrefixMemo
from gatehouse.graph.protocol.threads import CUT_OFF_KEY, NOTICE_MARK, REASONING_KEY, SUMMARY_MARK


# -- the memo itself ---------------------------------------------------------------------
class Folds:
    """A memo that counts: its value is the list of items folded, and each fold's size."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.memo: PrefixMemo[tuple[Any, ...]] = PrefixMemo((), self.fold)

    def fold(self, value: tuple[Any, ...], more: Sequence[Any]) -> tuple[Any, ...]:
        self.sizes.append(len(more))
        return (*value, *more)


def items(n: int) -> list[object]:
    return [object() for _ in range(n)]


def test_a_longer_list_folds_only_what_was_added() -> None:
    folds = Folds()
    first = items(300)
    assert folds.memo(first) == tuple(first)
    folds.sizes.clear()
    longer = [*first, *items(3)]
    assert folds.memo(longer) == tuple(longer)
    assert sum(folds.sizes) == 3
    folds.sizes.clear()
    assert folds.memo(list(longer)) == tuple(longer)  # a copy: nothing to fold
    assert folds.sizes == []


def test_an_edit_or_a_copied_message_folds_from_where_the_lists_part() -> None:
    folds = Folds()
    first = items(300)
    folds.memo(first)
    edited = list(first)
    edited[100] = object()  # the same length, one message replaced: never taken for the old
    folds.sizes.clear()
    assert folds.memo(edited) == tuple(edited)
    assert sum(folds.sizes) == 300  # no remembered list is a prefix of it
    # The newest messages come back as copies (the saver reads a step's writes back):
    # the value kept TAIL messages before the end still serves.
    copied = [*first[:-2], object(), object(), *items(2)]
    folds.sizes.clear()
    assert folds.memo(copied) == tuple(copied)
    assert sum(folds.sizes) < 30


def test_a_list_with_no_remembered_prefix_folds_from_its_seed() -> None:
    """A compacted thread read in a new process: the fold starts at the latest summary."""
    sizes: list[int] = []

    def fold(value: int, more: Sequence[Any]) -> int:
        sizes.append(len(more))
        return value + len(more)

    memo = PrefixMemo(0, fold, seed=lambda messages: (len(messages) - 20, 1000))
    assert memo(items(500)) == 1020
    assert sum(sizes) == 20


def test_short_lists_are_folded_whole_and_not_kept() -> None:
    folds = Folds()
    short = items(SHORT)
    assert folds.memo(short) == tuple(short)
    assert folds.memo(short) == tuple(short)
    assert folds.sizes == [SHORT, SHORT]


# -- what uses it: equal to a fresh pass, whatever the history went through ---------------
def reference_prompt(messages: Sequence[AnyMessage], keep_reasoning: bool) -> list[AnyMessage]:
    """prompt_messages as it was written before the memo: one pass over the model view."""
    view = messages
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].additional_kwargs.get(SUMMARY_MARK):
            view = messages[i:]
            break
    out: list[AnyMessage] = []
    unsent: set[str] = set()
    for m in view:
        if isinstance(m, AIMessage):
            if m.additional_kwargs.get(NOTICE_MARK) or m.additional_kwargs.get(CUT_OFF_KEY):
                unsent = {c["id"] or "" for c in [*m.tool_calls, *m.invalid_tool_calls]}
                continue
            m = model_call._without_reasoning(m, keep_reasoning)
        elif unsent and isinstance(m, ToolMessage) and m.tool_call_id in unsent:
            unsent.discard(m.tool_call_id)
            continue
        if unsent:
            unsent = set()
        out.append(m)
    return out


def reference_record(view: Sequence[AnyMessage], tokens: int) -> list[Any]:
    data = marshal.dumps(token_prefix._keys(view), 0)[5:]
    hashed = blake2b(data, digest_size=8, key=token_prefix.VERSION)
    return [len(view), len(data), tokens, int.from_bytes(hashed.digest(), "big") >> 1]


def random_message(rng: random.Random, n: int) -> AnyMessage:
    roll = rng.random()
    if roll < 0.3:
        extra = {SUMMARY_MARK: True} if rng.random() < 0.05 else {}
        return HumanMessage(
            f"question {n} " * rng.randint(1, 5), id=f"h{n}", additional_kwargs=extra
        )
    if roll < 0.7:
        calls = [
            {
                "name": "read_file",
                "args": {"path": f"f{n}-{k}"},
                "id": f"c{n}-{k}",
                "type": "tool_call",
            }
            for k in range(rng.randint(0, 2))
        ]
        extra: dict[str, Any] = {}
        if rng.random() < 0.1:
            extra[rng.choice([NOTICE_MARK, CUT_OFF_KEY])] = True
        if rng.random() < 0.2:
            extra[REASONING_KEY] = f"thinking {n}"
        return AIMessage(f"answer {n}", id=f"a{n}", tool_calls=calls, additional_kwargs=extra)
    return ToolMessage(f"result {n}", tool_call_id=f"c{n - 1}-0", id=f"t{n}")


@pytest.mark.parametrize("seed", range(6))
def test_each_fact_equals_a_fresh_pass_over_the_history(seed: int) -> None:
    rng = random.Random(seed)
    thread: list[AnyMessage] = []
    for step in range(120):
        action = rng.random()
        if action < 0.75 or len(thread) < 10:  # a step appends a few messages
            thread = [
                *thread,
                *(random_message(rng, len(thread) + k) for k in range(rng.randint(1, 4))),
            ]
        elif action < 0.85:  # an edit: same id, new content
            i = rng.randrange(len(thread))
            thread = [
                *thread[:i],
                thread[i].model_copy(update={"content": "edited"}),
                *thread[i + 1 :],
            ]
        elif action < 0.93:  # a branch from an older point
            thread = thread[: rng.randrange(1, len(thread))]
        else:  # the newest messages come back as copies
            thread = [*thread[:-3], *(m.model_copy() for m in thread[-3:])]
        for keep in (False, True):
            sent = model_call.prompt_messages(None, {}, thread, keep_reasoning=keep)
            assert sent == reference_prompt(thread, keep), step
        view = history.model_view(thread)
        assert list(view) == reference_prompt_view(thread)
        history._view_starts.clear()  # as a new process sees it: from the end
        assert list(history.model_view(thread)) == list(view)
        assert call_ids._history_ids(thread) == call_ids.ids_in(list(thread))
        tokens = count_tokens_approximately(view)
        assert token_prefix.record_of(view, tokens) == reference_record(view, tokens)


def reference_prompt_view(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].additional_kwargs.get(SUMMARY_MARK):
            return list(messages[i:])
    return list(messages)


def test_a_kept_count_is_checked_against_the_view_it_names() -> None:
    """The memo gives the signature of any prefix the record names: a record of a
    longer or edited view than the one in hand never passes for it."""
    rng = random.Random(7)
    view: list[AnyMessage] = [random_message(rng, n) for n in range(200)]
    view = [m for m in view if not m.additional_kwargs.get(SUMMARY_MARK)]
    tokens = count_tokens_approximately(view)
    record = token_prefix.record_of(view, tokens)
    given: list[int] = []

    def count(messages: Sequence[Any]) -> int:
        given.append(len(messages))
        return count_tokens_approximately(messages)

    longer = [*view, HumanMessage("more", id="more")]
    assert token_prefix.count_view(longer, record, count)[0] == count_tokens_approximately(longer)
    assert given == [1]  # only the new message was counted
    edited = [
        *view[:50],
        view[50].model_copy(update={"content": "x" * 500}),
        *view[51:],
        longer[-1],
    ]
    assert token_prefix.count_view(edited, record, count)[0] == count_tokens_approximately(edited)
    assert given[-1] == len(edited)  # the record does not match: the whole view

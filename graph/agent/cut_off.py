"""Whether a complete reply was cut off, and why (a key of `REASONS`, the surest first).
Arguments that never close are the only sign when a proxy (LiteLLM) closes a broken
stream itself; a proxy that also sends a finish reason and usage goes unseen.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from graph.agent.reasoning import CLOSE, OPEN

# Providers whose every complete reply says how it ended, and where.
FINISH_KEYS = {"openai": ("finish_reason", "status")}
# response_metadata keys and values that mean "stopped at the token limit".
LIMIT_KEYS = ("finish_reason", "stop_reason", "done_reason", "status")
LIMIT_VALUES = {"length", "max_tokens", "MAX_TOKENS", "incomplete", "max_output_tokens"}

REASONS = {
    "length": "it reached the model's output token limit (max_tokens)",
    "no_finish": "the stream ended before the reply was finished",
    "arguments": "the stream ended in the middle of a tool call's arguments",
    "reasoning": "the stream ended while the model was still thinking",
    "usage": "the stream ended without the usage report the server sends after a finished reply",
}


def cut_reason(
    metadata: Mapping[str, Any],
    text: str,
    raw_arguments: Sequence[str | None],
    *,
    has_usage: bool,
    usage_requested: bool,
) -> str | None:
    """Why the reply was cut off (a key of `REASONS`), or None when it looks whole."""
    if any(metadata.get(k) in LIMIT_VALUES for k in LIMIT_KEYS):
        return "length"
    keys = FINISH_KEYS.get(str(metadata.get("model_provider") or ""))
    if keys is not None and not any(metadata.get(k) for k in keys):
        return "no_finish"
    if any(incomplete_json(a) for a in raw_arguments):
        return "arguments"
    if text.rfind(OPEN) > text.rfind(CLOSE):
        return "reasoning"
    if usage_requested and not has_usage:
        return "usage"
    return None


def incomplete_json(text: str | None) -> bool:
    """`text` is the start of a JSON value that was never finished (`{"path": "a",
    "content`), not merely bad JSON (`{bad`): some ending makes it parse."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        json.loads(text)
        return False
    except json.JSONDecodeError:
        pass
    open_ = _still_open(text)
    if open_ is None:
        return False
    in_string, closers = open_
    if not in_string and not closers:
        return False  # balanced, yet bad: not a cut
    quote = '"' if in_string else ""
    for start in {text, text.rstrip().rstrip(",")}:
        for fill in _FILLS:
            try:
                json.loads(start + quote + fill + closers)
                return True
            except json.JSONDecodeError:
                continue
    return False


# What may be missing before the closing brackets: a key's value, a literal's rest.
_FILLS = ("", ": null", "null", "e", "ue", "rue", "se", "lse", "alse", "l", "ll", "ull", "0")


def _still_open(text: str) -> tuple[bool, str] | None:
    """(inside a string, the brackets that would close it), or None: mismatched."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and (not stack or stack.pop() != ch):
            return None
    return in_string, "".join(reversed(stack))


def notice_text(reason: str, unrun_calls: int) -> str:
    note = ""
    if unrun_calls:
        note = f" Its {unrun_calls} tool call{'s were' if unrun_calls > 1 else ' was'} not run."
    advice = " Retry to ask again, or raise the model's max_tokens." if reason == "length" else ""
    return (
        f"The model's reply was cut off: {REASONS.get(reason, REASONS['no_finish'])}.{note}{advice}"
    )

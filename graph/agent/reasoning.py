"""A reasoning model's thinking, kept apart from its answer: sent inside the text as
`<think>…</think>` (tags may split across chunks) or beside it (`reasoning_content`),
it is stored in `additional_kwargs["reasoning_content"]` and not sent back."""

from __future__ import annotations

from typing import Any, Literal

OPEN, CLOSE = "<think>", "</think>"
# Content blocks that carry reasoning (LangChain v1 / Responses API, Anthropic).
REASONING_BLOCK_TYPES = frozenset({"reasoning", "thinking", "redacted_thinking"})

Piece = tuple[Literal["text", "reasoning"], str]


class ThinkSplitter:
    """Streamed text split at the think tags; a possible tag start ("<th") waits for more."""

    def __init__(self) -> None:
        self.inside = False
        self._held = ""
        self._after_close = False
        self._answered = False

    def feed(self, text: str) -> list[Piece]:
        buf, self._held = self._held + text, ""
        out: list[Piece] = []
        while buf:
            if self._after_close:
                buf = buf.lstrip()
                if not buf:
                    break
                self._after_close = False
            tags = (CLOSE,) if self.inside else (OPEN, CLOSE)
            found = min(((buf.find(t), t) for t in tags if t in buf), default=None)
            if found is not None:
                at, tag = found
                self._add(out, buf[:at])
                buf = buf[at + len(tag) :]
                # A lone closing tag: the template opened the block.
                self.inside = tag == OPEN
                self._after_close = tag == CLOSE and not self._answered
                continue
            keep = max((_partial_tag_len(buf, t) for t in tags), default=0)
            self._add(out, buf[: len(buf) - keep])
            self._held = buf[len(buf) - keep :]
            break
        return out

    def flush(self) -> list[Piece]:
        held, self._held = self._held, ""
        out: list[Piece] = []
        self._add(out, held)
        return out

    def _add(self, out: list[Piece], text: str) -> None:
        if text:
            out.append(("reasoning" if self.inside else "text", text))
            self._answered = self._answered or not self.inside


def _partial_tag_len(text: str, tag: str) -> int:
    return next(
        (n for n in range(min(len(tag) - 1, len(text)), 0, -1) if text.endswith(tag[:n])), 0
    )


def split_think(text: str) -> tuple[str, str]:
    """(answer, reasoning) of a whole reply's text; all before a lone `</think>` is reasoning."""
    if OPEN not in text and CLOSE not in text:
        return text, ""
    if CLOSE in text and (OPEN not in text or text.index(CLOSE) < text.index(OPEN)):
        text = OPEN + text
    splitter = ThinkSplitter()
    pieces = splitter.feed(text) + splitter.flush()
    answer = "".join(t for kind, t in pieces if kind == "text")
    reasoning = "".join(t for kind, t in pieces if kind == "reasoning")
    return answer, reasoning.strip()


def drop_reasoning_blocks(content: Any) -> Any:
    """`content` without its reasoning blocks (unchanged, the same object, when it has none)."""
    if not isinstance(content, list):
        return content
    kept = [
        b for b in content if not (isinstance(b, dict) and b.get("type") in REASONING_BLOCK_TYPES)
    ]
    return content if len(kept) == len(content) else kept or ""

"""Text from models, tools and people, made safe to draw ("what the person sees is what
runs"): hidden characters shown (`visible()`), nothing remote loaded (an image's URL
could carry a secret out). `markdown()` turns images into links and writes each link's
destination next to it, then checks the result with a CommonMark parser: anything unsafe
left and every Markdown character is escaped. Raw HTML is never rendered. `label()`:
every Markdown character escaped."""

from __future__ import annotations

import re
from itertools import groupby
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.normalize_url import normalizeLink
from markdown_it.common.utils import normalizeReference

from gatehouse.graph.protocol.display import visible, visible_json

IMAGE_MARK = "🖼 "
MAX_BRACKETS = 1_000
_TICKS = re.compile(r"`+")
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
# What can start Markdown inside a label's line, and a list or heading marker at its start.
_LABEL_SYNTAX = re.compile(r"([\\`*_\[\]()<>!&$|~])")
_LABEL_START = re.compile(r"^(\s*)([#>+=-]|\d+[.)])")
_PARSER = MarkdownIt("commonmark", {"linkify": False}).enable(["table", "strikethrough"])


def pretty(value: Any) -> str:
    """Arguments as indented JSON, hidden characters as JSON escapes (it parses back exactly)."""
    return visible_json(value, indent=2)


def label(text: str) -> str:
    """Literal text for a Markdown label: nothing in it is read as Markdown."""
    line = _LABEL_SYNTAX.sub(r"\\\1", visible(text).replace("\n", " "))
    return _LABEL_START.sub(
        lambda m: m[1] + "".join("\\" + c if not c.isdigit() else c for c in m[2]), line
    )


def markdown(text: str) -> str:
    """Markdown that draws like `text` but loads nothing and shows every link's target."""
    shown = visible(text)
    if "[" not in shown and "<" not in shown:
        return shown  # no image, no link (a bare URL shows itself)
    if shown.count("[") > MAX_BRACKETS:
        return _escaped(shown)  # the scanner is quadratic in unclosed brackets: no Markdown at all
    try:
        rewritten = _rewrite(shown)
    except RecursionError:  # brackets nested thousands deep
        return _escaped(shown)
    return rewritten if _is_safe(rewritten) else _escaped(shown)


def _escaped(text: str) -> str:
    # Hard line breaks keep the lines; escaped punctuation makes no Markdown at all.
    return "  \n".join(_PUNCTUATION.sub(r"\\\1", line) for line in text.split("\n"))


def _rewrite(text: str) -> str:
    env: dict[str, Any] = {}
    tokens = _PARSER.parse(text, env)
    refs: dict[str, Any] = env.get("references", {})
    # Paragraph, heading and table-cell lines (not code, HTML, definitions), a run of them
    # at a time: a code span may cross a line break.
    inline = {i for t in tokens if t.type == "inline" and t.map for i in range(*t.map[:2])}
    out = []
    for is_text, run in groupby(enumerate(text.split("\n")), lambda p: p[0] in inline):
        part = "\n".join(line for _, line in run)
        out.append(_Inline(part, refs).run() if is_text else part)
    return "\n".join(out)


def _code_span(dest: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", dest)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if dest.startswith("`") or dest.endswith("`") else ""
    return f"{fence}{pad}{dest}{pad}{fence}"


class _Inline:
    """A small scanner over inline Markdown: copies code spans and escapes, turns images
    into links, and writes each link's destination after it."""

    def __init__(self, src: str, refs: dict[str, Any]) -> None:
        self.src, self.refs = src, refs

    def run(self) -> str:
        src, out, i = self.src, [], 0
        while i < len(src):
            ch = src[i]
            if ch == "\\" and i + 1 < len(src):
                out.append(src[i : i + 2])
                i += 2
            elif ch == "`":
                end = self._code_end(i)
                out.append(src[i:end])
                i = end
            elif ch == "!" and src.startswith("[", i + 1):
                out.append(IMAGE_MARK)  # the `[…]` that follows becomes a link
                i += 1
            elif ch == "[":
                text, end, dest = self._link(i)
                out.append(text)
                if dest is not None:
                    out.append(" " + _code_span(dest))
                i = end
            else:
                out.append(ch)
                i += 1
        return "".join(out)

    def _code_end(self, start: int) -> int:
        """The index after the code span opening at `start` (CommonMark: the next run
        of exactly as many backticks), or after the run itself when none closes it."""
        opening = _TICKS.match(self.src, start)
        assert opening is not None
        n = len(opening[0])
        closing = (m for m in _TICKS.finditer(self.src, start + n) if len(m[0]) == n)
        return next((m.end() for m in closing), start + n)

    def _closing(self, i: int, pair: str, depth: int, *, code_spans: bool) -> int | None:
        """The index after the `pair[1]` that brings `depth` back to 0, scanning from `i`
        (escapes skipped; code spans too when `code_spans`), or None."""
        src = self.src
        while i < len(src):
            ch = src[i]
            if ch == "\\":
                i += 2
                continue
            if code_spans and ch == "`":
                i = self._code_end(i)
                continue
            if ch == pair[0]:
                depth += 1
            elif ch == pair[1]:
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return None

    def _link(self, start: int) -> tuple[str, int, str | None]:
        """(the rewritten `[text]…`, where it ends, the destination to show or None)."""
        src = self.src
        close = self._closing(start, "[]", 0, code_spans=True)
        if close is None:
            return "[", start + 1, None
        inner = _Inline(src[start + 1 : close - 1], self.refs).run()
        text = "[" + inner + "]"
        if src.startswith("(", close):
            end = self._paren_end(close)
            if end is not None:
                dest = _destination(src[close + 1 : end - 1])
                return text + src[close:end], end, None if _shows(inner, dest) else dest
        ref_end, ref = close, src[start + 1 : close - 1]
        if src.startswith("[", close):
            second = self._closing(close, "[]", 0, code_spans=True)
            if second is not None:
                ref_end = second
                ref = src[close + 1 : second - 1] or ref
        found = self.refs.get(normalizeReference(ref))
        if found is not None:
            dest = found["href"]
            return text + src[close:ref_end], ref_end, None if _shows(inner, dest) else dest
        return text, close, None

    def _paren_end(self, start: int) -> int | None:
        """The index after the `)` closing the destination opened at `start`, or None."""
        src, i = self.src, start + 1
        while i < len(src) and src[i] in " \t\n":
            i += 1
        if src.startswith("<", i):
            close = src.find(">", i)
            if close == -1:
                return None
            i = close + 1
        return self._closing(i, "()", 1, code_spans=False)


def _destination(inside: str) -> str:
    inside = inside.strip()
    if inside.startswith("<"):
        return inside[1 : inside.find(">")] if ">" in inside else inside
    return inside.split(None, 1)[0] if inside else ""


def _shows(text: str, dest: str) -> bool:
    """The link's text already is its destination (an autolink written as a link)."""
    return text.strip() == dest.strip()


def _is_safe(markdown_text: str) -> bool:
    """No image, and every link's destination in its text or right after it."""
    tokens = _PARSER.parse(markdown_text, {})
    for token in tokens:
        if token.type == "html_block" and "<img" in token.content.lower():
            continue  # drawn as text: Streamlit escapes raw HTML
        children = token.children or []
        for k, child in enumerate(children):
            if child.type == "image":
                return False
            if child.type != "link_open":
                continue
            href = child.attrGet("href") or ""
            end = next(
                (m for m in range(k, len(children)) if children[m].type == "link_close"),
                len(children),
            )
            text = "".join(c.content for c in children[k + 1 : end])
            after = children[end + 1 : end + 3]
            shown = [c.content for c in after if c.type == "code_inline"]
            if (
                text.strip() != href
                and normalizeLink(text.strip()) != href
                and not any(normalizeLink(s) == href or s == href for s in shown)
            ):
                return False
    return True

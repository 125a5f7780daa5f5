"""Text as a person must see it: characters that hide, move or rewrite text, shown escaped.

An approval is a yes to what the card shows, so a card shows nothing but what runs:
escape sequences, C1 controls, overwriting backspaces and carriage returns, bidi
overrides, invisible characters are shown escaped as Python writes them (`\\x1b`,
`\\u202e`), newlines and tabs kept. Every front end draws through `visible()`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Escaped wherever they are: controls, format characters (bidi, zero-width, tags),
# line and paragraph separators (breaks the reader does not see), lone surrogates.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Invisible letters (Hangul fillers, used for blank-looking names) and the
# variation selectors past the sixteen emoji use: they carry hidden bytes.
_INVISIBLE = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800})
_LAYOUT = frozenset("\n\t")
_ZWJ = "\u200d"
_EMOJI_TONE = range(0x1F3FB, 0x1F400)


def _hidden(ch: str) -> bool:
    code = ord(ch)
    return ch not in _LAYOUT and (
        code in _INVISIBLE
        or 0xE0100 <= code <= 0xE01EF
        or unicodedata.category(ch) in _ESCAPED_CATEGORIES
    )


def escape_char(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _emoji_joiner(text: str, i: int) -> bool:
    """A zero-width joiner inside an emoji sequence (👩‍💻): it draws one picture, hides nothing."""
    if i == 0 or i + 1 >= len(text):
        return False
    before, after = text[i - 1], text[i + 1]
    before_ok = (
        unicodedata.category(before) == "So" or before == "\ufe0f" or ord(before) in _EMOJI_TONE
    )
    return before_ok and unicodedata.category(after) == "So"


# What `_hidden` accepts as one regex (a C scan: an output can be megabytes), format
# characters as of Unicode 15; `test_display_terminal` checks it against `unicodedata`.
_HIDDEN_RE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\u2800\u3164"
    "\ud800-\udfff\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef]"
)


def _sub(text: str, escape: Callable[[str], str]) -> str:
    def one(match: re.Match[str]) -> str:
        ch = match.group()
        if ch == _ZWJ and _emoji_joiner(text, match.start()):
            return ch
        return escape(ch) if _hidden(ch) else ch

    return _HIDDEN_RE.sub(one, text)


def visible(text: str) -> str:
    """`text` with every control, escape, bidi and invisible character shown escaped;
    newlines and tabs kept, and a CRLF line ending kept as a newline."""
    return _sub(str(text).replace("\r\n", "\n"), escape_char)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a surrogate pair: JSON has no longer escape
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible_json(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON whose hidden characters are JSON escapes (`\\u202e`): what is
    shown parses back to exactly the same value, and hides nothing."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, default=str)
    if text.isascii():
        return text  # json.dumps escaped every ASCII control already
    return _sub(text, _json_escape)


def is_visible(text: str) -> bool:
    return visible(text) == text.replace("\r\n", "\n")


# One rule for every card: up to these sizes a value is shown whole; above, its head,
# exactly how much is hidden, and a decision waits until the person opened it all. A
# run of blanks that would push the rest of a line out of view (`echo ok` + 3,000
# spaces + `; rm -rf ./*`) is drawn as a count of itself.
CARD_LINES = 40
CARD_CHARS = 4_000
BLANK_RUN = 16
_BLANKS = re.compile(f"[ \\t]{{{BLANK_RUN},}}")


def _blanks(match: re.Match[str]) -> str:
    run = match.group()
    kind = "spaces" if set(run) == {" "} else "blanks"
    return f" ⟨{len(run):,} {kind}⟩ "


@dataclass(frozen=True)
class Shown:
    head: str
    whole: str
    hidden_lines: int
    hidden_chars: int

    @property
    def complete(self) -> bool:
        """Everything is drawn: the person may decide at once."""
        return self.hidden_chars == 0

    @property
    def hidden(self) -> str:
        """What the card says in place of the hidden part ("" when nothing is hidden)."""
        if self.complete:
            return ""
        cut_line = not self.head.endswith("\n") and self.whole[len(self.head)] != "\n"
        lines = f"{self.hidden_lines:,} more line{'s' if self.hidden_lines != 1 else ''}"
        if cut_line:
            more = f"this line goes on ({self.hidden_chars:,} more characters"
            return more + (f", then {lines})" if self.hidden_lines else ")")
        return f"{lines} hidden ({self.hidden_chars:,} characters)"


def shown(text: str, lines: int = CARD_LINES, chars: int = CARD_CHARS) -> Shown:
    """The card rule: `text` made visible, cut to `lines` lines and `chars` characters."""
    whole = _BLANKS.sub(_blanks, visible(text)).rstrip("\n")
    rows = whole.split("\n")
    head = "\n".join(rows[:lines])[:chars]
    if len(head) == len(whole):
        return Shown(whole, whole, 0, 0)
    # A line cut in the middle is not counted: the card says it goes on.
    hidden_lines = len(rows) - (head.count("\n") + 1)
    return Shown(head, whole, hidden_lines, len(whole) - len(head))


def whole(text: str) -> str:
    """All of `text` as a card draws it when it shows everything (a confirmation, `v`)."""
    return shown(text, len(text) + 1, len(text) + 1).whole


def card_text(value: Any) -> str:
    """A call's arguments as a card shows them (parses back to the same value)."""
    return visible_json(value, indent=2)

"""The one rule for matching a signed-in identity against a tool's `approvers` (and a
grant's giver): the same after NFKC and case folding. An identity one could mistake
for another is refused, never folded into it: one NFKC changes (the Kelvin sign in
"\u212aim@x" would become "kim@x"), one mixing scripts (a Cyrillic "а" in "аna"),
one with characters that do not print.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

# Letters of these scripts mix in ordinary names (Japanese writes kanji with kana).
_ONE_SCRIPT = {"CJK": "HAN", "HIRAGANA": "HAN", "KATAKANA": "HAN"}


def identity_key(name: str) -> str:
    return unicodedata.normalize("NFKC", name).casefold().strip()


def identity_problem(name: str | None) -> str | None:
    """Why `name` cannot stand for a person (None: it can)."""
    if name is None or not name.strip():
        return "names nobody"
    shown = ascii(name)
    if unicodedata.normalize("NFKC", name) != name:
        return f"{shown} holds characters that stand in for others (not NFKC-normal)"
    if any(unicodedata.category(ch)[0] in "CZ" and ch != " " for ch in name):
        return f"{shown} holds characters that do not print"
    scripts = {_script(ch) for ch in name if unicodedata.category(ch).startswith("L")}
    if len(scripts) > 1:
        return f"{shown} mixes scripts ({', '.join(sorted(scripts))})"
    return None


def _script(ch: str) -> str:
    first = unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]
    return _ONE_SCRIPT.get(first, first)


def same_identity(one: str | None, other: str | None) -> bool:
    if one is None or other is None or identity_problem(one) or identity_problem(other):
        return False
    return identity_key(one) == identity_key(other)


def listed(name: str | None, among: Iterable[str]) -> bool:
    return any(same_identity(name, other) for other in among)

"""Every `# type: ignore` in the type-checked packages (graph/, tools/, ui/: pyproject's
[tool.mypy] files) names the error it silences and says why on the same line:
`x = f()  # type: ignore[attr-defined]  # set by LangGraph at compile time`. A bare or
unexplained one hides whatever else goes wrong on that line; mypy itself flags the
ones no longer needed (warn_unused_ignores), `.ci/run` runs it.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ["graph", "tools", "ui"]
# `type: ignore[code, code]` then a comment of its own with some words in it.
EXPLAINED = re.compile(r"type:\s*ignore\[[\w\-, ]+\]\s*#\s*\w+.*\w")


def unexplained(source: str) -> list[tuple[int, str]]:
    """(line, comment) of each `type: ignore` comment without a code and a reason."""
    return [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
        and re.search(r"type:\s*ignore", token.string)
        and not EXPLAINED.search(token.string)
    ]


def test_the_rule() -> None:
    source = (
        "a = 1  # type: ignore\n"
        "b = 2  # type: ignore[attr-defined]\n"
        "c = 3  # type: ignore[attr-defined]  # set by LangGraph at compile time\n"
        "d = 4  # type: ignore[misc, override]  # pydantic's field shadows the base's\n"
        "e = '# type: ignore'\n"
    )
    assert [line for line, _ in unexplained(source)] == [1, 2]


def test_every_type_ignore_names_its_error_and_says_why() -> None:
    found = [
        f"{file.relative_to(ROOT)}:{line}: {comment}"
        for top in CHECKED
        for file in sorted((ROOT / top).rglob("*.py"))
        for line, comment in unexplained(file.read_text())
    ]
    assert not found, "type: ignore without [code] and a reason on the same line:\n" + "\n".join(
        found
    )

"""Every project path the docs and the code's comments name exists: README.md,
docs/*.md and BENCHMARKS.md, and the comments and docstrings of graph/, ui/, tools/
and bench/, point a reader at `graph/…py`, `ui/…py`, `tools/…py`, `tests/…py` and
`bench/…` paths; after a file moves, the old path is a dead end. This test names each
one that does not exist, and where it is written.
"""

from __future__ import annotations

import ast
import fnmatch
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A path starts a word (not `langgraph/graph/state.py`, not `site-packages/tools/x.py`):
# a .py file under graph/ ui/ tools/ tests/, or any file or folder under bench/.
PATH = re.compile(
    r"(?<![\w./-])(?:(?:graph|ui|tools|tests)/[\w./*-]*?\.py(?![\w])|bench/[\w./*-]*[\w/*])"
)
DOCS = [
    "README.md",
    "BENCHMARKS.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
]
CODE = ["graph", "ui", "tools", "bench"]


def paths_in(text: str) -> Iterator[str]:
    for match in PATH.finditer(text):
        yield match.group(0)


def comments_and_docstrings(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each comment and each module, class or function docstring."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                yield body[0].lineno, body[0].value.value


def mentions() -> Iterator[tuple[str, str]]:
    """(where, path) for every path the docs and the code's comments mention."""
    for doc in DOCS:
        for number, line in enumerate((ROOT / doc).read_text().splitlines(), 1):
            for path in paths_in(line):
                yield f"{doc}:{number}", path
    for top in CODE:
        for file in sorted((ROOT / top).rglob("*.py")):
            for number, text in comments_and_docstrings(file.read_text()):
                for path in paths_in(text):
                    yield f"{file.relative_to(ROOT)}:{number}", path


# Made at run time and git-ignored (bench/results/web-cache/): named, never committed.
IGNORED = [
    line.strip()
    for line in (ROOT / ".gitignore").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]


def exists(path: str) -> bool:
    if "*" in path:
        return any(ROOT.glob(path))
    return (ROOT / path).exists() or any(fnmatch.fnmatch(path, pattern) for pattern in IGNORED)


def test_a_path_made_at_run_time_and_ignored_by_git_counts() -> None:
    assert exists("bench/results/web-cache/")
    assert not exists("bench/results/no-such-cache/")
    assert not exists("graph/session.py")


def test_the_pattern_finds_project_paths_only() -> None:
    text = (
        "see graph/agent/review.py, ui/web/app.py. tests/test_x.py::name bench/results/ "
        "bench/web/*.py langgraph/graph/state.py site-packages/tools/x.py graph/agent/ gatehouse.ui.web.app"
    )
    assert list(paths_in(text)) == [
        "graph/agent/review.py",
        "ui/web/app.py",
        "tests/test_x.py",
        "bench/results/",
        "bench/web/*.py",
    ]


def test_every_path_the_docs_and_comments_name_exists() -> None:
    found = list(mentions())
    assert len(found) > 50  # the collection itself works
    missing = [f"{where}: {path}" for where, path in found if not exists(path)]
    assert not missing, "paths that do not exist (moved or removed):\n" + "\n".join(missing)

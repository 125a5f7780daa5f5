"""The one confirmation rule: which calls are never approved by a single click or key:
one that executes (a command, or a tool of undeclared risk), deletes, or writes where
code runs later (git's folder, hooks, shell start-up files, build and CI config).
Paths are matched normalised and case-insensitively (a case-insensitive disk opens
`.GIT/CONFIG` as git's config); symlinks are not resolved (the protocol reads no disk).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Arguments that name a path a call writes to (file tools: path; a move: both ends).
PATH_ARGS = ("path", "destination", "source", "target", "file", "filename")
# Any path component that makes the rest of the path code that runs later.
RUNS_LATER_FOLDERS = frozenset(
    {
        ".git",  # config (core.fsmonitor, hooks path, filters), hooks/
        ".githooks",
        ".husky",
        "hooks",
        ".gatehouse",
        ".vscode",  # tasks.json, settings that name programs
        ".idea",
        ".devcontainer",
        ".github",  # workflows run on push
        ".gitlab",
        ".circleci",
        ".cargo",  # config: build runners, linker
        ".direnv",
    }
)
# File names (any folder) that a shell, git, a build or a test run reads and obeys.
RUNS_LATER_FILES = frozenset(
    {
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".envrc",
        ".inputrc",
        ".gitconfig",
        ".gitattributes",  # names filter and diff drivers
        ".gitmodules",
        ".npmrc",
        ".pre-commit-config.yaml",
        ".gitlab-ci.yml",
        "gatehouse.toml",
        "pyproject.toml",  # build backends, tool entry points
        "setup.py",
        "setup.cfg",
        "conftest.py",  # pytest imports it
        "sitecustomize.py",
        "usercustomize.py",
        "tox.ini",
        "noxfile.py",
        "makefile",
        "gnumakefile",
        "justfile",
        "package.json",  # npm scripts
        "dockerfile",
        "langgraph.json",
    }
)


def _normal(path: str) -> str:
    path = posixpath.normpath(path.replace("\\", "/")).lower()
    return path.removeprefix("./")


def runs_later(path: str) -> bool:
    """True when writing `path` puts code where something runs it later."""
    parts = _normal(path).split("/")
    return (
        any(p in RUNS_LATER_FOLDERS for p in parts[:-1])
        or parts[-1] in RUNS_LATER_FILES
        or parts[-1] in RUNS_LATER_FOLDERS  # the folder itself (a move onto `.git`)
        or parts[-1].endswith(".pth")  # Python runs `import` lines of .pth files
    )


def confirmation(name: str, args: Mapping[str, Any], risk: str | None) -> str | None:
    """Why approving this call must be confirmed ("it executes a command"), or None."""
    if risk == "delete":
        return "it deletes"
    if risk not in ("read", "write", "network"):
        return "it executes a command" if risk == "execute" else "it may run anything"
    if risk == "write":
        places = [
            str(args[a]) for a in PATH_ARGS if isinstance(args.get(a), str) and runs_later(args[a])
        ]
        if places:
            return f"it writes {', '.join(places)}, where code runs later"
    return None


@dataclass(frozen=True)
class ToConfirm:
    """A call an answer would run that must be confirmed first: as it would run."""

    index: int
    name: str
    args: Mapping[str, Any]
    why: str


def to_confirm(actions: Sequence[Any], decisions: Sequence[Any]) -> list[ToConfirm]:
    """The calls an answer runs that must be confirmed (an edited call as edited)."""
    found = []
    for i, (action, decision) in enumerate(zip(actions, decisions, strict=True)):
        if decision.type not in ("approve", "edit"):
            continue
        edited = getattr(decision, "edited_action", None)
        name, args = (
            (edited.name, edited.args) if edited is not None else (action.name, action.args)
        )
        if why := confirmation(name, args, action.risk):
            found.append(ToConfirm(i, name, args, why))
    return found

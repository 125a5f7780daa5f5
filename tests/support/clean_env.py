"""The environment a test, or a test's child process, runs with."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Gatehouse's settings, and an OpenAI key or server: the machine's own must not leak
# into a test's process (a real model, another database).
SETTINGS_PREFIXES = ("GATEHOUSE_", "OPENAI_")


def without_settings() -> dict[str, str]:
    """This process's environment without Gatehouse's or OpenAI's variables."""
    return {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS_PREFIXES)}


def offline_settings(root: Path, monkeypatch: pytest.MonkeyPatch, workspace: str) -> Path:
    """Point Gatehouse's settings in this process at `root`: its database, an empty
    workspace folder, an empty config file, and no model server (so the offline demo
    model). Returns the workspace."""
    folder = root / workspace
    folder.mkdir()
    (root / "none.toml").write_text("")
    monkeypatch.setenv("GATEHOUSE_DB", str(root / "gh.db"))
    monkeypatch.setenv("GATEHOUSE_WORKSPACE", str(folder))
    monkeypatch.setenv("GATEHOUSE_CONFIG", str(root / "none.toml"))
    for var in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GATEHOUSE_MODEL_BASE_URL",
        "GATEHOUSE_MODEL_FACTORY",
    ):
        monkeypatch.delenv(var, raising=False)
    return folder

"""The environment a test's child process starts from."""

from __future__ import annotations

import os

# Gatehouse's settings, and an OpenAI key or server: the machine's own must not leak
# into a test's process (a real model, another database).
SETTINGS_PREFIXES = ("GATEHOUSE_", "OPENAI_")


def without_settings() -> dict[str, str]:
    """This process's environment without Gatehouse's or OpenAI's variables."""
    return {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS_PREFIXES)}

"""A demo model whose factory waits for a file: a web server's Session cannot open
until the test says so, so a test sees the first page while its code is still loading
(ui/web/chat_input.py) for as long as it needs, on any machine.

Selected with GATEHOUSE_MODEL_FACTORY=tests.support.gated_model:make_model and
GATEHOUSE_TEST_GATE=<path>: the factory (called when the Session opens) returns once
the path exists, or after GATE_TIMEOUT_S.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from gatehouse.graph.service.demo_model import DemoModel

GATE_TIMEOUT_S = 120.0


def make_model() -> DemoModel:
    gate = Path(os.environ["GATEHOUSE_TEST_GATE"])
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return DemoModel()

"""Shared pytest fixtures: a throwaway Postgres server (tests/support/postgres.py), and
the check that every test using Postgres or Chromium carries its marker
(tests/support/markers.py).

The suite runs on pytest-xdist workers (pyproject.toml's addopts), each one a process of
its own: whatever a test process keeps on disk or in its environment is made per process
here, so two workers never share it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import open_sessions
from tests.support.markers import pytest_runtest_setup, pytest_runtest_teardown  # noqa: F401
from tests.support.postgres import either_db_url, postgres_server, postgres_url  # noqa: F401
from tests.support.terminal import close_ptys

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")

# The sandbox probe's cache (tools/sandbox.py) in a folder of this test process, not
# the user's ~/.cache: the tests' fake bwrap binaries are never remembered there. A
# worker inherits the controller's folder in its environment and takes its own.
if os.environ.get("GATEHOUSE_CACHE_DIR") in (None, os.environ.get("GATEHOUSE_TEST_CACHE_DIR")):
    _cache = tempfile.mkdtemp(prefix=f"gatehouse-test-cache-{WORKER}-")
    os.environ["GATEHOUSE_CACHE_DIR"] = os.environ["GATEHOUSE_TEST_CACHE_DIR"] = _cache
    atexit.register(shutil.rmtree, _cache, True)

# The install secrets Gatehouse keeps outside the workspace (graph/service/access.py,
# `secret_path`: $XDG_CONFIG_HOME/gatehouse/) in a folder of this test process, not
# the user's ~/.config; the servers a test starts inherit it.
if os.environ.get("XDG_CONFIG_HOME") in (None, os.environ.get("GATEHOUSE_TEST_CONFIG_HOME")):
    _config = tempfile.mkdtemp(prefix=f"gatehouse-test-config-{WORKER}-")
    os.environ["XDG_CONFIG_HOME"] = os.environ["GATEHOUSE_TEST_CONFIG_HOME"] = _config
    atexit.register(shutil.rmtree, _config, True)

# An xdist worker starts with COLUMNS=80 and LINES=24 in its environment (a single pytest
# process has neither), and every CLI subprocess a test starts would inherit them: rich
# would lay tables out for 80 columns instead of a pipe's width. Tests that mean a width
# set it themselves.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


# Files whose tests start browsers, servers or many subprocesses, collected first: the two
# workers take whole files in collection order, and in name order the browser and web
# files came last, leaving ~15 minutes of them after everything else had run. Heavy files
# first, the many quick ones fill in around them.
HEAVY_MARKERS = ("browser", "postgres")
HEAVY_NAMES = ("test_cli", "test_langgraph_server", "test_studio", "test_server_", "test_litellm")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    heavy = {
        item.path
        for item in items
        if any(item.get_closest_marker(m) for m in HEAVY_MARKERS)
        or item.path.name.startswith(HEAVY_NAMES)
    }
    items.sort(key=lambda item: item.path not in heavy)  # stable: file order kept within


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Sessions the test body opened and left open are closed when it ends
    (tests/support/open_sessions.py)."""
    open_sessions.start()
    try:
        return (yield)
    finally:
        open_sessions.close_opened()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failing browser test's report says what its pages were doing
    (tests/support/browser_journal.py): read before the fixtures close them."""
    report = yield
    journal = sys.modules.get("tests.support.browser_journal")
    failed = report.when == "call" and report.failed
    if failed and journal is not None and (text := journal.report()):
        report.sections.append(("the browser when the test failed", text))
    return report


@pytest.fixture(autouse=True)
def _close_ptys() -> Iterator[None]:
    """Every pseudo-terminal child a test spawned (tests/support/terminal.py) is closed after it."""
    yield
    close_ptys()


# File descriptors a test file leaves open in the test process. A worker runs hundreds of
# files: fds that pile up end past 1024, where select() fails (pexpect's default used it).
# GATEHOUSE_TEST_FD_REPORT=path appends a line per test file that grew the count.
FD_REPORT = os.environ.get("GATEHOUSE_TEST_FD_REPORT")


def open_fds() -> dict[int, str]:
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
    return found


@pytest.fixture(scope="module", autouse=bool(FD_REPORT))
def _fd_report(request: pytest.FixtureRequest) -> Iterator[None]:
    if not FD_REPORT:
        yield
        return
    before = open_fds()
    yield
    if os.environ.get("GH_GC"):
        import gc

        gc.collect()
    after = open_fds()
    new = sorted(v for k, v in after.items() if before.get(k) != v)
    if len(after) > len(before):
        kinds: dict[str, int] = {}
        for target in new:
            kind = target.split(":")[0] if ":" in target else Path(target).suffix or target
            kinds[kind] = kinds.get(kind, 0) + 1
        with open(FD_REPORT, "a") as f:
            f.write(
                f"{WORKER} {request.node.nodeid} {len(before)} -> {len(after)} "
                f"{sorted(kinds.items(), key=lambda kv: -kv[1])[:6]}\n"
            )

"""A test that uses Postgres or Chromium without its `postgres` / `browser` marker fails
(tests/support/markers.py), so the fast subset `-m "not browser and not postgres"`
(README "Tests") never starts either.

Runs pytest on a small test module of its own with the project's hooks, and stand-in
`postgres_server` / `postgres_url` fixtures that record each start of "the server".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """
import os
import pytest
from tests.support.markers import pytest_runtest_setup, pytest_runtest_teardown
from tests.support.markers import require_marker


def pytest_configure(config):
    config.addinivalue_line("markers", "postgres: uses Postgres")
    config.addinivalue_line("markers", "browser: uses Chromium")


@pytest.fixture(scope="session")
def postgres_server():
    with open(os.environ["STARTS"], "a") as f:
        f.write("started\\n")
    return "server"


@pytest.fixture
def postgres_url(postgres_server):
    require_marker("postgres", "uses a Postgres database")
    return "postgresql://127.0.0.1/stand-in"


@pytest.fixture(params=["sqlite", "pg"])
def backend(request):
    return request.getfixturevalue("postgres_url") if request.param == "pg" else ":memory:"
"""

TESTS = """
import sys
import pytest
from tests.support.browser import chromium_path


def test_unmarked_url(postgres_url):
    pass


def test_unmarked_server(postgres_server):
    pass


@pytest.mark.postgres
def test_marked_url(postgres_url):
    pass


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_unmarked_param(backend, request):
    if backend == "postgres":
        request.getfixturevalue("postgres_url")


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_marked_param(backend, request):
    if backend == "postgres":
        request.getfixturevalue("postgres_url")


def test_unmarked_chromium():
    chromium_path()


@pytest.mark.browser
def test_marked_chromium(monkeypatch):
    monkeypatch.setenv("GATEHOUSE_CHROMIUM", sys.executable)
    assert chromium_path() == sys.executable


@pytest.mark.postgres
def test_marked_other_param(backend):
    pass


def test_unmarked_other_param(backend):
    pass


def test_neither():
    pass
"""


def run_inner(tmp_path: Path, *args: str) -> tuple[dict[str, str], str, int]:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_inner.py").write_text(TESTS)
    starts = tmp_path / "starts.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STARTS": str(starts)}
    env.pop("CI", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rA",
            *args,
            "test_inner.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    outcomes = {
        m.group(2): m.group(1)
        for m in re.finditer(
            r"^(PASSED|FAILED|ERROR) test_inner\.py::(\S+)", done.stdout, re.MULTILINE
        )
    }
    count = len(starts.read_text().splitlines()) if starts.exists() else 0
    return outcomes, done.stdout, count


def test_a_test_using_postgres_or_chromium_without_its_marker_fails(tmp_path: Path) -> None:
    outcomes, out, starts = run_inner(tmp_path)
    assert outcomes == {
        "test_unmarked_url": "ERROR",
        "test_unmarked_server": "ERROR",
        "test_marked_url": "PASSED",
        "test_unmarked_param[sqlite]": "PASSED",
        "test_unmarked_param[postgres]": "ERROR",
        "test_marked_param[sqlite]": "PASSED",
        "test_marked_param[postgres]": "PASSED",
        "test_unmarked_chromium": "FAILED",
        "test_marked_chromium": "PASSED",
        "test_marked_other_param[sqlite]": "PASSED",
        "test_marked_other_param[pg]": "PASSED",
        "test_unmarked_other_param[sqlite]": "PASSED",
        "test_unmarked_other_param[pg]": "ERROR",
        "test_neither": "PASSED",
    }, out
    assert (
        "test_inner.py::test_unmarked_url uses the postgres_server fixture but is not marked @pytest.mark.postgres"
        in out
    )
    assert (
        'test_inner.py::test_unmarked_param[postgres] is a "postgres" case but is not marked' in out
    )
    assert (
        "test_inner.py::test_unmarked_other_param[pg] uses a Postgres database but is not marked"
        in out
    )
    assert (
        "test_inner.py::test_unmarked_chromium starts Chromium but is not marked @pytest.mark.browser"
        in out
    )
    # Refused before it started, and a refusal is not remembered for the marked tests.
    assert starts == 1


def test_the_fast_subset_never_starts_postgres(tmp_path: Path) -> None:
    outcomes, out, starts = run_inner(tmp_path, "-m", "not browser and not postgres")
    assert outcomes == {
        "test_unmarked_url": "ERROR",
        "test_unmarked_server": "ERROR",
        "test_unmarked_param[sqlite]": "PASSED",
        "test_unmarked_param[postgres]": "ERROR",
        "test_marked_param[sqlite]": "PASSED",
        "test_unmarked_chromium": "FAILED",
        "test_unmarked_other_param[sqlite]": "PASSED",
        "test_unmarked_other_param[pg]": "ERROR",
        "test_neither": "PASSED",
    }, out
    # An unusual parametrization that is not caught before set-up still fails (above),
    # though the stand-in server was started for it.
    assert starts == 1

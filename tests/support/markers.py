"""The `postgres` and `browser` markers are kept true: a test that starts Postgres or
Chromium without its marker fails, naming the marker it lacks.

The fast subset (`pytest -m "not browser and not postgres"`, README "Tests") is only
fast and only runs without those servers when every such test carries its marker.
Checked before a test is set up (so Postgres is never started for it): a test whose
fixtures include `postgres_server` (`postgres_url` asks for it), or a parametrized case
whose parameter is "postgres" (the `request.getfixturevalue("postgres_url")` pattern).
Checked again where the servers are used: by `postgres_url` (tests/support/postgres.py)
and `chromium_path()` (tests/support/browser.py), for the test being run.

tests/conftest.py installs the hooks below.
"""

from __future__ import annotations

import pytest

# The test being set up, run or torn down (pytest runs one test at a time per process).
_current: list[pytest.Item] = []


def require_marker(name: str, what: str) -> None:
    """Fail the current test unless it is marked `name` (`what` says what it used)."""
    if not _current:
        return
    item = _current[0]
    if item.get_closest_marker(name) is None:
        pytest.fail(
            f"{item.nodeid} {what} but is not marked @pytest.mark.{name}: "
            f'`pytest -m "not {name}"` would run it. Add the marker (a parametrized case '
            f"takes it as pytest.param(..., marks=pytest.mark.{name})).",
            pytrace=False,
        )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _current[:] = [item]
    # Before any fixture is set up: failing inside a fixture's set-up would leave
    # pytest's cached state of a session-wide one broken for the next test.
    if "postgres_server" in getattr(item, "fixturenames", ()):
        require_marker("postgres", "uses the postgres_server fixture")
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(
        isinstance(v, str) and v == "postgres" for v in callspec.params.values()
    ):
        require_marker("postgres", 'is a "postgres" case')


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    _current.clear()

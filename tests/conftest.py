"""Shared pytest fixtures: a throwaway Postgres server (tests/support/postgres.py), and
the check that every test using Postgres or Chromium carries its marker
(tests/support/markers.py)."""

import os
import tempfile

from tests.support.markers import pytest_runtest_setup, pytest_runtest_teardown  # noqa: F401
from tests.support.postgres import postgres_server, postgres_url  # noqa: F401

# The sandbox probe's cache (tools/probe_cache.py) in a folder of this test run, not the
# user's ~/.cache: the tests' fake bwrap binaries are never remembered there.
os.environ.setdefault("GATEHOUSE_CACHE_DIR", tempfile.mkdtemp(prefix="gatehouse-test-cache-"))

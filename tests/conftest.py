"""Shared pytest fixtures: a throwaway Postgres server (tests/support/postgres.py)."""

from tests.support.postgres import postgres_server, postgres_url  # noqa: F401

"""The web app's sign-in sessions. A browser sends a host's cookies to every port, so the
cookie holds only a random id, and this table says what it is worth: who, on which
port, until idle for `IDLE_S`, `MAX_AGE_S` after sign-in, or revoked. Only a hash of
the id is stored: whoever reads the database learns no live cookie.
"""

from __future__ import annotations

import hashlib
import secrets
import time

from gatehouse.graph.store.notifications import OwnTable

IDLE_S = 12 * 3600  # a browser left alone for half a day signs in again
MAX_AGE_S = 7 * 24 * 3600  # and every browser once a week
SEEN_EVERY_S = 60  # `seen_at` is written at most this often per session (one read per request)

TABLE = """CREATE TABLE IF NOT EXISTS gatehouse_web_sessions (
    id_hash TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    port INTEGER NOT NULL,
    created_at {real} NOT NULL,
    seen_at {real} NOT NULL,
    revoked_at {real})"""
LIVE = "revoked_at IS NULL AND seen_at > ? AND created_at > ?"


def _hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class WebSessions(OwnTable):
    MAX_AGE_S = MAX_AGE_S  # what a cookie's own Max-Age may be
    name, schema = "gatehouse_web_sessions", TABLE

    def open(self, identity: str, port: int) -> str:
        """A new session for `identity` on `port`: the id the cookie carries."""
        session_id = secrets.token_urlsafe(32)
        now = time.time()
        # Sessions past their age are of no use to anyone: the list stays short.
        self._db.run("DELETE FROM gatehouse_web_sessions WHERE created_at < ?", (now - MAX_AGE_S,))
        self._db.run(
            "INSERT INTO gatehouse_web_sessions(id_hash, identity, port, created_at, seen_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (_hash(session_id), identity, port, now, now),
        )
        return session_id

    def identity(self, session_id: str | None, port: int, now: float | None = None) -> str | None:
        """Who `session_id` signs in on `port`; None unless it is live there."""
        if not session_id:
            return None
        now = time.time() if now is None else now
        rows = self._db.rows(
            f"SELECT identity, seen_at FROM gatehouse_web_sessions WHERE id_hash = ? AND port = ? AND {LIVE}",
            (_hash(session_id), port, now - IDLE_S, now - MAX_AGE_S),
        )
        if not rows:
            return None
        identity, seen_at = rows[0]
        if now - seen_at > SEEN_EVERY_S:
            self._db.run(
                "UPDATE gatehouse_web_sessions SET seen_at = ? WHERE id_hash = ?",
                (now, _hash(session_id)),
            )
        return str(identity)

    def revoke(self, session_id: str) -> bool:
        """End one session (sign-out); False when it was not live."""
        revoke = "UPDATE gatehouse_web_sessions SET revoked_at = ? WHERE id_hash = ? AND revoked_at IS NULL"
        return self._db.run(revoke, (time.time(), _hash(session_id))) > 0

    def revoke_all(self) -> int:
        """End every live session on every port; how many."""
        now = time.time()
        return self._db.run(
            f"UPDATE gatehouse_web_sessions SET revoked_at = ? WHERE {LIVE}",
            (now, now - IDLE_S, now - MAX_AGE_S),
        )

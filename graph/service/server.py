"""What LangGraph Server and Studio load (langgraph.json): the agent, and the
checkpointer on Gatehouse's own database (`GATEHOUSE_DB`). Built at import: a graph
factory runs inside the server's loop, where `langgraph dev` refuses blocking calls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from gatehouse.graph.agent.emit import identity_from_server
from gatehouse.graph.service.app import build_agent, server_saver, shared_storage
from gatehouse.graph.service.config import load_env_file, load_settings
from gatehouse.graph.service.notify import attach_notifier
from gatehouse.graph.store.threaded import ThreadedSaver

PROJECT_ROOT = Path(__file__).resolve().parents[2]


load_env_file(PROJECT_ROOT / ".env")
# Who decided is the server's authenticated user, never what a client's config says.
identity_from_server()
_settings = load_settings()
_storage = shared_storage(_settings.db)
agent, _tools, _closers = build_agent(
    _settings, journal=_storage.journal, decisions=_storage.decisions, outputs=_storage.outputs
)


@asynccontextmanager
async def checkpointer() -> AsyncIterator[ThreadedSaver]:
    settings = load_settings()
    storage = shared_storage(settings.db)
    # Pauses of server runs ping the [notify] webhook like every other client's.
    attach_notifier(storage.checkpointer, settings)
    saver = server_saver(storage, delete_thread=storage.delete_thread)
    try:
        yield saver
    finally:
        saver.close()

"""The graph LangGraph Server and Studio load (langgraph.json), built once at import.

LangGraph Server calls a factory on every request inside its event loop, where
`langgraph dev` refuses blocking calls (reading settings, finding the shell, MCP
start-up). So the graph is built here, when the server imports the module, from the
settings in the environment (GATEHOUSE_*, OPENAI_*; langgraph.json's `env` file).
It has no checkpointer of its own: the server provides persistence.
"""

from __future__ import annotations

from graph.service.app import make_graph

agent = make_graph()

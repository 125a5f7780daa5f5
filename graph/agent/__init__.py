"""The LangGraph graph: `graph.py` assembles the loop top to bottom; each node is a
top-level function in its own module (model_node, routing, review, tool_node, finish)
taking its dependencies explicitly; `state.py` holds the state vocabulary; `policy.py`
decides which calls ask; `hooks.py` runs user code at fixed points."""

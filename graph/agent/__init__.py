"""The LangGraph graph: `graph.py` assembles the loop top to bottom; each node is a
top-level function in its own module (model_node, routing, review, tool_node, finish)
taking its dependencies explicitly, and nodes import helpers, never each other;
`state.py` holds the state vocabulary; `policy.py` says which calls ask and `gate.py`
whether a call may run; `tool_messages.py` what the model is told about each call;
`hooks.py` runs user code at fixed points; `compiled.py` is the compiled graph, which
carries its parts (`deps`) as one typed object."""

"""The LangGraph graph: `graph.py` assembles the loop; each node is a top-level
function in its own module taking its dependencies explicitly (nodes import helpers,
never each other); `policy.py` says which calls ask, `gate.py` whether one may run."""

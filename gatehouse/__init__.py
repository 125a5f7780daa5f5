"""Gatehouse: the agent (gatehouse.graph), its tools (gatehouse.tools) and front ends
(gatehouse.ui). The three folders sit at the checkout's root; gatehouse/graph, tools
and ui are symlinks to them, so the wheel and an editable install name them alike."""

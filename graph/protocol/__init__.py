"""What crosses the boundary between Gatehouse's core and everything around it:
events, pauses, answers, errors, tool specs and thread summaries.

Pydantic and the standard library only (no LangGraph, no LangChain), so front ends,
tools and embedders can import it cheaply, and its types serialise to JSON.
"""

"""What crosses the boundary between Gatehouse's core and everything around it.
Pydantic and the standard library only, so front ends, tools and embedders can import
it cheaply, and its types serialise to JSON.
"""

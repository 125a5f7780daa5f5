"""What crosses the boundary between Gatehouse's core and everything around it:
pydantic and the standard library only, cheap to import, serialisable to JSON."""

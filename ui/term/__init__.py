"""The terminal client (`gatehouse`): cli.py holds the commands."""

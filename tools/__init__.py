"""The tools the agent may call. Each declares its risk and default policy (tools/base.py)."""

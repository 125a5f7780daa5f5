"""The tools the agent may call. Each declares its risk and default policy (tools/base.py)."""

from tools.base import ToolSpec, gatehouse_tool, spec_of

__all__ = ["ToolSpec", "gatehouse_tool", "spec_of"]

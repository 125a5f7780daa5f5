"""Built-in hooks, one concern per module (see docs/hooks.md for examples)."""

from gatehouse.graph.agent.builtin_hooks.budget import PRICES, Budget
from gatehouse.graph.agent.builtin_hooks.compaction import Compaction
from gatehouse.graph.agent.builtin_hooks.judge import AnswerJudge, parse_grade
from gatehouse.graph.agent.builtin_hooks.require_tool import RequireTool
from gatehouse.graph.agent.builtin_hooks.system_context import SystemContext

__all__ = [
    "PRICES",
    "AnswerJudge",
    "Budget",
    "Compaction",
    "RequireTool",
    "SystemContext",
    "parse_grade",
]

"""A refused answer leaves no trace. LangGraph stores a `Command(resume=...)` value
before the node that asked can check it, and the node's refusal as its task's error, so
a bad answer from any client would leave the pause looking failed and `retry` replaying
it. Both savers drop the two: the thread stays paused exactly as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.errors import is_invalid_resume

from graph.store.langgraph_private import ERROR, NULL_TASK_ID, RESUME

# The stored answer to forget: (thread_id, checkpoint_ns, checkpoint_id) + these.
RESUME_TASK, RESUME_CHANNEL = NULL_TASK_ID, RESUME


def refuses_answer(writes: Sequence[tuple[str, Any]]) -> bool:
    """Whether these task writes are a node's refusal of a resume value (the answer
    failed the interrupt's `response_schema`): then neither the refusal nor the
    refused answer is stored."""
    return any(
        channel == ERROR and isinstance(value, BaseException) and is_invalid_resume(value)
        for channel, value in writes
    )


def resume_key(config: RunnableConfig) -> tuple[str, str, str, str, str]:
    """The row key of the stored resume value at this config's checkpoint."""
    conf = config["configurable"]
    return (
        str(conf["thread_id"]),
        str(conf.get("checkpoint_ns", "")),
        str(conf["checkpoint_id"]),
        RESUME_TASK,
        RESUME_CHANNEL,
    )

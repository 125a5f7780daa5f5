"""What the agent's nodes need besides the state, passed explicitly (graph.py binds it),
so a test can call a node with a state dict and its own deps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.messages import ToolCall, ToolMessage
from langchain_core.tools import BaseTool

from gatehouse.graph.agent.doom_loop import DEFAULT_DOOM_LOOP_THRESHOLD
from gatehouse.graph.agent.hooks import HookSet
from gatehouse.graph.agent.offload import OffloadOptions, OutputStore
from gatehouse.graph.agent.parallel import ToolSlots
from gatehouse.graph.agent.policy import Policy
from gatehouse.graph.protocol.decisions import DecisionRecord, StandingGrant


@dataclass(frozen=True)
class ModelOptions:
    """How the model node calls the model ([model] in gatehouse.toml)."""

    max_retries: int = 0
    keep_reasoning: bool = False  # earlier replies' reasoning sent back (as <think> text)
    retry_delay_s: float = 0.5  # the first wait, doubled each time (a Retry-After wins)
    max_retry_delay_s: float = 30.0


class JournalEntry(Protocol):
    """A journaled call (graph/store/journal.py)."""

    started_at: float
    attempts: int
    result: ToolMessage | None

    @property
    def finished(self) -> bool: ...


class CallJournal(Protocol):
    """Side-effecting calls written down before and after they run (graph/store/journal.py)."""

    def find(self, thread_id: str, call: ToolCall) -> JournalEntry | None:
        """The row of exactly this call: id, tool and canonical arguments."""

    def logged_ids(self, thread_id: str, tool_call_ids: Sequence[str]) -> set[str]: ...

    def claim(self, thread_id: str, call: ToolCall) -> JournalEntry | None:
        """Claim the call (None), or the row of exactly this call already there."""

    def restart(self, thread_id: str, call: ToolCall, attempts: int) -> None:
        """Claim a crashed call again after "run again" for attempt `attempts`."""

    def finish(self, thread_id: str, call: ToolCall, result: ToolMessage) -> None: ...


# What the gate reads of the log: the grants in force, the records under some calls.
GateReads = tuple[list[StandingGrant], list[DecisionRecord]]


class DecisionLog(Protocol):
    """People's decisions (graph/store/decisions.py): a gated call runs on an approval here."""

    def record(self, records: Sequence[DecisionRecord]) -> None: ...

    def reply_reads(
        self, thread_id: str, call_ids: Sequence[str], journal: CallJournal | None = None
    ) -> tuple[GateReads, set[str]]:
        """`gate_reads` of `call_ids`, and which of them the log (any record) or
        `journal` holds, in one read."""

    def approvals(self, thread_id: str, tool_call_id: str) -> list[DecisionRecord]:
        """The records under this call id the gate may act on: written through the door
        in this database (their chain entry checks out), in the thread's current life."""

    def grants(self, thread_id: str) -> list[StandingGrant]: ...

    def gate_reads(self, thread_id: str, call_ids: Sequence[str]) -> GateReads:
        """`grants` and the `approvals` of each of `call_ids`, in one read."""

    def record_and_read(self, records: Sequence[DecisionRecord]) -> GateReads:
        """`record` one thread's decisions and `gate_reads` their calls, in one transaction."""

    def for_thread(self, thread_id: str) -> list[DecisionRecord]:
        """Every record of the thread, oldest first (who decided a late answer's call)."""


@dataclass(frozen=True)
class AgentDeps:
    model: Any  # the chat model, tools bound
    tools: Mapping[str, BaseTool]
    policy: Policy
    hooks: HookSet
    max_model_calls: int
    system_prompt: str | None
    # Without one, grants live in the state and run_tool trusts its tasks (one process only).
    decisions: DecisionLog | None = None
    journal: CallJournal | None = None
    model_options: ModelOptions = ModelOptions()
    outputs: OutputStore | None = None  # where outputs too large are kept whole; else cut
    offload: OffloadOptions = OffloadOptions()
    doom_loop_threshold: int = DEFAULT_DOOM_LOOP_THRESHOLD
    tool_slots: ToolSlots = field(default_factory=lambda: ToolSlots(None))
    compaction: Any = None  # what `Compact` summarises with when no Compaction hook runs

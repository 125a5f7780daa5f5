"""Budget: stop a run (or a thread) that used too many model calls, tokens or dollars.

    budget = Budget(max_tokens=200_000, max_cost=0.50, thread_max_cost=5.0)
    build_graph(..., hooks={"before_llm": [budget], "on_exit": [budget]})

At `before_llm` it checks before each call (put it last: it counts the call it lets
through); at `on_exit` it only prices the last call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage

from gatehouse.graph.agent.emit import emit
from gatehouse.graph.agent.hooks import current_point
from gatehouse.graph.protocol import events as ev

# USD per 1M tokens (input, output). Public list prices; pass your own for accuracy.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1": (2.00, 8.00),
    "o4-mini": (1.10, 4.40),
    "o3": (2.00, 8.00),
}


class Budget:
    copy_state = False  # it returns its changes: a read-only view (hook_state.py)

    def __init__(
        self,
        *,
        max_model_calls: int | None = None,
        max_tokens: int | None = None,
        max_cost: float | None = None,
        thread_max_model_calls: int | None = None,
        thread_max_tokens: int | None = None,
        thread_max_cost: float | None = None,
        prices: Mapping[str, tuple[float, float]] | None = None,
        model: str | None = None,
        name: str = "budget",
    ) -> None:
        self.limits = {
            "run": {"calls": max_model_calls, "tokens": max_tokens, "cost": max_cost},
            "thread": {
                "calls": thread_max_model_calls,
                "tokens": thread_max_tokens,
                "cost": thread_max_cost,
            },
        }
        self.prices = dict(PRICES if prices is None else prices)
        self.model = model
        self.name = name
        if model is not None and (max_cost or thread_max_cost) and self.price_of(model) is None:
            raise ValueError(
                f"no price for model {model!r}; pass prices={{{model!r}: (input, output)}}"
            )

    def __repr__(self) -> str:
        return f"Budget({self.name})"

    def price_of(self, model: str | None) -> tuple[float, float] | None:
        """Exact name first, then the longest known prefix ("gpt-4o-mini-2024-07-18")."""
        if not model:
            return None
        known = [k for k in self.prices if model.startswith(k)]
        return self.prices[max(known, key=len)] if known else None

    def run(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        thread = dict((state.get("hook_thread") or {}).get(self.name) or {})
        this_run = dict((state.get("hook_run") or {}).get(self.name) or {})
        usage = state.get("usage") or {}
        run_usage = state.get("run_usage") or {}

        # Price the tokens used since the last check (normally: the last model call).
        tokens_in = int(usage.get("input_tokens", 0))
        tokens_out = int(usage.get("output_tokens", 0))
        new_in = max(0, tokens_in - thread.get("priced_input", 0))
        new_out = max(0, tokens_out - thread.get("priced_output", 0))
        price = self.price_of(self.model or _reported_model(state))
        cost = (new_in * price[0] + new_out * price[1]) / 1e6 if price else 0.0
        thread.update(priced_input=tokens_in, priced_output=tokens_out)
        thread["cost"] = thread.get("cost", 0.0) + cost
        this_run["cost"] = this_run.get("cost", 0.0) + cost
        update: dict[str, Any] = {}
        if cost:
            emit(ev.Usage, cost=cost)
            update["usage"] = {"cost": cost}
            update["run_usage"] = {**run_usage, "cost": this_run["cost"]}

        if current_point() != "on_exit":
            # calls, tokens, cost
            in_run = (
                state.get("run_model_calls", 0),
                run_usage.get("total_tokens", 0),
                this_run["cost"],
            )
            in_thread = (thread.get("model_calls", 0), usage.get("total_tokens", 0), thread["cost"])
            if reason := self._over({"run": in_run, "thread": in_thread}):
                update["stop_reason"] = reason
                update["stop_kind"] = "stopped"
            else:
                thread["model_calls"] = thread.get("model_calls", 0) + 1  # the call we let through
        return {**update, "hook_thread": {self.name: thread}, "hook_run": {self.name: this_run}}

    def _over(self, used: Mapping[str, tuple[float, float, float]]) -> str | None:
        for scope, amounts in used.items():
            for what, amount in zip(("calls", "tokens", "cost"), amounts, strict=True):
                limit = self.limits[scope][what]
                if limit is not None and amount >= limit:
                    where = "this run" if scope == "run" else "this thread"
                    then = (
                        "Send a message to continue."
                        if scope == "run"
                        else "Start a new thread or raise the limit to continue."
                    )
                    return f"Budget reached: {where} used {_show(what, amount)} (limit {_show(what, limit)}). {then}"
        return None


def _show(what: str, value: float) -> str:
    if what == "cost":
        return f"${value:,.4f}"
    return f"{int(value):,} {'model calls' if what == 'calls' else 'tokens'}"


def _reported_model(state: Mapping[str, Any]) -> str | None:
    ais = (m for m in reversed(state.get("messages") or []) if isinstance(m, AIMessage))
    return next((str(n) for m in ais if (n := m.response_metadata.get("model_name"))), None)

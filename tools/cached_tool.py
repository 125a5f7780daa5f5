"""`CachedTool`: LangChain's `StructuredTool`, what it works out per call (~0.15 ms of
0.5 ms) worked out once, its schema optionally made on first use. It calls the private
helpers LangChain's `_run` and `_filter_injected_args` call: read an upgrade against
these (tests/test_cached_tool.py compares the classes).
"""

# No `from __future__ import annotations`: `BaseTool.run` reads `_run`'s type hints on
# every call (to pass `config` to it); real objects need no evaluation.

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForToolRun
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool
from langchain_core.tools.base import (
    FILTERED_ARGS,
    _get_runnable_config_param,
    _is_injected_arg_type,
    get_all_basemodel_annotations,
)
from langchain_core.utils._signature import _signature_parameters

__all__ = ["CachedTool", "SchemaOnFirstUse", "schema_on_first_use"]

# Where a tool keeps how to make its schema (the instance's dict, as `_run`'s facts).
_ON_FIRST_USE = "_gatehouse_schema_on_first_use"


@dataclass(frozen=True)
class SchemaOnFirstUse:
    """How to make a tool's schema; `key` and `source` identify it in and across processes."""

    make: Callable[[], Any]
    key: Hashable
    source: Callable[[], str | None]


def schema_on_first_use(tool: Any) -> SchemaOnFirstUse | None:
    found = getattr(tool, "__dict__", {}).get(_ON_FIRST_USE)
    return found if isinstance(found, SchemaOnFirstUse) else None


class CachedTool(StructuredTool):
    """A `StructuredTool` (built the same way: `CachedTool.from_function(...)`)."""

    @classmethod
    def with_schema_on_first_use(
        cls,
        func: Callable[..., Any],
        *,
        name: str,
        description: str,
        schema: SchemaOnFirstUse,
    ) -> "CachedTool":
        """`from_function(func, ..., args_schema=schema.make())`, made when first read."""
        built = cls(name=name, func=func, description=description, args_schema={})
        # Absent from the instance: reading it reaches `__getattr__`.
        del built.__dict__["args_schema"]
        built.__dict__[_ON_FIRST_USE] = schema
        return built

    def __getattr__(self, item: str) -> Any:
        if item == "args_schema":
            lazy = self.__dict__.get(_ON_FIRST_USE)
            if isinstance(lazy, SchemaOnFirstUse):
                made = lazy.make()
                self.__dict__["args_schema"] = made
                return made
        return super().__getattr__(item)  # type: ignore[misc]  # pydantic defines it only outside type checking

    def _run(
        self,
        *args: Any,
        config: RunnableConfig,
        run_manager: CallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> Any:
        # StructuredTool._run, its two lookups kept with the function in the instance's
        # dict (as functools.cached_property: pydantic refuses other attributes).
        if self.func:
            kept = self.__dict__.get("_gatehouse_func_facts")
            if kept is None or kept[0] is not self.func:
                facts = (
                    bool(_signature_parameters(self.func).get("callbacks")),
                    _get_runnable_config_param(self.func),
                )
                kept = self.__dict__["_gatehouse_func_facts"] = (self.func, facts)
            callbacks, config_param = kept[1]
            if run_manager and callbacks:
                kwargs["callbacks"] = run_manager.get_child()
            if config_param:
                kwargs[config_param] = config
            return self.func(*args, **kwargs)
        return super()._run(*args, config=config, run_manager=run_manager, **kwargs)

    def _filter_injected_args(self, tool_input: dict[str, Any]) -> dict[str, Any]:
        # BaseTool._filter_injected_args (what callbacks are shown), keys kept per schema.
        schema = self.args_schema
        kept = self.__dict__.get("_gatehouse_filtered_keys")
        if kept is None or kept[0] is not schema:
            keys = set(FILTERED_ARGS) | set(self._injected_args_keys)
            if schema is not None and not isinstance(schema, dict):
                try:
                    for name, hint in get_all_basemodel_annotations(schema).items():
                        if _is_injected_arg_type(hint):
                            keys.add(name)
                except Exception:  # noqa: BLE001, S110  # as LangChain: then FILTERED_ARGS only
                    pass
            kept = (schema, frozenset(keys))
            self.__dict__["_gatehouse_filtered_keys"] = kept
        filtered: frozenset[str] = kept[1]
        return {k: v for k, v in tool_input.items() if k not in filtered}

"""`gatehouse_tool`: a typed, documented function as a LangChain tool with its `ToolSpec`,
its schema (equal to LangChain's, which costs ~3 ms a tool) one model made once per
signature, on first read, validator deferred. `CachedTool`: a `StructuredTool` that works
out once what LangChain works out per call (~0.15 ms of 0.5 ms), through LangChain's
private helpers: read an upgrade against tests/test_cached_tool.py.
"""

# No `from __future__ import annotations`: `BaseTool.run` reads `_run`'s type hints on
# every call (to pass `config` to it); real objects need no evaluation.

import contextlib
import functools
import inspect
import os
import re
import sys
import textwrap
import typing
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForToolRun
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, tool
from langchain_core.tools.base import (
    FILTERED_ARGS,
    _get_runnable_config_param,
    _is_injected_arg_type,
    create_schema_from_function,
    get_all_basemodel_annotations,
)
from langchain_core.utils._signature import _signature_parameters
from pydantic import BaseModel, ConfigDict, create_model

from gatehouse.graph.protocol.tools import DefaultMode, Risk, ToolSpec, attach_spec

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
        cls, func: Callable[..., Any], *, name: str, description: str, schema: SchemaOnFirstUse
    ) -> "CachedTool":
        """`from_function(func, ..., args_schema=schema.make())`, made when first read."""
        built = cls(name=name, func=func, description=description, args_schema={})
        # Absent from the instance: reading it reaches `__getattr__`.
        del built.__dict__["args_schema"]
        built.__dict__[_ON_FIRST_USE] = schema
        return built

    def __getattr__(self, item: str) -> Any:
        if item == "args_schema" and (lazy := schema_on_first_use(self)) is not None:
            made = self.__dict__["args_schema"] = lazy.make()
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
                callbacks = bool(_signature_parameters(self.func).get("callbacks"))
                config_param = _get_runnable_config_param(self.func)
                kept = self.__dict__["_gatehouse_func_facts"] = (self.func, callbacks, config_param)
            _, callbacks, config_param = kept
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
                # As LangChain: a failure leaves FILTERED_ARGS only.
                with contextlib.suppress(Exception):
                    for name, hint in get_all_basemodel_annotations(schema).items():
                        if _is_injected_arg_type(hint):
                            keys.add(name)
            kept = self.__dict__["_gatehouse_filtered_keys"] = (schema, frozenset(keys))
        return {k: v for k, v in tool_input.items() if k not in kept[1]}


def spec(
    *, risk: Risk, default: DefaultMode | None = None, idempotent: bool | None = None, **facts: Any
) -> ToolSpec:
    """A ToolSpec; omitted, `read` runs freely and is idempotent, the rest asks."""
    return ToolSpec(
        risk=risk,
        default=default or ("allow" if risk == "read" else "ask"),
        idempotent=(risk == "read") if idempotent is None else idempotent,
        **facts,
    )


def gatehouse_tool(
    func: Callable[..., Any] | None = None, *, name: str | None = None, **facts: Any
) -> Any:
    """A typed, documented function as a tool (`facts`: `spec`'s keyword arguments), its
    schema inferred once per signature, on first use."""

    def wrap(f: Callable[..., Any]) -> BaseTool:
        called = name or f.__name__
        key = _signature_key(f, called)
        if inspect.iscoroutinefunction(f):
            return attach_spec(
                tool(called, args_schema=_inferred_schema(f, called, key))(f), spec(**facts)
            )
        if not f.__doc__:
            # What `tool(f)` says of a function without a docstring, at once as it does.
            raise ValueError("Function must have a docstring if description not provided.")
        built = CachedTool.with_schema_on_first_use(
            f,
            name=called,
            description=textwrap.dedent(f.__doc__).strip(),
            schema=SchemaOnFirstUse(
                functools.partial(_inferred_schema, f, called, key),
                key if key is not None else ("function", f),
                functools.partial(schema_source, f),
            ),
        )
        return attach_spec(built, spec(**facts))

    return wrap(func) if func is not None else wrap


def bound_tool(
    fn: Callable[..., Any],
    context: Any,
    *,
    preview: Callable[[Any, dict[str, Any]], str | None] | None = None,
    canonical: Callable[[Any, dict[str, Any]], dict[str, str | None]] | None = None,
    **facts: Any,
) -> BaseTool:
    """A tool from `fn` with its first parameter bound to `context`, as are `preview`'s."""
    built = CachedTool.with_schema_on_first_use(
        functools.partial(fn, context),
        name=fn.__name__,
        description=(inspect.getdoc(fn) or fn.__name__).strip(),
        schema=SchemaOnFirstUse(
            functools.partial(_bound_schema, fn),
            ("bound", fn),
            functools.partial(schema_source, fn, bound=True),
        ),
    )
    bound_preview = functools.partial(preview, context) if preview is not None else None
    bound_canonical = functools.partial(canonical, context) if canonical is not None else None
    return attach_spec(built, spec(preview=bound_preview, canonical=bound_canonical, **facts))


_schemas: dict[Hashable, Any] = {}


def _signature_key(f: Callable[..., Any], name: str | None) -> Hashable | None:
    """What `f`'s schema depends on (a closure made again shares it); None: unhashable."""
    code = getattr(f, "__code__", None)
    if code is None:
        return None
    kwdefaults = tuple(sorted((f.__kwdefaults__ or {}).items()))
    annotations = tuple(getattr(f, "__annotations__", {}).items())
    key = (name, code, f.__defaults__, kwdefaults, annotations, f.__doc__)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _inferred_schema(f: Callable[..., Any], name: str, key: Hashable | None) -> Any:
    """The schema LangChain infers for `f`, once per `key` (`setdefault` is atomic)."""
    if key is not None and (schema := _schemas.get(key)) is not None:
        return schema
    schema = (
        fast_schema(name, f)
        or CachedTool.from_function(
            f, name=name, infer_schema=True, error_on_invalid_docstring=True
        ).args_schema
    )
    return schema if key is None else _schemas.setdefault(key, schema)


# Types named in annotations: their modules' files are part of what a schema is made from.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def schema_source(fn: Callable[..., Any], *, bound: bool = False) -> str | None:
    """Text that changes whenever `fn`'s schema could: its file's and its annotations'
    files' stats, where in it, defaults, annotations and docstring; None when unknown."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    files = {code.co_filename}
    annotations = getattr(fn, "__annotations__", {})
    scope = getattr(fn, "__globals__", {})
    for hint in annotations.values():
        for word in _NAME.findall(hint if isinstance(hint, str) else repr(hint)):
            found = scope.get(word)
            module = sys.modules.get(getattr(found, "__module__", "") or "")
            where = getattr(module, "__file__", None) if isinstance(found, type) else None
            if where:
                files.add(where)
    stats = []
    for path in sorted(files):
        try:
            st = os.stat(path)
        except OSError:
            return None
        stats.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    where = (code.co_firstlineno, fn.__qualname__, bound)
    return repr((stats, *where, fn.__defaults__, fn.__kwdefaults__, annotations, fn.__doc__))


@functools.cache
def _bound_schema(fn: Callable[..., Any]) -> Any:
    """The schema of a top-level function without its first (context) parameter."""
    first = next(iter(inspect.signature(fn).parameters))
    return fast_schema(fn.__name__, fn, skip_first=True) or create_schema_from_function(
        fn.__name__, fn, filter_args=[first], parse_docstring=False
    )


_PLAIN = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_LAZY = ConfigDict(arbitrary_types_allowed=True, defer_build=True)
_INJECTED = ("Injected", "RunnableConfig", "ToolRuntime", "Callback")


def fast_schema(
    name: str, fn: Callable[..., Any], *, skip_first: bool = False
) -> type[BaseModel] | None:
    """`create_schema_from_function`'s model, built in one step, validator deferred; None
    for what needs LangChain's handling (*args, injected or config parameters ...)."""
    try:
        params = list(inspect.signature(fn).parameters.values())[1 if skip_first else 0 :]
        hints = typing.get_type_hints(fn, include_extras=True)
    except (TypeError, ValueError, NameError):
        return None
    fields: dict[str, Any] = {}
    for p in params:
        hint = hints.get(p.name, Any)
        if (
            p.kind not in _PLAIN
            or p.name.startswith("_")
            or p.name in ("run_manager", "callbacks", "config", "self", "cls")
        ):
            return None
        metadata = typing.get_args(hint)[1:] if typing.get_origin(hint) is typing.Annotated else ()
        base = typing.get_args(hint)[0] if metadata else hint
        # Runtime-injected arguments LangChain filters out of the schema take its path.
        if any(isinstance(m, str) for m in metadata) or any(w in repr(base) for w in _INJECTED):
            return None
        fields[p.name] = (hint, ... if p.default is inspect.Parameter.empty else p.default)
    model: type[BaseModel] = create_model(name, __config__=_LAZY, **fields)
    model.__annotations__ = {p: hints.get(p, Any) for p in fields}
    model.__doc__ = textwrap.dedent(inspect.getdoc(fn) or "")
    return model

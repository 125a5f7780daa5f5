"""`gatehouse_tool`: a typed, documented function as a LangChain tool that carries
Gatehouse's facts about it (a `ToolSpec`, graph/protocol/tools.py): the risk an
approval card shows, the default policy, idempotency, the argument policy
conditions match on, and an optional preview of what the call will change.

Argument schemas: LangChain infers a tool's pydantic model from its signature through
pydantic's deprecated `validate_arguments` (two models and their validators, ~3 ms a
tool). Here a signature of plain parameters becomes one model whose validator is built
on first use (`defer_build`: when the tool runs or is bound to a model), and each schema
is made once per process and shared, so a server that opens a session per request
rebuilds the tools, not their schemas. The schemas are the same as LangChain's
(tests/test_open_cost.py compares them for every default tool).
"""

from __future__ import annotations

import functools
import inspect
import textwrap
import threading
import typing
from collections.abc import Callable, Hashable
from typing import Any

from langchain_core.tools import BaseTool, tool
from langchain_core.tools.base import create_schema_from_function
from pydantic import BaseModel, ConfigDict, create_model

from graph.protocol.tools import DefaultMode, Preview, Risk, ToolSpec, attach_spec, spec_of
from tools.cached_tool import CachedTool

__all__ = ["ToolSpec", "attach_spec", "bound_tool", "gatehouse_tool", "spec", "spec_of"]


def spec(
    *,
    risk: Risk,
    default: DefaultMode | None = None,
    idempotent: bool | None = None,
    match_arg: str | None = None,
    preview: Preview | None = None,
    auto_allow: Callable[[dict[str, Any]], bool] | None = None,
    compound: Callable[[dict[str, Any]], bool] | None = None,
    describe: Callable[[dict[str, Any]], str] | None = None,
    canonical: Callable[[dict[str, Any]], dict[str, str | None]] | None = None,
) -> ToolSpec:
    """A ToolSpec whose `default` and `idempotent` follow the risk when omitted:
    `read` runs freely and is safe to repeat; the rest asks."""
    return ToolSpec(
        risk=risk,
        default=default or ("allow" if risk == "read" else "ask"),
        idempotent=(risk == "read") if idempotent is None else idempotent,
        match_arg=match_arg,
        preview=preview,
        auto_allow=auto_allow,
        compound=compound,
        describe=describe,
        canonical=canonical,
    )


def gatehouse_tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    **facts: Any,
) -> Any:
    """Turn a typed, documented function into a LangChain tool with a `ToolSpec`
    (`facts`: the keyword arguments of `spec`).

    The docstring is what the model reads; the signature is the argument schema.
    """

    def wrap(f: Callable[..., Any]) -> BaseTool:
        return attach_spec(cached_schema_tool(f, name), spec(**facts))

    return wrap(func) if func is not None else wrap


def bound_tool(
    fn: Callable[..., Any],
    context: Any,
    *,
    preview: Callable[[Any, dict[str, Any]], str | None] | None = None,
    canonical: Callable[[Any, dict[str, Any]], dict[str, str | None]] | None = None,
    **facts: Any,
) -> BaseTool:
    """A tool from a top-level function whose first parameter is its context (a
    workspace, a connection), bound here: the model sees the other parameters and the
    docstring. A `preview` and `canonical` get the context too: `preview(context, args)`."""
    built = CachedTool.from_function(
        func=functools.partial(fn, context),
        name=fn.__name__,
        description=inspect.getdoc(fn) or fn.__name__,
        args_schema=_bound_schema(fn),
    )
    bound_preview = functools.partial(preview, context) if preview is not None else None
    bound_canonical = functools.partial(canonical, context) if canonical is not None else None
    return attach_spec(built, spec(preview=bound_preview, canonical=bound_canonical, **facts))


_schemas: dict[Hashable, Any] = {}
_schemas_lock = threading.Lock()


def _signature_key(f: Callable[..., Any], name: str | None) -> Hashable | None:
    """What a function's inferred schema depends on. A closure made again (a tool built
    per workspace) has the same code, defaults and annotations, so it shares the schema;
    None when any of them cannot be hashed (then the schema is built each time)."""
    code = getattr(f, "__code__", None)
    if code is None:
        return None
    key = (
        name,
        code,
        f.__defaults__,
        tuple(sorted((f.__kwdefaults__ or {}).items())),
        tuple(getattr(f, "__annotations__", {}).items()),
        f.__doc__,
    )
    try:
        hash(key)
    except TypeError:
        return None
    return key


def cached_schema_tool(f: Callable[..., Any], name: str | None = None) -> BaseTool:
    """`langchain_core.tools.tool(f)` (named `name` if given), its argument schema
    inferred once per process for the same signature."""
    key = _signature_key(f, name)
    with _schemas_lock:
        schema = _schemas.get(key) if key is not None else None
    fresh = schema is None
    if fresh:
        schema = fast_schema(name or f.__name__, f)
    if inspect.iscoroutinefunction(f):
        built = tool(name or f.__name__, args_schema=schema)(f)
    else:
        # What `tool(name, args_schema=schema)(f)` builds for a plain function, as a
        # CachedTool (tools/cached_tool.py).
        built = CachedTool.from_function(
            f,
            name=name or f.__name__,
            description=None,
            return_direct=False,
            args_schema=schema,
            infer_schema=True,
            response_format="content",
            parse_docstring=False,
            error_on_invalid_docstring=True,
        )
    if key is not None and fresh:
        with _schemas_lock:
            _schemas.setdefault(key, built.args_schema)
    return built


@functools.cache
def _bound_schema(fn: Callable[..., Any]) -> Any:
    """The schema of a top-level function without its first (context) parameter."""
    first = next(iter(inspect.signature(fn).parameters))
    return fast_schema(fn.__name__, fn, skip_first=True) or create_schema_from_function(
        fn.__name__, fn, filter_args=[first], parse_docstring=False
    )


_PLAIN = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_LAZY = ConfigDict(arbitrary_types_allowed=True, defer_build=True)


def fast_schema(
    name: str, fn: Callable[..., Any], *, skip_first: bool = False
) -> type[BaseModel] | None:
    """The argument model LangChain's `create_schema_from_function` infers (parameters,
    defaults, `Annotated[..., Field(...)]` constraints and descriptions, the docstring),
    built in one step with its validator deferred. None for a signature that needs
    LangChain's own handling (*args, **kwargs, injected or config parameters, a
    description given as a bare string, names pydantic reserves)."""
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
        if any(isinstance(m, str) for m in metadata) or not _plain_type(base):
            return None
        fields[p.name] = (hint, ... if p.default is inspect.Parameter.empty else p.default)
    model: type[BaseModel] = create_model(name, __config__=_LAZY, **fields)
    model.__annotations__ = {p: hints.get(p, Any) for p in fields}
    model.__doc__ = textwrap.dedent(inspect.getdoc(fn) or "")
    return model


def _plain_type(hint: Any) -> bool:
    """No runtime-injected argument (RunnableConfig, InjectedToolArg, ToolRuntime ...):
    those LangChain filters out of the schema, so they take its path."""
    text = repr(hint)
    return not any(
        word in text for word in ("Injected", "RunnableConfig", "ToolRuntime", "Callback")
    )

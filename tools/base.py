"""`gatehouse_tool`: a typed, documented function as a LangChain tool that carries
Gatehouse's facts about it (a `ToolSpec`, graph/protocol/tools.py): the risk an
approval card shows, the default policy, idempotency, the argument policy
conditions match on, and an optional preview of what the call will change.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, tool
from langchain_core.tools.base import create_schema_from_function

from graph.protocol.tools import DefaultMode, Preview, Risk, ToolSpec, attach_spec, spec_of

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
        built = tool(name or f.__name__, parse_docstring=False)(f) if name else tool(f)
        return attach_spec(built, spec(**facts))

    return wrap(func) if func is not None else wrap


def bound_tool(fn: Callable[..., Any], context: Any, *, preview: Callable[[Any, dict[str, Any]], str | None] | None = None,
               canonical: Callable[[Any, dict[str, Any]], dict[str, str | None]] | None = None,
               **facts: Any) -> BaseTool:
    """A tool from a top-level function whose first parameter is its context (a
    workspace, a connection), bound here: the model sees the other parameters and the
    docstring. A `preview` and `canonical` get the context too: `preview(context, args)`."""
    first = next(iter(inspect.signature(fn).parameters))
    schema = create_schema_from_function(fn.__name__, fn, filter_args=[first], parse_docstring=False)
    built = StructuredTool.from_function(
        func=functools.partial(fn, context),
        name=fn.__name__,
        description=inspect.getdoc(fn) or fn.__name__,
        args_schema=schema,
    )
    bound_preview = functools.partial(preview, context) if preview is not None else None
    bound_canonical = functools.partial(canonical, context) if canonical is not None else None
    return attach_spec(built, spec(preview=bound_preview, canonical=bound_canonical, **facts))

"""The layers of Gatehouse, enforced: every import in graph/, tools/ and ui/ points
down the allowed edges below, and no two project modules import each other in a circle.
Modules are named as imported, under the one top-level package (`gatehouse.graph.agent`
is graph/agent/); a top-level `graph`, `tools` or `ui` import would load a module twice.

    gatehouse.graph.protocol  pydantic only: events, pauses, answers, errors, tool specs
    gatehouse.graph.agent     the LangGraph graph        -> protocol
    gatehouse.graph.store     SQLite / Postgres storage  -> protocol
      .langgraph_private  LangGraph's private names (a leaf) <- agent, store, service
    gatehouse.graph.service   sessions, runner, config   -> protocol, agent, store, tools
    gatehouse.graph           the public API (__init__)  -> any graph layer
    gatehouse.tools           the tools                  -> protocol
    gatehouse.ui              the front ends             -> graph (public API), protocol

Imports inside functions count too: a lazy import is still a dependency.

LangGraph's private surface lives in one module (graph/store/langgraph_private.py):
no other module imports an underscored LangGraph module or name, and the store never
spells a key of the agent's state (it reads them by graph/protocol/state_keys.py).

Inside graph/agent/, the nodes (model_node, review, tool_node, routing, finish) import
helpers, never each other; only graph.py, which wires them, imports them.
"""

from __future__ import annotations

import ast
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("graph", "tools", "ui")
TOP = "gatehouse"

# layer -> the layers it may import (besides itself).
ALLOWED: dict[str, set[str]] = {
    "gatehouse.graph.protocol": set(),
    "gatehouse.graph.agent": {"gatehouse.graph.protocol"},
    "gatehouse.graph.store": {"gatehouse.graph.protocol"},
    "gatehouse.graph.service": {
        "gatehouse.graph.protocol",
        "gatehouse.graph.agent",
        "gatehouse.graph.store",
        "gatehouse.tools",
    },
    "gatehouse.graph": {
        "gatehouse.graph.protocol",
        "gatehouse.graph.agent",
        "gatehouse.graph.store",
        "gatehouse.graph.service",
    },
    "gatehouse.tools": {"gatehouse.graph.protocol"},
    "gatehouse.ui": {"gatehouse.graph", "gatehouse.graph.protocol"},
}
# LangGraph's private names, fenced in one module that imports no project module. It
# sits in the store, whose checkpoint machinery uses most of them; the agent (the
# messages reducer, the tool node's runnable, strict resume) and the service (the
# interrupt channel) may import it too, and nothing else of the store's: one fence
# instead of a copy per layer, and the layers stay as they are.
FENCE = "gatehouse.graph.store.langgraph_private"
FENCE_USERS = {"gatehouse.graph.agent", "gatehouse.graph.store", "gatehouse.graph.service"}


# Front ends use the public API (the graph package itself) and the protocol, never a
# layer module by path (graph/service/session.py, graph/store/ ...).
def is_public(module: str) -> bool:
    return module == "gatehouse.graph" or layer_of(module) == "gatehouse.graph.protocol"


def layer_of(module: str) -> str:
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if module == layer or module.startswith(layer + "."):
            return layer
    raise AssertionError(f"{module} belongs to no layer")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join([TOP, *(parts[:-1] if parts[-1] == "__init__" else parts)])


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}


def imports_of(path: Path, module: str) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import of a project module in the file."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from gatehouse.graph import agent` imports the module gatehouse.graph.agent.
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names
            ]
        else:
            continue
        for name in names:
            if name.split(".")[0] in (TOP, *PACKAGES):
                yield node.lineno, name


MODULES = project_modules()


def test_every_import_follows_an_allowed_edge() -> None:
    wrong = []
    for module, path in sorted(MODULES.items()):
        source = layer_of(module)
        for line, target in imports_of(path, module):
            dest = layer_of(target)
            if dest == source and source != "gatehouse.ui":
                continue
            if source == "gatehouse.ui" and layer_of(target) == "gatehouse.ui":
                continue
            ok = dest in ALLOWED[source] and (source != "gatehouse.ui" or is_public(target))
            ok = ok or (target == FENCE and source in FENCE_USERS)
            if not ok:
                wrong.append(
                    f"{path.relative_to(ROOT)}:{line}: {module} ({source}) imports {target} ({dest})"
                )
    allowed = "\n".join(
        f"  {k} -> {', '.join(sorted(v)) or '(nothing)'}" for k, v in ALLOWED.items()
    )
    assert not wrong, (
        "imports against the layers:\n" + "\n".join(wrong) + "\nallowed edges:\n" + allowed
    )


def test_no_import_cycles_between_modules() -> None:
    edges: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for _, target in imports_of(path, module):
            # `import gatehouse.graph.agent.state` runs graph/__init__ and graph/agent/__init__ too,
            # but a package's __init__ importing its own children is not a cycle of concern.
            while target not in MODULES and "." in target:
                target = target.rpartition(".")[0]
            if target in MODULES and target != module and not module.startswith(target + "."):
                edges[module].add(target)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def legacy_name_pattern() -> re.Pattern[str]:
    """A module named by gatehouse 0.1's top-level `graph`, `tools` or `ui`: followed by a
    real subpackage or module (`.store`, `.term.cli`), or by `:` and a name (a hook path)."""
    subs = {
        pkg: sorted(
            p.stem if p.suffix == ".py" else p.name
            for p in (ROOT / pkg).iterdir()
            if p.suffix == ".py" or (p.is_dir() and any(p.rglob("*.py")))
        )
        for pkg in PACKAGES
    }
    names = "|".join(f"{pkg}\\.(?:{'|'.join(subs[pkg])})\\b" for pkg in PACKAGES)
    return re.compile(rf"(?:{names}|(?:{'|'.join(PACKAGES)}):\w)")


def legacy_names(path: Path, legacy: re.Pattern[str]) -> Iterator[str]:
    """Imports of a top-level graph/tools/ui, and strings that name one: a whole string
    (importlib, `-m`, monkeypatch targets, hook paths), a quoted name in a string (a TOML
    snippet) or an import in code held in a string."""
    top = set(PACKAGES)
    quoted = re.compile(rf"[\"']{legacy.pattern}")
    top_names = "|".join(PACKAGES)
    code = re.compile(
        rf"(?m)(?:^|;)\s*(?:from (?:{top_names})(?:\.\w+)* import|import (?:{top_names})\b(?!/))"
    )
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            bad = [a.name for a in node.names if a.name.split(".")[0] in top]
        elif isinstance(node, ast.ImportFrom):
            bad = (
                [node.module] if not node.level and (node.module or "").split(".")[0] in top else []
            )
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            match = legacy.match(text) and re.fullmatch(r"[\w.]+(?::\w+)?", text)
            bad = [text] if match or quoted.search(text) or code.search(text) else []
        else:
            continue
        yield from (f"{path.relative_to(ROOT)}:{node.lineno}: {b!r}" for b in bad)


def test_every_module_is_named_under_gatehouse() -> None:
    """The wheel installs one top-level package, `gatehouse`; a checkout imports the same
    names (gatehouse/graph, tools and ui are symlinks to the folders). `graph.x` beside
    `gatehouse.graph.x` would load the module twice: two of every class, isinstance
    failing across them."""
    legacy = legacy_name_pattern()
    folders = (*PACKAGES, "tests", "bench", "examples")
    offenders = [
        hit
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*.py"))
        if ".venv" not in path.parts  # tests/support/litellm_proxy's own environment
        for hit in legacy_names(path, legacy)
    ]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    server = json.loads((ROOT / "langgraph.json").read_text())
    configs = [
        *project["project"]["scripts"].values(),
        *project["tool"]["mypy"]["files"],
        *server["graphs"].values(),
        server["checkpointer"]["path"],
        server["auth"]["path"],
        server["http"]["app"],
    ]
    offenders += [f"config: {c!r}" for c in configs if not c.startswith("gatehouse")]
    assert not offenders, "name these under gatehouse.:\n" + "\n".join(offenders)


def test_graph_folder_shows_the_layers() -> None:
    top = sorted(
        p.name for p in (ROOT / "graph").iterdir() if not p.name.startswith(("__pycache__", "."))
    )
    assert top == ["__init__.py", "agent", "protocol", "service", "store"], top


def test_protocol_needs_no_langgraph_or_langchain() -> None:
    offenders = []
    for module, path in MODULES.items():
        if layer_of(module) != "gatehouse.graph.protocol":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [
                f"{module}: {n}"
                for n in names
                if n.split(".")[0] in ("langgraph", "langchain_core", "langchain")
            ]
    assert not offenders, offenders


def test_the_langgraph_fence_imports_no_project_module() -> None:
    """What may import the fence from another layer gets LangGraph's names and nothing else."""
    assert [t for _, t in imports_of(MODULES[FENCE], FENCE)] == []


def is_private_langgraph(name: str) -> bool:
    parts = name.split(".")
    return parts[0].startswith("langgraph") and any(p.startswith("_") for p in parts[1:])


def test_langgraph_private_names_are_imported_only_by_the_fence() -> None:
    """An underscored LangGraph module or name (`langgraph._internal`, `_DeltaSnapshot`,
    `postgres._internal`) anywhere but the fence would escape the upgrade test
    (tests/test_langgraph_internals.py), which checks the fence's table."""
    offenders = []
    for module, path in sorted(MODULES.items()):
        if module == FENCE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno}: {n}"
                for n in names
                if is_private_langgraph(n)
            ]
    assert not offenders, (
        "LangGraph private names outside graph/store/langgraph_private.py:\n" + "\n".join(offenders)
    )


def test_langgraph_channel_names_are_spelled_only_in_the_fence() -> None:
    """`"__interrupt__"`, `"__pregel_tasks"`, `"branch:to:..."`, the null task id: a copy
    outside the fence is one the upgrade test does not check."""
    from gatehouse.graph.store import langgraph_private as fence

    reserved = {
        v
        for k, v in vars(fence).items()
        if k.isupper() and not k.startswith("_") and isinstance(v, str)
    }
    offenders = []
    for module, path in sorted(MODULES.items()):
        if module == FENCE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and (node.value in reserved or node.value.startswith(fence.BRANCH_TO))
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not offenders, "spell these through graph/store/langgraph_private.py:\n" + "\n".join(
        offenders
    )


def agent_state_keys() -> set[str]:
    """The keys of `AgentState` (graph/agent/state.py), read from its source."""
    tree = ast.parse((ROOT / "graph/agent/state.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AgentState")
    return {
        s.target.id
        for s in cls.body
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
    }


def test_the_shared_state_keys_are_the_agents() -> None:
    """graph/protocol/state_keys.py names keys of the agent's state: a rename in the
    agent that leaves them behind fails here, not in a thread list gone stale."""
    from gatehouse.graph.protocol import state_keys

    named = {
        k: v
        for k, v in vars(state_keys).items()
        if k.isupper() and isinstance(v, str) and k != "CANCELLED"
    }
    assert named and set(named.values()) <= agent_state_keys(), (
        set(named.values()) - agent_state_keys()
    )


def test_the_store_reads_agent_state_only_by_the_shared_names() -> None:
    """The store reads checkpoints the agent wrote; a key spelled in the store is a copy
    nothing checks (graph/protocol/state_keys.py is the one the test above checks)."""
    keys = agent_state_keys()
    offenders = []
    for module, path in sorted(MODULES.items()):
        if layer_of(module) != "gatehouse.graph.store":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in keys
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not offenders, "agent state keys spelled in graph/store:\n" + "\n".join(offenders)


# The agent's nodes and route functions (graph/agent/graph.py wires them). Nodes
# import helpers, never each other: a node is read, tested and changed alone.
NODE_MODULES = frozenset(
    {
        "gatehouse.graph.agent.model_node",
        "gatehouse.graph.agent.review",
        "gatehouse.graph.agent.tool_node",
        "gatehouse.graph.agent.routing",
        "gatehouse.graph.agent.finish",
    }
)
ASSEMBLER = "gatehouse.graph.agent.graph"


def node_functions_of_the_graph() -> dict[str, str]:
    """{function: module} for every function graph.py wires as a node or a route
    (the first argument of each `partial(...)` there)."""
    tree = ast.parse((ROOT / "graph" / "agent" / "graph.py").read_text())
    origin = {
        a.asname or a.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for a in node.names
        if node.module
    }
    wired = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "partial"
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            wired[node.args[0].id] = origin[node.args[0].id]
    return wired


def test_every_node_lives_in_a_node_module() -> None:
    wired = node_functions_of_the_graph()
    assert {"call_model", "review", "run_tool", "finish", "after_model", "dispatch"} <= set(
        wired
    ), wired
    strays = {fn: module for fn, module in wired.items() if module not in NODE_MODULES}
    assert not strays, f"nodes wired from modules missing in NODE_MODULES: {strays}"


def test_nodes_import_helpers_not_each_other() -> None:
    wrong = []
    for module, path in sorted(MODULES.items()):
        if layer_of(module) != "gatehouse.graph.agent" or module == ASSEMBLER:
            continue
        for line, target in imports_of(path, module):
            if target in NODE_MODULES and target != module:
                who = "node" if module in NODE_MODULES else "helper"
                wrong.append(
                    f"{path.relative_to(ROOT)}:{line}: {who} {module} imports the node module {target}"
                )
    assert not wrong, (
        "inside graph/agent only graph.py imports node modules; move what they share to a helper module:\n"
        + "\n".join(wrong)
    )


MAX_MODULE_LINES = 650  # one person can hold it in their head; split by concern, not size


def test_no_module_grows_past_the_cap() -> None:
    """Size has a cap in CI beside ruff's complexity and length limits (pyproject.toml):
    a module over the cap is named here, with its size."""
    over = {
        str(path.relative_to(ROOT)): n
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not over, f"modules over {MAX_MODULE_LINES} lines: {over}"

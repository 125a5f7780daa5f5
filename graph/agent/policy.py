"""Which tool calls run freely, which ask a person, which are refused.

Evaluated from the call, the tool's declared defaults, the project config and the
thread's grants only, so the review gets the same answer when it re-runs on resume.
Takes `HumanInTheLoopMiddleware(interrupt_on=...)`'s mapping plus `mode` and `rules`;
`"*"` is every tool without an entry; naming a tool the agent lacks is an error
(`check_tools`: a typo would leave the real tool at its default).

Rules and grants match canonical forms (`canonical`), so `notes/*` never covers
`notes/../.git/config`; a value with none matches nothing. An "allow" rule or a
pattern grant must match every canonical argument; "deny" or "ask", canonical or raw.

First match wins: `deny` (no grant lifts it); a matching rule (glob or regex on an
argument); the thread's "always allow" grant; the tool's mode from config, else its
declared default (a tool that asks may let a provably safe call through: read-only SQL).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from langchain_core.tools import BaseTool

from gatehouse.graph.protocol.decisions import ALL_TOOLS
from gatehouse.graph.protocol.pauses import DecisionType
from gatehouse.graph.protocol.tools import spec_of

Mode = Literal["allow", "ask", "deny"]
ALL_DECISIONS: tuple[DecisionType, ...] = ("approve", "edit", "reject", "respond")


GRANTED = "always allowed in this thread"


class PolicyError(ValueError):
    """The policy config is malformed."""


@dataclass(frozen=True)
class Rule:
    """A condition on one argument: a glob (`path = "notes/*"`) or a regex."""

    mode: Mode
    arg: str | None = None
    glob: str | None = None
    regex: str | None = None
    allowed_decisions: tuple[DecisionType, ...] | None = None

    def matches(
        self,
        args: Mapping[str, Any],
        default_arg: str | None,
        canonical: Mapping[str, str | None] | None = None,
    ) -> bool:
        canon = canonical or {}
        names = (self.arg,) if self.arg else _scope(default_arg, canon)
        if not names:
            return False
        if self.mode == "allow":
            return all(self._matches_value(_value(n, args, canon)) for n in names)
        # "deny" and "ask" also hold on the text as written: a rule against `..` still bites.
        raw = [str(args[n]) if n in args else None for n in names]
        return any(self._matches_value(v) for v in [*(_value(n, args, canon) for n in names), *raw])

    def _matches_value(self, value: str | None) -> bool:
        if value is None:
            return False
        if self.glob is not None and not fnmatch.fnmatchcase(value, self.glob):
            return False
        return not (self.regex is not None and re.search(self.regex, value) is None)


@dataclass(frozen=True)
class ToolPolicy:
    mode: Mode | None = None  # None: the tool's declared default
    allowed_decisions: tuple[DecisionType, ...] = ALL_DECISIONS
    description: str | None = None
    rules: tuple[Rule, ...] = ()
    # Who may decide this tool's calls (signed-in identities); empty: anyone signed in.
    approvers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    mode: Mode
    allowed_decisions: tuple[DecisionType, ...] = ALL_DECISIONS
    description: str | None = None
    reason: str = ""
    approvers: tuple[str, ...] = ()
    # The thread's grant that lets the call run (`reason` GRANTED), named on its record.
    grant: Grant | None = None


@dataclass(frozen=True)
class Grant:
    """ "Always allow this tool (optionally only where its argument matches) in this thread"."""

    tool: str
    pattern: str | None = None

    def covers(
        self,
        name: str,
        args: Mapping[str, Any],
        match_arg: str | None,
        canonical: Mapping[str, str | None] | None = None,
    ) -> bool:
        # A grant of "*" (the auto-approve switch) is no tool's: gate.py reads it.
        if name != self.tool:
            return False
        if self.pattern is None:
            return True
        canon = canonical or {}
        values = [_value(n, args, canon) for n in _scope(match_arg, canon)]
        pattern = self.pattern
        return bool(values) and all(
            v is not None and fnmatch.fnmatchcase(v, pattern) for v in values
        )

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "pattern": self.pattern}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Grant:
        return cls(tool=str(data["tool"]), pattern=data.get("pattern"))


def _decisions(value: Any, where: str) -> tuple[DecisionType, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise PolicyError(f"{where}: allowed_decisions must be a non-empty list")
    for item in value:
        if item not in ALL_DECISIONS:
            raise PolicyError(
                f"{where}: unknown decision {item!r} (use {', '.join(ALL_DECISIONS)})"
            )
    return tuple(value)


def _mode(value: Any, where: str) -> Mode:
    if value not in ("allow", "ask", "deny"):
        raise PolicyError(f"{where}: mode must be allow, ask or deny, not {value!r}")
    return value


def _rule(data: Any, where: str) -> Rule:
    if not isinstance(data, Mapping):
        raise PolicyError(f"{where}: a rule must be a table")
    known = {"mode", "arg", "glob", "regex", "allowed_decisions"}
    if extra := set(data) - known:
        raise PolicyError(f"{where}: unknown rule keys {sorted(extra)}")
    regex = data.get("regex")
    if regex is not None:
        try:
            re.compile(regex)
        except re.error as exc:
            raise PolicyError(f"{where}: bad regex {regex!r}: {exc}") from exc
    return Rule(
        mode=_mode(data.get("mode", "allow"), where),
        arg=data.get("arg"),
        glob=data.get("glob"),
        regex=regex,
        allowed_decisions=(
            _decisions(data["allowed_decisions"], where) if "allowed_decisions" in data else None
        ),
    )


def _tool_policy(name: str, value: Any) -> ToolPolicy:
    where = f"policy for {name!r}"
    if isinstance(value, bool):
        return ToolPolicy(mode="ask" if value else "allow")
    if isinstance(value, str):
        return ToolPolicy(mode=_mode(value, where))
    if not isinstance(value, Mapping):
        raise PolicyError(f"{where}: expected true, false, a mode or a table, got {value!r}")
    known = {"mode", "allowed_decisions", "description", "rules", "approvers"}
    if extra := set(value) - known:
        raise PolicyError(f"{where}: unknown keys {sorted(extra)}")
    approvers = value.get("approvers", [])
    if not isinstance(approvers, list | tuple) or not all(
        isinstance(a, str) and a.strip() for a in approvers
    ):
        raise PolicyError(
            f'{where}: approvers must be a list of identities (e.g. ["ana@example.com"])'
        )
    # A HITL-middleware config (`{"allowed_decisions": [...]}`) means "ask".
    mode = _mode(value["mode"], where) if "mode" in value else "ask"
    return ToolPolicy(
        mode=mode,
        allowed_decisions=_decisions(value.get("allowed_decisions", ALL_DECISIONS), where),
        description=value.get("description"),
        rules=tuple(
            _rule(r, f"{where}, rule {i + 1}") for i, r in enumerate(value.get("rules", []))
        ),
        approvers=tuple(a.strip() for a in approvers),
    )


@dataclass(frozen=True)
class Policy:
    tools: Mapping[str, ToolPolicy] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any] | None) -> Policy:
        return cls({name: _tool_policy(name, v) for name, v in (mapping or {}).items()})

    def unknown_tools(self, known: Iterable[str]) -> list[str]:
        """Names this policy configures that are not among `known` (besides "*")."""
        names = set(known)
        return sorted(n for n in self.tools if n != ALL_TOOLS and n not in names)

    def check_tools(self, known: Iterable[str]) -> None:
        """Refuse a policy that names a tool the agent does not have."""
        names = sorted(set(known))
        if unknown := self.unknown_tools(names):
            which = ", ".join(repr(n) for n in unknown)
            raise PolicyError(
                f"the policy names {'a tool' if len(unknown) == 1 else 'tools'} the agent does not have: {which}; "
                f'known tools: {", ".join(names) or "none"} (or "*" for every tool)'
            )

    def without(self, names: Iterable[str]) -> Policy:
        drop = set(names)
        return Policy({n: p for n, p in self.tools.items() if n not in drop})

    def for_tool(self, name: str) -> ToolPolicy:
        """The tool's own entry, else the "*" entry, else the tool's defaults."""
        return self.tools.get(name) or self.tools.get(ALL_TOOLS) or ToolPolicy()

    def evaluate(
        self,
        name: str,
        args: Mapping[str, Any],
        tool: BaseTool | None,
        grants: list[Grant] | tuple[Grant, ...] = (),
    ) -> Verdict:
        if tool is None:
            # Unknown tools are answered with an error by the tool runner, never asked.
            return Verdict(mode="allow", reason="unknown tool")
        spec = spec_of(tool)
        config = self.for_tool(name)
        if config.mode == "deny":
            return Verdict(mode="deny", reason="denied by policy")
        compound = spec.compound is not None and not _safe(lambda a: not spec.compound(a), args)
        canon = canonical_args(spec, args)
        for rule in config.rules:
            if compound and rule.mode == "allow":
                continue
            if rule.matches(args, spec.match_arg, canon):
                return _under(config, rule.mode, "matched a policy rule", rule.allowed_decisions)
        for grant in grants:
            if grant.covers(name, args, spec.match_arg, canon) and not (compound and grant.pattern):
                return Verdict(mode="allow", reason=GRANTED, grant=grant)
        if (
            config.mode is None
            and spec.default == "ask"
            and spec.auto_allow
            and _safe(spec.auto_allow, args)
        ):
            return Verdict(mode="allow", reason="judged safe by the tool")
        reason = "tool default" if config.mode is None else "policy for this tool"
        return _under(config, config.mode or spec.default, reason)

    def summary(self, tools: list[BaseTool]) -> list[dict[str, Any]]:
        """One row per tool for settings pages: risk, effective default, rules."""
        rows = []
        for t in tools:
            spec = spec_of(t)
            config = self.for_tool(t.name)
            rows.append(
                {
                    "tool": t.name,
                    "risk": spec.risk,
                    "mode": config.mode or spec.default,
                    "rules": len(config.rules),
                    # Each rule as configured (settings pages say what runs freely, why).
                    "rule_list": [
                        {k: v for k, v in asdict(r).items() if v is not None} for r in config.rules
                    ],
                }
            )
        return rows


def _under(
    config: ToolPolicy, mode: Mode, reason: str, decisions: tuple[DecisionType, ...] | None = None
) -> Verdict:
    return Verdict(
        mode, decisions or config.allowed_decisions, config.description, reason, config.approvers
    )


def canonical_args(spec: Any, args: Mapping[str, Any]) -> dict[str, str | None]:
    """{argument: canonical text or None} for the tool's canonical arguments."""
    if spec.canonical is None:
        return {}
    try:
        return dict(spec.canonical(dict(args)))
    except Exception:
        # No canonical form (a path that leaves the workspace, a URL with no host):
        # the matched argument matches nothing; the tool refuses it if it runs.
        return {spec.match_arg: None} if spec.match_arg else {}


def _scope(default_arg: str | None, canon: Mapping[str, str | None]) -> tuple[str, ...]:
    """What a rule without `arg`, or a pattern grant, is about: every canonical argument
    when the match argument is one (a move: both ends), else the match argument."""
    if default_arg is None:
        return ()
    return tuple(canon) if default_arg in canon else (default_arg,)


def _value(name: str, args: Mapping[str, Any], canon: Mapping[str, str | None]) -> str | None:
    if name in canon:
        return canon[name]
    return str(args[name]) if name in args else None


def _safe(check: Any, args: Mapping[str, Any]) -> bool:
    # A safety check that crashes on odd arguments means "not provably safe": ask.
    try:
        return bool(check(dict(args)))
    except Exception:
        return False

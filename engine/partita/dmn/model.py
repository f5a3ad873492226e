"""The model of a decision requirements graph: immutable, validated by `parser`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Input:
    id: str
    label: str
    expression: str
    """A FEEL expression (without the leading `=`)."""


@dataclass(frozen=True, slots=True)
class Output:
    id: str
    label: str
    name: str
    priorities: tuple[str, ...] = ()
    """`outputValues`, highest priority first (PRIORITY and OUTPUT ORDER)."""
    default: str = ""
    """`defaultOutputEntry`: a FEEL expression used when no rule matched."""


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    index: int
    """1-based, as Zeebe's audit counts rules."""
    input_entries: tuple[str, ...]
    """FEEL unary tests, one per input."""
    output_entries: tuple[str, ...]
    """FEEL expressions, one per output."""


@dataclass(frozen=True, slots=True)
class DecisionTable:
    inputs: tuple[Input, ...]
    outputs: tuple[Output, ...]
    rules: tuple[Rule, ...]
    hit_policy: str = "UNIQUE"
    aggregation: str = ""
    """COLLECT's SUM, MIN, MAX or COUNT ("" collects a list)."""


@dataclass(frozen=True, slots=True)
class LiteralExpression:
    expression: str


@dataclass(frozen=True, slots=True)
class Decision:
    id: str
    name: str
    logic: DecisionTable | LiteralExpression
    result_name: str
    """`<variable name>`, or the id: what a decision requiring this one reads its result as."""
    required: tuple[str, ...] = ()
    """Ids of the decisions this one requires (evaluated first, in document order)."""
    version_tag: str = ""
    """`zeebe:versionTag`, which business rule tasks may bind to."""


@dataclass(frozen=True, slots=True)
class Drg:
    """A decision requirements graph: a DMN `definitions` element and its decisions."""

    id: str
    name: str
    namespace: str
    decisions: dict[str, Decision] = field(default_factory=dict)

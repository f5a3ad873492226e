"""Evaluating a decision of a `Drg`: its required decisions first (depth first, in document
order, each result visible to the next under its result name), then its decision table (every
hit policy) or literal expression. The audit is what Zeebe's DECISION_EVALUATION records:
each evaluated decision with its inputs, matched rules and output. A failure names the decision
and the reason, with the audit up to it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from partita.dmn.model import Decision, DecisionTable, Drg, Rule
from partita.dmn.unary import compile_tests
from partita.feel import FeelError, compile_expression


@dataclass(frozen=True, slots=True)
class EvaluatedInput:
    input_id: str
    input_name: str
    input_value: str
    """JSON."""


@dataclass(frozen=True, slots=True)
class EvaluatedOutput:
    output_id: str
    output_name: str
    output_value: str
    """JSON."""


@dataclass(frozen=True, slots=True)
class MatchedRule:
    rule_id: str
    rule_index: int
    outputs: tuple[EvaluatedOutput, ...]


@dataclass(frozen=True, slots=True)
class EvaluatedDecision:
    decision_id: str
    decision_name: str
    decision_type: str
    """DECISION_TABLE or LITERAL_EXPRESSION."""
    output: str
    """JSON."""
    inputs: tuple[EvaluatedInput, ...] = ()
    matched_rules: tuple[MatchedRule, ...] = ()


@dataclass(frozen=True, slots=True)
class Evaluation:
    output: Any
    decisions: tuple[EvaluatedDecision, ...]


class DecisionFailure(Exception):  # noqa: N818 - Zeebe's word: a failed evaluation
    """The evaluation failed in `decision_id` for `reason`; `decisions` is the audit so far."""

    def __init__(self, decision_id: str, reason: str, decisions: tuple[EvaluatedDecision, ...]):
        super().__init__(reason)
        self.decision_id = decision_id
        self.reason = reason
        self.decisions = decisions


class _FailedError(Exception):
    pass


def evaluate_decision(drg: Drg, decision_id: str, variables: dict[str, Any]) -> Evaluation:
    """Evaluate `decision_id` (and what it requires) with `variables` (JSON values)."""
    audit: list[EvaluatedDecision] = []
    current = decision_id

    def run(decision: Decision) -> Any:
        nonlocal current
        context = dict(variables)
        for required in decision.required:
            context[drg.decisions[required].result_name] = run(drg.decisions[required])
        current = decision.id
        if isinstance(decision.logic, DecisionTable):
            output, inputs, matched = _table(decision.logic, context)
            kind = "DECISION_TABLE"
        else:
            output, inputs, matched = _expression(decision.logic.expression, context), (), ()
            kind = "LITERAL_EXPRESSION"
        audit.append(
            EvaluatedDecision(decision.id, decision.name, kind, _json(output), inputs, matched)
        )
        return output

    if decision_id not in drg.decisions:
        raise DecisionFailure(decision_id, f"no decision found for '{decision_id}'", ())
    try:
        output = run(drg.decisions[decision_id])
    except _FailedError as failure:
        reason = f"Expected to evaluate decision '{decision_id}', but {failure}"
        raise DecisionFailure(current, reason, tuple(audit)) from None
    return Evaluation(output, tuple(audit))


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _expression(text: str, context: dict[str, Any]) -> Any:
    try:
        return compile_expression("=" + text).evaluate(context)
    except FeelError as error:
        raise _FailedError(f"failed to evaluate expression '{text}': {error.reason}") from None


def _table(
    table: DecisionTable, context: dict[str, Any]
) -> tuple[Any, tuple[EvaluatedInput, ...], tuple[MatchedRule, ...]]:
    values = [_expression(i.expression, context) for i in table.inputs]
    inputs = tuple(
        EvaluatedInput(i.id, i.label or i.expression, _json(v))
        for i, v in zip(table.inputs, values, strict=True)
    )
    matched = [rule for rule in table.rules if _matches(rule, values, context)]
    if table.hit_policy == "FIRST":
        matched = matched[:1]
    rows = [_row(table, rule, context) for rule in matched]
    audit = tuple(
        MatchedRule(
            rule.id,
            rule.index,
            tuple(
                EvaluatedOutput(o.id, o.name or o.label, _json(row[_name(o, table)]))
                for o in table.outputs
            ),
        )
        for rule, row in zip(matched, rows, strict=True)
    )
    return _hit(table, rows, context), inputs, audit


def _matches(rule: Rule, values: list[Any], context: dict[str, Any]) -> bool:
    for entry, value in zip(rule.input_entries, values, strict=True):
        try:
            result = compile_tests(entry)(value, context)
        except FeelError as error:
            raise _FailedError(
                f"failed to evaluate the input entry '{entry}': {error.reason}"
            ) from None
        if result is not None and not isinstance(result, bool):
            raise _FailedError(
                f"input entry must return true, false, or null, but found '{result}'"
            )
        if not result:
            return False
    return True


def _name(output: Any, table: DecisionTable) -> str:
    return output.name or output.id if len(table.outputs) > 1 else "_"


def _row(table: DecisionTable, rule: Rule, context: dict[str, Any]) -> dict[str, Any]:
    return {
        _name(o, table): _expression(text, context) if text else None
        for o, text in zip(table.outputs, rule.output_entries, strict=True)
    }


def _single(table: DecisionTable, row: dict[str, Any]) -> Any:
    return row["_"] if len(table.outputs) == 1 else row


def _hit(table: DecisionTable, rows: list[dict[str, Any]], context: dict[str, Any]) -> Any:
    policy = table.hit_policy
    if not rows:
        defaults = {
            _name(o, table): _expression(o.default, context) for o in table.outputs if o.default
        }
        if not defaults:
            return None
        return _single(
            table, {_name(o, table): defaults.get(_name(o, table)) for o in table.outputs}
        )
    if policy == "UNIQUE":
        if len(rows) > 1:
            raise _FailedError(
                f"multiple values aren't allowed for UNIQUE hit policy. found: '{_show(rows)}'"
            )
        return _single(table, rows[0])
    if policy == "FIRST":
        return _single(table, rows[0])
    if policy == "ANY":
        distinct = [r for i, r in enumerate(rows) if r not in rows[:i]]
        if len(distinct) > 1:
            raise _FailedError(
                f"different values aren't allowed for ANY hit policy. found: '{_show(distinct)}'"
            )
        return _single(table, distinct[0])
    if policy in ("PRIORITY", "OUTPUT ORDER"):
        ordered = sorted(rows, key=lambda row: _priority(table, row))
        if policy == "PRIORITY":
            return _single(table, ordered[0])
        return [_single(table, row) for row in ordered]
    if policy == "RULE ORDER":
        return [_single(table, row) for row in rows]
    values = [_single(table, row) for row in rows]  # COLLECT
    if table.aggregation == "COUNT":
        return len(values)
    if table.aggregation in ("SUM", "MIN", "MAX"):
        for value in values:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise _FailedError(f"expected number but found '{_json(value)}'")
        if table.aggregation == "SUM":
            return sum(values)
        return min(values) if table.aggregation == "MIN" else max(values)
    return values


def _priority(table: DecisionTable, row: dict[str, Any]) -> tuple[int, ...]:
    ranks = []
    for output in table.outputs:
        value = row[_name(output, table)]
        text = value if isinstance(value, str) else _json(value)
        ranks.append(
            output.priorities.index(text) if text in output.priorities else len(output.priorities)
        )
    return tuple(ranks)


def _show(rows: list[dict[str, Any]]) -> str:
    return ", ".join(_json(row.get("_", row)) for row in rows)

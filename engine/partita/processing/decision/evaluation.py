"""Evaluating a deployed decision and writing what happened: DECISION_EVALUATION EVALUATED
with the output and the audit of every decision evaluated, or FAILED with the reason and the
decision that failed (a failed evaluation is an event, not a rejection, as in Zeebe)."""

from __future__ import annotations

import json
from typing import Any

from msgspec.structs import replace

from partita import dmn
from partita.processing.context import ProcessingContext
from partita.processing.deployment import decisions
from partita.protocol.decision_values import (
    DecisionEvaluationValue,
    EvaluatedDecision,
    EvaluatedInput,
    EvaluatedOutput,
    MatchedRule,
)
from partita.protocol.intents import DecisionEvaluationIntent
from partita.state.stored import DeployedDecision
from partita.state.view import StateView


def evaluate(
    ctx: ProcessingContext,
    decision_key: int,
    decision: DeployedDecision,
    variables: dict[str, Any],
    origin: DecisionEvaluationValue,
    *,
    respond: bool = False,
) -> tuple[bool, Any, DecisionEvaluationValue]:
    """Evaluate `decision` with `variables` and write EVALUATED or FAILED under a new key,
    `origin` giving the fields of the task (or request) it is for. Whether it succeeded, the
    output, and the event's value."""
    key = ctx.keys.next_key()
    value = replace(
        origin,
        decision_key=decision_key,
        decision_id=decision.decision_id,
        decision_name=decision.name,
        decision_version=decision.version,
        decision_requirements_id=decision.drg_id,
        decision_requirements_key=decision.drg_key,
        variables="{}",
    )
    graph = decisions.graph(ctx.state, decision.drg_key)
    try:
        evaluation = dmn.evaluate_decision(graph, decision.decision_id, variables)
    except dmn.DecisionFailure as failure:
        audit = _audit(ctx.state, key, decision.drg_key, failure.decisions)
        failed = replace(
            value,
            evaluated_decisions=audit,
            evaluation_failure_message=failure.reason,
            failed_decision_id=failure.decision_id,
        )
        ctx.append_event(DecisionEvaluationIntent.FAILED, failed, key, respond=respond)
        return False, None, failed
    output = json.dumps(evaluation.output, separators=(",", ":"), ensure_ascii=False)
    audit = _audit(ctx.state, key, decision.drg_key, evaluation.decisions)
    evaluated = replace(value, decision_output=output, evaluated_decisions=audit)
    ctx.append_event(DecisionEvaluationIntent.EVALUATED, evaluated, key, respond=respond)
    return True, evaluation.output, evaluated


def _audit(
    db: StateView, key: int, drg_key: int, evaluated: tuple[dmn.EvaluatedDecision, ...]
) -> tuple[EvaluatedDecision, ...]:
    return tuple(
        EvaluatedDecision(
            decision_id=d.decision_id,
            decision_name=d.decision_name,
            decision_key=found[0] if found else -1,
            decision_version=found[1].version if found else -1,
            decision_type=d.decision_type,
            decision_output=d.output,
            evaluated_inputs=tuple(
                EvaluatedInput(i.input_id, i.input_name, i.input_value) for i in d.inputs
            ),
            matched_rules=tuple(
                MatchedRule(
                    r.rule_id,
                    r.rule_index,
                    tuple(
                        EvaluatedOutput(o.output_id, o.output_name, o.output_value)
                        for o in r.outputs
                    ),
                )
                for r in d.matched_rules
            ),
            decision_evaluation_instance_key=f"{key}-{n}",
        )
        for n, d in enumerate(evaluated, start=1)
        for found in [_of_graph(db, d.decision_id, drg_key)]
    )


def _of_graph(db: StateView, decision_id: str, drg_key: int) -> tuple[int, DeployedDecision] | None:
    """The version of `decision_id` that belongs to the graph `drg_key`."""
    latest = decisions.latest_decision(db, decision_id)
    if latest is None:
        return None
    for version in range(latest[1].version, 0, -1):
        found = decisions.decision_version(db, decision_id, version)
        if found is not None and found[1].drg_key == drg_key:
            return found
    return None

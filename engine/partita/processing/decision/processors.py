"""DECISION_EVALUATION EVALUATE: a client asks for a decision (Zeebe's EvaluateDecision), by
id (its latest version) or by key, with variables; the EVALUATED or FAILED event answers it."""

from __future__ import annotations

from partita.processing.behavior.variables import variables_document
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.decision.evaluation import evaluate
from partita.processing.deployment import decisions
from partita.processing.dispatch import Handlers
from partita.protocol.decision_values import DecisionEvaluationValue
from partita.protocol.enums import RejectionType
from partita.protocol.intents import DecisionEvaluationIntent
from partita.protocol.records import Record

handlers = Handlers()


@handlers.processor(DecisionEvaluationIntent.EVALUATE)
def evaluate_requested(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, DecisionEvaluationValue)
    variables = variables_document(value.variables)
    if value.decision_id:
        found = decisions.latest_decision(ctx.state, value.decision_id)
        missing = f"id '{value.decision_id}'"
        asked = value.decision_id
    elif value.decision_key > -1:
        stored = decisions.decision(ctx.state, value.decision_key)
        found = None if stored is None else (value.decision_key, stored)
        missing = f"key '{value.decision_key}'"
        asked = str(value.decision_key)
    else:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            "Expected either a decision id or a valid decision key, but none provided",
        )
    if found is None:
        raise RejectionError(
            RejectionType.NOT_FOUND,
            f"Expected to evaluate decision '{asked}', but no decision found for {missing}",
        )
    key, decision = found
    evaluate(ctx, key, decision, variables, DecisionEvaluationValue(), respond=True)

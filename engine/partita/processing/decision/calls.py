"""A business rule task with `zeebe:calledDecision`: when it activates, find the decision (by
its binding: latest, the process's own deployment, or a version tag), evaluate it with the
variables visible from the task and set the output as the result variable (merged as a job's
variables are). A decision that cannot be found is a CALLED_DECISION_ERROR incident; one that
fails, a DECISION_EVALUATION FAILED event and a DECISION_EVALUATION_ERROR incident. Resolving
the incident evaluates again."""

from __future__ import annotations

from partita.bpmn import BusinessRuleTask
from partita.feel import FeelError, compile_expression
from partita.processing.behavior.incidents import element_incident
from partita.processing.behavior.variables import merge_event_variables
from partita.processing.context import ProcessingContext
from partita.processing.decision.evaluation import evaluate
from partita.processing.deployment import decisions
from partita.processing.deployment import state as deployment_state
from partita.processing.variable.state import visible_variables
from partita.protocol.decision_values import DecisionEvaluationValue
from partita.protocol.enums import ErrorType
from partita.protocol.values import ProcessInstanceValue
from partita.state.stored import DeployedDecision


def call_decision(
    ctx: ProcessingContext, task: BusinessRuleTask, key: int, value: ProcessInstanceValue
) -> bool:
    """Evaluate the task's decision and set its result; False (with an incident) when the
    decision cannot be found or its evaluation fails."""
    variables = visible_variables(ctx.state, key)
    try:
        decision_id = compile_expression(task.decision_id).evaluate_as("string", variables)
    except FeelError as error:
        element_incident(
            ctx, ErrorType.EXTRACT_VALUE_ERROR, f"{task.id}: {error.reason}", value, key
        )
        return False
    found = _find(ctx, task, decision_id, value)
    if isinstance(found, str):
        element_incident(ctx, ErrorType.CALLED_DECISION_ERROR, found, value, key)
        return False
    origin = DecisionEvaluationValue(
        bpmn_process_id=value.bpmn_process_id,
        process_definition_key=value.process_definition_key,
        process_instance_key=value.process_instance_key,
        element_id=task.id,
        element_instance_key=key,
    )
    succeeded, output, event = evaluate(ctx, found[0], found[1], variables, origin)
    if not succeeded:
        reason = event.evaluation_failure_message
        element_incident(ctx, ErrorType.DECISION_EVALUATION_ERROR, reason, value, key)
        return False
    merge_event_variables(ctx, task, key, value, {task.result_variable: output})
    return True


def _find(
    ctx: ProcessingContext, task: BusinessRuleTask, decision_id: str, value: ProcessInstanceValue
) -> tuple[int, DeployedDecision] | str:
    if task.binding == "versionTag":
        tag = task.version_tag
        found = decisions.newest_decision_where(ctx.state, decision_id, version_tag=tag)
        return found or (
            f"Expected to evaluate decision with id '{decision_id}' and version tag '{tag}', but"
            " no such decision found. To resolve this incident, deploy a decision with the given"
            " id and version tag."
        )
    if task.binding == "deployment":
        process = deployment_state.by_key(ctx.state, value.process_definition_key)
        deployment = process.deployment_key if process is not None else -1
        found = decisions.newest_decision_where(ctx.state, decision_id, deployment_key=deployment)
        return found or (
            f"Expected to evaluate decision '{decision_id}' with binding type 'deployment', but"
            f" no such decision found in the deployment with key {deployment} which contained"
            " the current process. To resolve this incident, migrate the process instance to a"
            " process definition that is deployed together with the intended decision to"
            " evaluate."
        )
    latest = decisions.latest_decision(ctx.state, decision_id)
    return latest or (
        f"Expected to evaluate decision '{decision_id}', but no decision found for id"
        f" '{decision_id}'"
    )

"""Tasks. An element whose work is a job (a service, send or business rule task, a job-based
script or user task, a message throw or end event) creates it (JOB CREATED) when it activates,
with its type, retries and evaluated headers (FEEL allowed) and its static headers, and waits
until the job completes (the job domain). A script task with `zeebe:script` evaluates its
expression and completes. A receive task waits for its message like a catch event (`events`)."""

from __future__ import annotations

from partita.bpmn import JobWorkerElement, ScriptTask
from partita.feel import FeelError, compile_expression
from partita.processing.behavior.incidents import element_incident
from partita.processing.behavior.jobs import new_job
from partita.processing.behavior.variables import merge_event_variables
from partita.processing.context import ProcessingContext
from partita.processing.variable.state import visible_variables
from partita.protocol.enums import ErrorType
from partita.protocol.values import ProcessInstanceValue


def create_job(
    ctx: ProcessingContext, task: JobWorkerElement, key: int, value: ProcessInstanceValue
) -> bool:
    """JOB CREATED for the element instance `key`; False (with an incident) when its job type,
    retries or evaluated headers cannot be evaluated."""
    return new_job(
        ctx,
        key,
        value,
        element_id=task.id,
        job_type=task.job_type,
        retries=task.retries,
        headers=task.headers,
        evaluated_headers=task.evaluated_headers,
    )


def run_script(
    ctx: ProcessingContext, task: ScriptTask, key: int, value: ProcessInstanceValue
) -> bool:
    """Evaluate a script task's expression and set its result variable (as a job's variables
    are merged); False (with an incident naming the expression) when it fails."""
    try:
        result = compile_expression(task.expression).evaluate(visible_variables(ctx.state, key))
    except FeelError as error:
        reason = f"{task.id}: {task.expression}: {error.reason}"
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, reason, value, key)
        return False
    merge_event_variables(ctx, task, key, value, {task.result_variable: result})
    return True

"""Tasks. A service task creates a job (JOB CREATED) when it activates, with its type and
retries evaluated (FEEL allowed) and its headers, and waits until the job completes (the job
domain). A receive task waits for its message like a catch event (`events`)."""

from __future__ import annotations

from partita.bpmn import ServiceTask
from partita.feel import FeelError, compile_expression
from partita.processing.behavior.incidents import element_incident
from partita.processing.context import ProcessingContext
from partita.processing.variable.state import visible_variables
from partita.protocol.enums import ErrorType
from partita.protocol.intents import JobIntent
from partita.protocol.values import JobValue, ProcessInstanceValue


def create_job(
    ctx: ProcessingContext, task: ServiceTask, key: int, value: ProcessInstanceValue
) -> bool:
    """JOB CREATED for service task instance `key`; False (with an incident) when its job
    type or retries cannot be evaluated."""
    dynamic = task.job_type.startswith("=") or task.retries.startswith("=")
    variables = visible_variables(ctx.state, key) if dynamic else {}
    try:
        job_type = compile_expression(task.job_type).evaluate_as("string", variables)
        retries = compile_expression(task.retries).evaluate(variables)
        retries = int(retries)
    except (FeelError, ValueError, TypeError) as error:
        reason = error.reason if isinstance(error, FeelError) else str(error)
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, f"{task.id}: {reason}", value, key)
        return False
    job = JobValue(
        type=job_type,
        retries=retries,
        custom_headers=dict(task.headers),
        process_instance_key=value.process_instance_key,
        bpmn_process_id=value.bpmn_process_id,
        process_definition_version=value.version,
        process_definition_key=value.process_definition_key,
        element_id=task.id,
        element_instance_key=key,
    )
    ctx.append_event(JobIntent.CREATED, job, ctx.keys.next_key())
    return True

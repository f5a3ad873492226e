"""Tasks. An element whose work is a job (a service, send or business rule task, a job-based
script or user task, a message throw or end event) creates it (JOB CREATED) when it activates,
with its type, retries and evaluated headers (FEEL allowed) and its static headers, and waits
until the job completes (the job domain). A script task with `zeebe:script` evaluates its
expression and completes. A receive task waits for its message like a catch event (`events`)."""

from __future__ import annotations

from typing import Any

from partita.bpmn import JobWorkerElement, ScriptTask
from partita.bpmn.activities import LIST_HEADERS
from partita.feel import FeelError, compile_expression
from partita.processing.behavior.incidents import element_incident
from partita.processing.behavior.variables import merge_event_variables
from partita.processing.context import ProcessingContext
from partita.processing.variable.state import visible_variables
from partita.protocol import json_text
from partita.protocol.enums import ErrorType, JobKind, JobListenerEventType
from partita.protocol.intents import JobIntent
from partita.protocol.values import JobValue, ProcessInstanceValue


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


def new_job(
    ctx: ProcessingContext,
    key: int,
    value: ProcessInstanceValue,
    *,
    element_id: str,
    job_type: str,
    retries: str,
    headers: tuple[tuple[str, str], ...] = (),
    evaluated_headers: tuple[tuple[str, str], ...] = (),
    kind: JobKind = JobKind.BPMN_ELEMENT,
    event: JobListenerEventType = JobListenerEventType.UNSPECIFIED,
) -> bool:
    """JOB CREATED of `kind` for element instance `key`, its type, retries and evaluated headers
    evaluated (FEEL allowed); False (with an incident naming the element) when one cannot be."""
    dynamic = (
        job_type.startswith("=")
        or retries.startswith("=")
        or any(text.startswith("=") for _, text in evaluated_headers)
    )
    variables = visible_variables(ctx.state, key) if dynamic else {}
    try:
        evaluated_type = compile_expression(job_type).evaluate_as("string", variables)
        evaluated_retries = int(compile_expression(retries).evaluate(variables))
        all_headers = dict(headers)
        for name, text in evaluated_headers:
            all_headers[name] = _header(name, text, variables)
    except (FeelError, ValueError, TypeError) as error:
        reason = error.reason if isinstance(error, FeelError) else str(error)
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, f"{element_id}: {reason}", value, key)
        return False
    if not evaluated_type:
        reason = f"{element_id}: the job type {job_type} is empty"
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, reason, value, key)
        return False
    job = JobValue(
        type=evaluated_type,
        retries=evaluated_retries,
        custom_headers=all_headers,
        process_instance_key=value.process_instance_key,
        bpmn_process_id=value.bpmn_process_id,
        process_definition_version=value.version,
        process_definition_key=value.process_definition_key,
        element_id=element_id,
        element_instance_key=key,
        job_kind=kind,
        listener_event_type=event,
    )
    ctx.append_event(JobIntent.CREATED, job, ctx.keys.next_key())
    return True


def _header(name: str, text: str, variables: dict[str, Any]) -> str:
    """An evaluated header's value: text, or for a list header (candidate users and groups)
    a JSON array of names, from static `a, b` or FEEL yielding a list of strings."""
    if name not in LIST_HEADERS:
        return str(compile_expression(text).evaluate_as("string", variables))
    if not text.startswith("="):
        return json_text.write([n.strip() for n in text.split(",") if n.strip()])
    names = compile_expression(text).evaluate(variables)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"{text} must yield a list of strings, not {json_text.write(names)}")
    return json_text.write(names)


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

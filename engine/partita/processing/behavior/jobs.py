"""Creating a job: JOB CREATED for an element instance, of any kind (a task's, an execution or
task listener's, an ad-hoc subprocess's), its type, retries and headers evaluated (FEEL
allowed); an incident naming the element when they cannot be."""

from __future__ import annotations

from typing import Any

from partita.bpmn.activities import LIST_HEADERS
from partita.feel import FeelError, compile_expression
from partita.processing.behavior.incidents import element_incident
from partita.processing.context import ProcessingContext
from partita.processing.variable.state import visible_variables
from partita.protocol import json_text
from partita.protocol.enums import ErrorType, JobKind, JobListenerEventType
from partita.protocol.intents import JobIntent
from partita.protocol.values import JobValue, ProcessInstanceValue


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

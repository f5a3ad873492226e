"""Raising incidents: an element or a job that cannot go on writes INCIDENT CREATED and stays
where it stopped until INCIDENT RESOLVE (the incident domain) lets it continue."""

from __future__ import annotations

from partita.processing.context import ProcessingContext
from partita.protocol.enums import ErrorType
from partita.protocol.intents import IncidentIntent
from partita.protocol.values import IncidentValue, JobValue, ProcessInstanceValue


def element_incident(
    ctx: ProcessingContext,
    error_type: ErrorType,
    message: str,
    value: ProcessInstanceValue,
    key: int,
) -> None:
    """INCIDENT CREATED for element instance `key` (a failing expression or mapping)."""
    incident = IncidentValue(
        error_type=error_type,
        error_message=message,
        bpmn_process_id=value.bpmn_process_id,
        process_definition_key=value.process_definition_key,
        process_instance_key=value.process_instance_key,
        element_id=value.element_id,
        element_instance_key=key,
        variable_scope_key=key,
    )
    ctx.append_event(IncidentIntent.CREATED, incident, ctx.keys.next_key())


def job_incident(
    ctx: ProcessingContext, job_key: int, job: JobValue, error_type: ErrorType, message: str
) -> None:
    """INCIDENT CREATED for a job that stopped (no retries left, an uncaught error, too large)."""
    incident = IncidentValue(
        error_type=error_type,
        error_message=message,
        bpmn_process_id=job.bpmn_process_id,
        process_definition_key=job.process_definition_key,
        process_instance_key=job.process_instance_key,
        element_id=job.element_id,
        element_instance_key=job.element_instance_key,
        job_key=job_key,
        variable_scope_key=job.element_instance_key,
    )
    ctx.append_event(IncidentIntent.CREATED, incident, ctx.keys.next_key())

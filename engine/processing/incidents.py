"""Incidents: created when an element cannot go on (a failing expression, a job out of
retries); INCIDENT RESOLVE continues where it stopped.

State: `incident` (key -> the incident) and `incident_by_element` (element instance -> key).
Resolving a job incident requires the job to have retries again (UPDATE_RETRIES first, as in
Zeebe); resolving an element incident retries the element's step: its activation if the
element never became active, its completion otherwise.
"""

from __future__ import annotations

from engine.processing import instances
from engine.processing.context import ProcessingContext, RejectionError
from engine.processing.engine import Engine
from engine.processing.job import state as job_state
from engine.processing.job.state import JOBS
from engine.protocol.enums import ErrorType, RejectionType
from engine.protocol.intents import IncidentIntent
from engine.protocol.intents import ProcessInstanceIntent as Instance
from engine.protocol.records import Record
from engine.protocol.values import IncidentValue, JobValue
from engine.state import ColumnFamilies, PartitionDb

INCIDENTS = ColumnFamilies.INCIDENT
BY_ELEMENT = ColumnFamilies.INCIDENT_BY_ELEMENT


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


def apply_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, IncidentValue)
    db.column(INCIDENTS).insert(
        record.key,
        {
            "errorType": value.error_type.name,
            "errorMessage": value.error_message,
            "elementInstanceKey": value.element_instance_key,
            "jobKey": value.job_key,
            "processInstanceKey": value.process_instance_key,
        },
    )
    if value.element_instance_key > 0:
        db.column(BY_ELEMENT).upsert(value.element_instance_key, record.key)


def apply_resolved(record: Record, db: PartitionDb) -> None:
    stored = db.column(INCIDENTS).get(record.key)
    if stored is None:
        return
    db.column(INCIDENTS).delete_existing(record.key)
    job_key = stored["jobKey"]
    job = db.column(JOBS).get(job_key) if job_key > 0 else None
    if job is not None and db.column(job_state.STATES).get(job_key) in ("FAILED", "ERROR_THROWN"):
        job_state.make_activatable(db, job_key, job)  # a worker can take it again
    if db.column(BY_ELEMENT).get(stored["elementInstanceKey"]) == record.key:
        db.column(BY_ELEMENT).delete(stored["elementInstanceKey"])


def incident_value(stored: dict[str, object], record_key: int) -> IncidentValue:
    return IncidentValue(
        error_type=ErrorType[str(stored["errorType"])],
        error_message=str(stored["errorMessage"]),
        element_instance_key=int(stored["elementInstanceKey"]),  # type: ignore[call-overload]
        job_key=int(stored["jobKey"]),  # type: ignore[call-overload]
        process_instance_key=int(stored["processInstanceKey"]),  # type: ignore[call-overload]
    )


def resolve(command: Record, ctx: ProcessingContext) -> None:
    stored = ctx.state.column(INCIDENTS).get(command.key)
    if stored is None:
        raise RejectionError(RejectionType.NOT_FOUND, f"no open incident with key {command.key}")
    job_key = stored["jobKey"]
    if job_key > 0:
        job = ctx.state.column(JOBS).get(job_key)
        if job is not None and job["retries"] <= 0:
            raise RejectionError(
                RejectionType.INVALID_STATE,
                f"job {job_key} has no retries left; update its retries before resolving"
                f" incident {command.key}",
            )
    ctx.append_event(
        IncidentIntent.RESOLVED, incident_value(stored, command.key), command.key, respond=True
    )
    if job_key > 0:
        return  # the job is activatable again; a worker continues
    element = instances.instance(ctx.state, stored["elementInstanceKey"])
    if element is None:
        return
    value = instances.value_of(element)
    if element["state"] == Instance.ELEMENT_ACTIVATING.name:
        ctx.append_command(Instance.ACTIVATE_ELEMENT, value, stored["elementInstanceKey"])
    else:
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, stored["elementInstanceKey"])


def register(engine: Engine) -> None:
    engine.applier(IncidentIntent.CREATED, apply_created)
    engine.applier(IncidentIntent.RESOLVED, apply_resolved)
    engine.processor(IncidentIntent.RESOLVE, resolve)

"""Jobs: created by service tasks, completed by job workers.

State: `job` (the job), `job_state` (ACTIVATABLE / ACTIVATED), `job_activatable` (type, key).
JOB COMPLETE merges the completion variables with Zeebe's default semantics and completes the
service task. A command for a job that is no longer active is rejected NOT_FOUND.
"""

from __future__ import annotations

import json
from dataclasses import replace

from engine.processing import instances, job_state
from engine.processing.context import ProcessingContext, RejectionError
from engine.processing.element import propagate_variables
from engine.processing.engine import Engine
from engine.processing.job_state import ACTIVATABLE, JOBS, STATES, job_value, stored_job
from engine.protocol.enums import ErrorType, RejectionType
from engine.protocol.intents import IncidentIntent, JobIntent
from engine.protocol.intents import ProcessInstanceIntent as Instance
from engine.protocol.records import Record
from engine.protocol.values import IncidentValue, JobValue
from engine.state import PartitionDb


def apply_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, JobValue)
    db.column(JOBS).insert(record.key, stored_job(value))
    db.column(STATES).insert(record.key, "ACTIVATABLE")
    db.column(ACTIVATABLE).insert((value.type, record.key), None)
    element = instances.instance(db, value.element_instance_key)
    if element is not None:
        db.column(instances.INSTANCES).update(
            value.element_instance_key, {**element, "jobKey": record.key}
        )


def apply_removed(record: Record, db: PartitionDb) -> None:
    job_state.remove(db, record.key)


def complete(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, JobValue)
    stored = _active_job(ctx, command.key)
    try:
        variables = json.loads(value.variables or "{}")
    except json.JSONDecodeError as error:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT, f"variables are not valid JSON: {error}"
        ) from None
    if not isinstance(variables, dict):
        raise RejectionError(RejectionType.INVALID_ARGUMENT, "variables must be a JSON object")
    job = replace(job_value(stored), variables=value.variables or "{}")
    ctx.append_event(JobIntent.COMPLETED, job, command.key, respond=True)
    element = instances.instance(ctx.state, job.element_instance_key)
    if element is None:
        return
    task = instances.value_of(element)
    propagate_variables(ctx, job.element_instance_key, variables, task)
    ctx.append_command(Instance.COMPLETE_ELEMENT, task, job.element_instance_key)


def _active_job(ctx: ProcessingContext, key: int) -> dict[str, object]:
    stored = ctx.state.column(JOBS).get(key)
    if stored is None:
        raise RejectionError(
            RejectionType.NOT_FOUND,
            f"job {key} does not exist or is no longer active (completed, failed out or cancelled)",
        )
    result: dict[str, object] = stored
    return result


def fail(command: Record, ctx: ProcessingContext) -> None:
    """JOB FAIL: remaining retries from the worker; at 0 an incident stops the task."""
    value = command.value
    assert isinstance(value, JobValue)
    stored = _active_job(ctx, command.key)
    failed = replace(
        job_value(stored),
        retries=max(value.retries, 0),
        error_message=value.error_message,
        retry_backoff=value.retry_backoff,
        recurring_time=ctx.now + value.retry_backoff if value.retry_backoff > 0 else -1,
    )
    ctx.append_event(JobIntent.FAILED, failed, command.key, respond=True)
    if failed.retries <= 0:
        incident = IncidentValue(
            error_type=ErrorType.JOB_NO_RETRIES,
            error_message=value.error_message or f"job {command.key} failed with no retries left",
            bpmn_process_id=failed.bpmn_process_id,
            process_definition_key=failed.process_definition_key,
            process_instance_key=failed.process_instance_key,
            element_id=failed.element_id,
            element_instance_key=failed.element_instance_key,
            job_key=command.key,
            variable_scope_key=failed.element_instance_key,
        )
        ctx.append_event(IncidentIntent.CREATED, incident, ctx.keys.next_key())


def update_retries(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, JobValue)
    stored = _active_job(ctx, command.key)
    if value.retries < 1:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT, f"retries must be at least 1, got {value.retries}"
        )
    updated = replace(job_value(stored), retries=value.retries)
    ctx.append_event(JobIntent.RETRIES_UPDATED, updated, command.key, respond=True)


def apply_failed(record: Record, db: PartitionDb) -> None:
    """Retries left: activatable again (after the back-off, when the worker asked for one);
    none left: FAILED until an incident resolution."""
    value = record.value
    assert isinstance(value, JobValue)
    stored = db.column(JOBS).get(record.key)
    if stored is None:
        return
    stored = {**stored, "retries": value.retries}
    db.column(JOBS).update(record.key, stored)
    if value.retries > 0:
        job_state.make_activatable(db, record.key, stored)
    else:
        job_state.make_failed(db, record.key, stored)


def apply_retries(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, JobValue)
    stored = db.column(JOBS).get(record.key)
    if stored is not None:
        db.column(JOBS).update(record.key, {**stored, "retries": value.retries})


def register(engine: Engine) -> None:
    engine.applier(JobIntent.CREATED, apply_created)
    engine.applier(JobIntent.COMPLETED, apply_removed)
    engine.applier(JobIntent.CANCELED, apply_removed)
    engine.processor(JobIntent.COMPLETE, complete)
    engine.processor(JobIntent.FAIL, fail)
    engine.processor(JobIntent.UPDATE_RETRIES, update_retries)
    engine.applier(JobIntent.FAILED, apply_failed)
    engine.applier(JobIntent.RETRIES_UPDATED, apply_retries)

"""Jobs: created by service tasks, completed, failed or answered with a BPMN error by workers.

JOB COMPLETE merges the completion variables with Zeebe's default semantics and completes the
service task. FAIL takes the retries the worker says are left: none -> an incident; some, with
a back-off -> the job waits (RECUR_AFTER_BACKOFF from the due-date checker), without -> it is
activatable at once. THROW_ERROR with no catching error event (none exist yet) -> an
UNHANDLED_ERROR_EVENT incident naming the code; resolving it makes the job activatable again.
A command for a job that no longer exists is rejected NOT_FOUND; one for a job that is
waiting (an incident, a back-off) is rejected INVALID_STATE.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from engine.processing import instances, job_state, scopes
from engine.processing.context import MAX_DEADLINE, ProcessingContext, RejectionError
from engine.processing.engine import MAX_DUE_COMMANDS, Engine
from engine.processing.incidents import job_incident
from engine.processing.job_state import JOBS, STATES, job_value, stored_job
from engine.processing.mappings import propagate_variables, variables_document
from engine.protocol.enums import ErrorType, RejectionType
from engine.protocol.intents import JobIntent
from engine.protocol.intents import ProcessInstanceIntent as Instance
from engine.protocol.records import Record
from engine.protocol.records import command as record_command
from engine.protocol.values import JobValue
from engine.state import PartitionDb


def apply_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, JobValue)
    job_state.make_created(db, record.key, stored_job(value))
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
    variables = variables_document(value.variables)
    job = replace(job_value(stored), variables=value.variables or "{}")
    ctx.append_event(JobIntent.COMPLETED, job, command.key, respond=True)
    element = instances.instance(ctx.state, job.element_instance_key)
    if element is None:
        return
    task = instances.value_of(element)
    propagate_variables(ctx, job.element_instance_key, variables, task)
    ctx.append_command(Instance.COMPLETE_ELEMENT, task, job.element_instance_key)


def _active_job(ctx: ProcessingContext, key: int, *, any_state: bool = False) -> dict[str, object]:
    stored = ctx.state.column(JOBS).get(key)
    if stored is None:
        raise RejectionError(
            RejectionType.NOT_FOUND,
            f"job {key} does not exist or is no longer active (completed or cancelled)",
        )
    state = ctx.state.column(STATES).get(key)
    if not any_state and state not in job_state.ACTIVE_STATES:
        why = {
            "FAILED": "it failed with no retries left; update its retries and resolve the incident",
            "ERROR_THROWN": "a worker threw an uncaught error; resolve the incident first",
            "BACKOFF": "it is waiting out its retry back-off",
        }.get(str(state), f"it is {state}")
        raise RejectionError(RejectionType.INVALID_STATE, f"job {key} cannot be used: {why}")
    result: dict[str, object] = stored
    return result


def fail(command: Record, ctx: ProcessingContext) -> None:
    """JOB FAIL: remaining retries from the worker; at 0 an incident stops the task."""
    value = command.value
    assert isinstance(value, JobValue)
    stored = _active_job(ctx, command.key)
    if value.retry_backoff < 0:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"retryBackOff must not be negative, got {value.retry_backoff}",
        )
    if ctx.now + value.retry_backoff > MAX_DEADLINE:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"a retryBackOff of {value.retry_backoff} ms puts the retry past {MAX_DEADLINE}",
        )
    retries = max(value.retries, 0)
    failed = replace(
        job_value(stored),
        retries=retries,
        error_message=value.error_message,
        retry_backoff=value.retry_backoff,
        recurring_time=ctx.now + value.retry_backoff
        if value.retry_backoff > 0 and retries > 0
        else -1,
        variables="{}",
    )
    ctx.append_event(JobIntent.FAILED, failed, command.key, respond=True)
    if retries <= 0:
        message = value.error_message or f"job {command.key} failed with no retries left"
        job_incident(ctx, command.key, failed, ErrorType.JOB_NO_RETRIES, message)


def throw_error(command: Record, ctx: ProcessingContext) -> None:
    """JOB THROW_ERROR: a business error, caught by the nearest matching error boundary event
    or error event subprocess (the task is interrupted), else an UNHANDLED_ERROR_EVENT incident
    naming the code."""
    value = command.value
    assert isinstance(value, JobValue)
    stored = _active_job(ctx, command.key)
    if not value.error_code:
        raise RejectionError(RejectionType.INVALID_ARGUMENT, "errorCode must not be empty")
    thrown = replace(
        job_value(stored), error_code=value.error_code, error_message=value.error_message
    )
    ctx.append_event(JobIntent.ERROR_THROWN, thrown, command.key, respond=True)
    variables = value.variables if value.variables not in ("", "{}") else "{}"
    if scopes.catch_error(ctx, thrown.element_instance_key, value.error_code, variables):
        return
    detail = f": {value.error_message}" if value.error_message else ""
    message = (
        f"an error with code '{value.error_code}' was thrown by job {command.key} on element"
        f" '{thrown.element_id}' but no error catch event handles it{detail}"
    )
    job_incident(ctx, command.key, thrown, ErrorType.UNHANDLED_ERROR_EVENT, message)


def recur_after_backoff(command: Record, ctx: ProcessingContext) -> None:
    stored = ctx.state.column(JOBS).get(command.key)
    if stored is None or ctx.state.column(STATES).get(command.key) != "BACKOFF":
        raise RejectionError(RejectionType.NOT_FOUND, f"no job {command.key} in back-off")
    if stored.get("recurringTime", -1) > ctx.now:
        raise RejectionError(
            RejectionType.INVALID_STATE, f"job {command.key} is still in its back-off"
        )
    ctx.append_event(JobIntent.RECURRED_AFTER_BACKOFF, job_value(stored), command.key)


def apply_recurred(record: Record, db: PartitionDb) -> None:
    stored = db.column(JOBS).get(record.key)
    if stored is not None:
        job_state.make_activatable(db, record.key, stored)


def apply_error_thrown(record: Record, db: PartitionDb) -> None:
    stored = db.column(JOBS).get(record.key)
    if stored is not None:
        job_state.make_inactive(db, record.key, stored, "ERROR_THROWN")


def backoffs_due(db: PartitionDb, now: int) -> Iterable[Record]:
    """The due-date checker: RECUR_AFTER_BACKOFF for the jobs whose back-off ended first, at
    most MAX_DUE_COMMANDS."""
    due: list[Record] = []
    for (recurring, key), _unused in db.column(job_state.BACKOFFS).items():
        if recurring > now or len(due) == MAX_DUE_COMMANDS:
            break
        due.append(record_command(JobIntent.RECUR_AFTER_BACKOFF, JobValue(), key=key))
    return due


def update_retries(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, JobValue)
    stored = _active_job(ctx, command.key, any_state=True)
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
    if value.retries <= 0:
        job_state.make_inactive(db, record.key, stored, "FAILED")
    elif value.recurring_time >= 0:
        job_state.make_backoff(db, record.key, stored, value.recurring_time)
    else:
        job_state.make_activatable(db, record.key, stored)


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
    engine.processor(JobIntent.THROW_ERROR, throw_error)
    engine.applier(JobIntent.ERROR_THROWN, apply_error_thrown)
    engine.processor(JobIntent.RECUR_AFTER_BACKOFF, recur_after_backoff)
    engine.applier(JobIntent.RECURRED_AFTER_BACKOFF, apply_recurred)
    engine.due_date_checker(backoffs_due)

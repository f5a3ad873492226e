"""The commands of jobs and job batches.

JOB COMPLETE merges the completion variables with Zeebe's default semantics and completes the
service task. FAIL takes the retries the worker says are left: none -> an incident; some, with
a back-off -> the job waits (RECUR_AFTER_BACKOFF from the due-date checker), without -> it is
activatable at once. THROW_ERROR is caught by the nearest matching error catch event, else an
UNHANDLED_ERROR_EVENT incident names the code; resolving it makes the job activatable again.
UPDATE_TIMEOUT gives an activated job a new deadline, counted from now. A command for a job that
no longer exists is rejected NOT_FOUND; one for a job that is
waiting (an incident, a back-off) is rejected INVALID_STATE.

JOB_BATCH ACTIVATE takes up to `maxJobsToActivate` activatable jobs of one type, oldest key
first, gives each the worker name, a deadline (now + timeout) and the variables visible to its
task, and answers with JOB_BATCH ACTIVATED listing them. An activated job whose deadline passes
is timed out by the due-date checker (JOB TIME_OUT -> TIMED_OUT) and becomes activatable again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from msgspec.structs import replace

from partita.processing.behavior.error_catching import catch_error
from partita.processing.behavior.incidents import job_incident
from partita.processing.behavior.variables import (
    propagate_variables,
    set_variable,
    variables_document,
)
from partita.processing.context import MAX_DEADLINE, ProcessingContext, RejectionError
from partita.processing.dispatch import MAX_DUE_COMMANDS, Handlers
from partita.processing.element import ad_hoc_jobs
from partita.processing.instance import state as instance_state
from partita.processing.job import state as job_state
from partita.processing.job.activation import MAX_JOB_VARIABLES_BYTES, activated_job
from partita.processing.job.state import (
    ACTIVATABLE,
    DEADLINES,
    JOBS,
    STATES,
    activatable_count,
    job_value,
)
from partita.processing.user_task import listener_results
from partita.protocol.enums import ErrorType, JobKind, JobListenerEventType, RejectionType
from partita.protocol.intents import JobBatchIntent, JobIntent
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.records import Record
from partita.protocol.records import command as record_command
from partita.protocol.values import PUSH_WORKER, JobBatchValue, JobValue, ProcessInstanceValue
from partita.state import PartitionDb
from partita.state.stored import Job

handlers = Handlers()

_MAX_BATCH_BYTES = MAX_JOB_VARIABLES_BYTES  # one batch record carries them all


def _active_job(ctx: ProcessingContext, key: int, *, any_state: bool = False) -> Job:
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
    return stored


@handlers.processor(JobIntent.COMPLETE)
def complete(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, JobValue)
    stored = _active_job(ctx, command.key)
    if stored.job_kind is JobKind.TASK_LISTENER:
        listener_results.complete(ctx, command.key, stored, value)
        return
    if stored.job_kind is JobKind.AD_HOC_SUB_PROCESS:
        ad_hoc_jobs.complete(ctx, command.key, stored, value)
        return
    variables = variables_document(value.variables)
    job = replace(job_value(stored), variables=value.variables or "{}")
    ctx.append_event(JobIntent.COMPLETED, job, command.key, respond=True)
    element = instance_state.instance(ctx.state, job.element_instance_key)
    if element is None:
        return
    task = instance_state.value_of(element)
    if job.job_kind is JobKind.EXECUTION_LISTENER:
        _listener_completed(ctx, job, variables, task)
        return
    propagate_variables(ctx, job.element_instance_key, variables, task)
    ctx.append_command(Instance.COMPLETE_ELEMENT, task, job.element_instance_key)


def _listener_completed(
    ctx: ProcessingContext, job: JobValue, variables: dict[str, Any], element: ProcessInstanceValue
) -> None:
    """As Zeebe: a start listener's variables are local to its element, an end listener's are
    set on the element's flow scope (the process's own for a process's listener); then the
    element goes on (the next listener, or the rest of its activation or completion)."""
    key = job.element_instance_key
    scope = key
    if job.listener_event_type is JobListenerEventType.END and element.flow_scope_key > 0:
        scope = element.flow_scope_key
    for name, variable in variables.items():
        set_variable(ctx, scope, name, variable, element)
    ctx.append_command(Instance.COMPLETE_EXECUTION_LISTENER, element, key)


@handlers.processor(JobIntent.FAIL)
def fail(command: Record, ctx: ProcessingContext) -> None:
    """JOB FAIL: remaining retries from the worker; at 0 an incident stops the task. Variables
    sent with the failure are set on the task's own scope (a retry sees them)."""
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
    variables = variables_document(value.variables) if value.variables not in ("", "{}") else {}
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
    element = instance_state.instance(ctx.state, failed.element_instance_key) if variables else None
    if element is not None:  # as Zeebe: the failure's variables are local to the task
        task = instance_state.value_of(element)
        for name, variable in variables.items():
            set_variable(ctx, failed.element_instance_key, name, variable, task)
    if retries <= 0:
        message = value.error_message or f"job {command.key} failed with no retries left"
        job_incident(ctx, command.key, failed, _NO_RETRIES[failed.job_kind], message)


_NO_RETRIES = {
    JobKind.BPMN_ELEMENT: ErrorType.JOB_NO_RETRIES,
    JobKind.EXECUTION_LISTENER: ErrorType.EXECUTION_LISTENER_NO_RETRIES,
    JobKind.TASK_LISTENER: ErrorType.TASK_LISTENER_NO_RETRIES,
    JobKind.AD_HOC_SUB_PROCESS: ErrorType.AD_HOC_SUB_PROCESS_NO_RETRIES,
}


@handlers.processor(JobIntent.THROW_ERROR)
def throw_error(command: Record, ctx: ProcessingContext) -> None:
    """JOB THROW_ERROR: a business error, caught by the nearest matching error boundary event
    or error event subprocess (the task is interrupted), else an UNHANDLED_ERROR_EVENT incident
    naming the code."""
    value = command.value
    assert isinstance(value, JobValue)
    stored = _active_job(ctx, command.key)
    if stored.job_kind in (JobKind.EXECUTION_LISTENER, JobKind.TASK_LISTENER):
        raise RejectionError(
            RejectionType.INVALID_STATE,
            f"Cannot throw BPMN error from {stored.job_kind.name} job with key '{command.key}',"
            f" type '{stored.type}' and processInstanceKey '{stored.process_instance_key}'",
        )
    if not value.error_code:
        raise RejectionError(RejectionType.INVALID_ARGUMENT, "errorCode must not be empty")
    thrown = replace(
        job_value(stored), error_code=value.error_code, error_message=value.error_message
    )
    ctx.append_event(JobIntent.ERROR_THROWN, thrown, command.key, respond=True)
    variables = value.variables if value.variables not in ("", "{}") else "{}"
    if catch_error(ctx, thrown.element_instance_key, value.error_code, variables):
        return
    detail = f": {value.error_message}" if value.error_message else ""
    message = (
        f"an error with code '{value.error_code}' was thrown by job {command.key} on element"
        f" '{thrown.element_id}' but no error catch event handles it{detail}"
    )
    job_incident(ctx, command.key, thrown, ErrorType.UNHANDLED_ERROR_EVENT, message)


@handlers.processor(JobIntent.UPDATE_RETRIES)
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


@handlers.processor(JobIntent.UPDATE_TIMEOUT)
def update_timeout(command: Record, ctx: ProcessingContext) -> None:
    """JOB UPDATE_TIMEOUT: an activated job's deadline becomes now + the new timeout (a worker
    that needs longer, or gives a job back sooner). With a worker name, the job is recorded as
    that worker's from now on (a gateway handing a pushed job to a client's request)."""
    value = command.value
    assert isinstance(value, JobValue)
    stored = _active_job(ctx, command.key)
    if ctx.state.column(STATES).get(command.key) != "ACTIVATED":
        raise RejectionError(
            RejectionType.INVALID_STATE,
            f"job {command.key} is not activated: only an activated job has a timeout to update",
        )
    if value.timeout < 1:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT, f"timeout must be at least 1 ms, got {value.timeout}"
        )
    if ctx.now + value.timeout > MAX_DEADLINE:
        raise RejectionError(
            RejectionType.INVALID_ARGUMENT,
            f"a timeout of {value.timeout} ms puts the deadline past {MAX_DEADLINE}",
        )
    updated = replace(
        job_value(stored),
        timeout=value.timeout,
        deadline=ctx.now + value.timeout,
        worker=value.worker or stored.worker,
    )
    ctx.append_event(JobIntent.TIMEOUT_UPDATED, updated, command.key, respond=True)


@handlers.processor(JobIntent.YIELD)
def yield_job(command: Record, ctx: ProcessingContext) -> None:
    """JOB YIELD: a worker (a gateway's job stream) that cannot take an activated job gives it
    back at once: it is activatable again, for pollers, without waiting out its deadline. The
    yield itself pushes nothing (no ping-pong with the push that brought it); the type's next
    push takes it along when its workers are still there."""
    stored = _active_job(ctx, command.key)
    if ctx.state.column(STATES).get(command.key) != "ACTIVATED":
        raise RejectionError(
            RejectionType.INVALID_STATE,
            f"job {command.key} is not activated: only an activated job can be yielded",
        )
    yielded = replace(job_value(stored), worker="", deadline=-1)
    ctx.append_event(JobIntent.YIELDED, yielded, command.key, respond=True)
    ctx.touched_job_types.discard(yielded.type)


@handlers.processor(JobIntent.RECUR_AFTER_BACKOFF)
def recur_after_backoff(command: Record, ctx: ProcessingContext) -> None:
    stored = ctx.state.column(JOBS).get(command.key)
    if stored is None or ctx.state.column(STATES).get(command.key) != "BACKOFF":
        raise RejectionError(RejectionType.NOT_FOUND, f"no job {command.key} in back-off")
    if stored.recurring_time > ctx.now:
        raise RejectionError(
            RejectionType.INVALID_STATE, f"job {command.key} is still in its back-off"
        )
    ctx.append_event(JobIntent.RECURRED_AFTER_BACKOFF, job_value(stored), command.key)


@handlers.due_date_checker
def backoffs_due(db: PartitionDb, now: int) -> Iterable[Record]:
    """The due-date checker: RECUR_AFTER_BACKOFF for the jobs whose back-off ended first, at
    most MAX_DUE_COMMANDS."""
    due: list[Record] = []
    for (recurring, key), _unused in db.column(job_state.BACKOFFS).items():
        if recurring > now or len(due) == MAX_DUE_COMMANDS:
            break
        due.append(record_command(JobIntent.RECUR_AFTER_BACKOFF, JobValue(), key=key))
    return due


@handlers.processor(JobBatchIntent.ACTIVATE)
def activate_batch(record: Record, ctx: ProcessingContext) -> None:
    value = record.value
    assert isinstance(value, JobBatchValue)
    problems = []
    if not value.type:
        problems.append("the job type is empty")
    if value.max_jobs_to_activate < 1:
        problems.append(f"maxJobsToActivate must be at least 1, got {value.max_jobs_to_activate}")
    if value.timeout < 1:
        problems.append(f"timeout must be at least 1 ms, got {value.timeout}")
    elif ctx.now + value.timeout > MAX_DEADLINE:
        problems.append(f"a timeout of {value.timeout} ms puts the deadline past {MAX_DEADLINE}")
    if value.worker == PUSH_WORKER:
        problems.append(f"the worker name {PUSH_WORKER!r} is reserved for pushed activations")
    if problems:
        raise RejectionError(RejectionType.INVALID_ARGUMENT, "; ".join(problems))
    deadline = ctx.now + value.timeout
    keys: list[int] = []
    jobs: list[JobValue] = []
    size = 0
    truncated = False
    prefix = ACTIVATABLE.key.prefix(value.type)
    waiting = (
        ctx.state.column(ACTIVATABLE).items(prefix)
        if activatable_count(ctx.state, value.type)
        else ()
    )
    candidates: list[int] = []
    for (_, key), _unused in waiting:
        if len(candidates) >= value.max_jobs_to_activate:
            break
        candidates.append(key)
    for key in candidates:  # collected first: a job too large fails, which changes the index
        job = activated_job(ctx, key, value.worker, deadline)
        if job is None:
            continue  # too large for any batch: failed with an incident instead
        if size + len(job.variables) > _MAX_BATCH_BYTES and keys:
            truncated = True
            break
        size += len(job.variables)
        keys.append(key)
        jobs.append(job)
    batch = replace(value, job_keys=tuple(keys), jobs=tuple(jobs), truncated=truncated)
    ctx.append_event(JobBatchIntent.ACTIVATED, batch, ctx.keys.next_key(), respond=True)


@handlers.processor(JobIntent.TIME_OUT)
def time_out(record: Record, ctx: ProcessingContext) -> None:
    stored = ctx.state.column(JOBS).get(record.key)
    if stored is None or ctx.state.column(STATES).get(record.key) != "ACTIVATED":
        raise RejectionError(RejectionType.NOT_FOUND, f"no activated job {record.key}")
    if stored.deadline > ctx.now:
        raise RejectionError(RejectionType.INVALID_STATE, f"job {record.key} has not timed out")
    ctx.append_event(JobIntent.TIMED_OUT, job_value(stored), record.key)


@handlers.due_date_checker
def expired_jobs(db: PartitionDb, now: int) -> Iterable[Record]:
    """The due-date checker: TIME_OUT for the activated jobs longest past their deadline, at
    most MAX_DUE_COMMANDS."""
    due: list[Record] = []
    for (deadline, key), _unused in db.column(DEADLINES).items():
        if deadline > now or len(due) == MAX_DUE_COMMANDS:
            break
        due.append(record_command(JobIntent.TIME_OUT, JobValue(), key=key))
    return due

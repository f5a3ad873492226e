"""Job activation by polling (JOB_BATCH ACTIVATE) and activation timeouts.

ACTIVATE takes up to `maxJobsToActivate` activatable jobs of one type, oldest key first, gives
each the worker name, a deadline (now + timeout) and the variables visible to its task, and
answers with JOB_BATCH ACTIVATED listing them. An activated job whose deadline passes is
timed out by the due-date checker (JOB TIME_OUT -> TIMED_OUT) and becomes activatable again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from engine.processing import job_state
from engine.processing.context import MAX_DEADLINE, ProcessingContext, RejectionError
from engine.processing.engine import MAX_DUE_COMMANDS, Engine
from engine.processing.job_push import MAX_JOB_VARIABLES_BYTES, PUSH_WORKER, activated_job
from engine.processing.job_state import (
    ACTIVATABLE,
    DEADLINES,
    JOBS,
    STATES,
    activatable_count,
    job_value,
)
from engine.protocol.enums import RejectionType
from engine.protocol.intents import JobBatchIntent, JobIntent
from engine.protocol.records import Record, command
from engine.protocol.values import JobBatchValue, JobValue
from engine.state import PartitionDb

_MAX_BATCH_BYTES = MAX_JOB_VARIABLES_BYTES  # one batch record carries them all


def activate(record: Record, ctx: ProcessingContext) -> None:
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


def apply_activated(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, JobBatchValue)
    pushed = value.worker == PUSH_WORKER
    for key, job in zip(value.job_keys, value.jobs, strict=True):
        job_state.make_activated(db, key, job.worker, job.deadline, pushed=pushed)


def time_out(record: Record, ctx: ProcessingContext) -> None:
    stored = ctx.state.column(JOBS).get(record.key)
    if stored is None or ctx.state.column(STATES).get(record.key) != "ACTIVATED":
        raise RejectionError(RejectionType.NOT_FOUND, f"no activated job {record.key}")
    if stored.get("deadline", -1) > ctx.now:
        raise RejectionError(RejectionType.INVALID_STATE, f"job {record.key} has not timed out")
    ctx.append_event(JobIntent.TIMED_OUT, job_value(stored), record.key)


def apply_timed_out(record: Record, db: PartitionDb) -> None:
    stored = db.column(JOBS).get(record.key)
    if stored is not None:
        job_state.make_activatable(db, record.key, stored)


def expired_jobs(db: PartitionDb, now: int) -> Iterable[Record]:
    """The due-date checker: TIME_OUT for the activated jobs longest past their deadline, at
    most MAX_DUE_COMMANDS."""
    due: list[Record] = []
    for (deadline, key), _unused in db.column(DEADLINES).items():
        if deadline > now or len(due) == MAX_DUE_COMMANDS:
            break
        due.append(command(JobIntent.TIME_OUT, JobValue(), key=key))
    return due


def register(engine: Engine) -> None:
    engine.processor(JobBatchIntent.ACTIVATE, activate)
    engine.applier(JobBatchIntent.ACTIVATED, apply_activated)
    engine.processor(JobIntent.TIME_OUT, time_out)
    engine.applier(JobIntent.TIMED_OUT, apply_timed_out)
    engine.due_date_checker(expired_jobs)

"""Jobs in state: `job` holds the job, `job_state` its state, `job_activatable` indexes
activatable jobs by (type, key), `job_deadline` activated jobs by (deadline, key) and
`job_backoff` failed jobs waiting out a retry back-off by (recurring time, key).

States: ACTIVATABLE -> ACTIVATED (polled or pushed) -> gone (completed / cancelled), or
FAILED (no retries left, an incident), BACKOFF (retries left, waiting), ERROR_THROWN (an
uncaught BPMN error, an incident). The helpers here are the only code that moves a job between
states."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from partita.protocol.values import JobValue
from partita.state import ColumnFamilies, PartitionDb
from partita.state.errors import KeyNotFoundError
from partita.state.stored import Job
from partita.state.view import StateView

JOBS = ColumnFamilies.JOB
STATES = ColumnFamilies.JOB_STATE
ACTIVATABLE = ColumnFamilies.JOB_ACTIVATABLE
DEADLINES = ColumnFamilies.JOB_DEADLINE


BACKOFFS = ColumnFamilies.JOB_BACKOFF
PUSHED = ColumnFamilies.JOB_PUSHED
ACTIVATABLE_COUNT = ColumnFamilies.JOB_ACTIVATABLE_COUNT

_CLEARED = {"deadline": -1, "recurring_time": -1, "pushed": False}
"""The fields a move resets unless it sets them (activation, back-off)."""

ACTIVE_STATES = ("ACTIVATABLE", "ACTIVATED")
"""States in which a worker may complete, fail or throw an error for the job."""


def _count(db: PartitionDb, column: Any, job_type: str, delta: int) -> None:
    counts = db.column(column)
    count = (counts.get(job_type) or 0) + delta
    if count > 0:
        counts.upsert(job_type, count)
    else:
        counts.delete(job_type)


def pushed_count(db: StateView, job_type: str) -> int:
    """Jobs of `job_type` pushed to its job topic and not yet finished (the push bound)."""
    return db.column(PUSHED).get(job_type) or 0


def activatable_count(db: StateView, job_type: str) -> int:
    """Activatable jobs of `job_type`: lets activation skip scanning an index whose deleted
    entries (RocksDB tombstones of a queue) make an empty scan cost more than a lookup."""
    return db.column(ACTIVATABLE_COUNT).get(job_type) or 0


def _move(db: PartitionDb, key: int, stored: Job, state: str | None, **changes: Any) -> None:
    """Move the job to `state` (None: gone) with `changes` to its stored fields, keeping the
    indexes (activatable, deadline, back-off) and the per-type counters right."""
    job_type = stored.type
    if stored.deadline >= 0:
        db.column(DEADLINES).delete((stored.deadline, key))
    if stored.recurring_time >= 0:
        db.column(BACKOFFS).delete((stored.recurring_time, key))
    if stored.pushed:
        _count(db, PUSHED, job_type, -1)
    previous = db.column(STATES).get(key)
    if previous == "ACTIVATABLE" and state != "ACTIVATABLE":
        db.column(ACTIVATABLE).delete((job_type, key))
        _count(db, ACTIVATABLE_COUNT, job_type, -1)
    elif state == "ACTIVATABLE" and previous != "ACTIVATABLE":
        db.column(ACTIVATABLE).insert((job_type, key), None)  # pushed at once: never stored
        _count(db, ACTIVATABLE_COUNT, job_type, 1)
    if state is None:
        db.column(JOBS).delete_existing(key)
        db.column(STATES).delete(key)
        return
    updated = replace(stored, **{**_CLEARED, **changes})
    db.column(JOBS).upsert(key, updated)
    db.column(STATES).upsert(key, state)
    if updated.deadline >= 0:
        db.column(DEADLINES).upsert((updated.deadline, key), None)
    if updated.recurring_time >= 0:
        db.column(BACKOFFS).upsert((updated.recurring_time, key), None)
    if updated.pushed:
        _count(db, PUSHED, job_type, 1)


def make_created(db: PartitionDb, key: int, stored: Job) -> None:
    _move(db, key, stored, "ACTIVATABLE")


def make_activatable(db: PartitionDb, key: int, stored: Job) -> None:
    _move(db, key, stored, "ACTIVATABLE", worker="")


def make_activated(
    db: PartitionDb, key: int, worker: str, deadline: int, *, pushed: bool = False
) -> None:
    stored = db.column(JOBS).get(key)
    if stored is None:  # e.g. an ACTIVATED event for a job of another partition
        raise KeyNotFoundError(JOBS.name, key, "activation of a job")
    _move(db, key, stored, "ACTIVATED", worker=worker, deadline=deadline, pushed=pushed)


def make_inactive(db: PartitionDb, key: int, stored: Job, state: str) -> None:
    """FAILED or ERROR_THROWN: no worker gets the job until an incident is resolved."""
    _move(db, key, stored, state)


def make_backoff(db: PartitionDb, key: int, stored: Job, recurring: int) -> None:
    """Retries left but the worker asked for a back-off: activatable again at `recurring`."""
    _move(db, key, stored, "BACKOFF", recurring_time=recurring)


def remove(db: PartitionDb, key: int) -> None:
    stored = db.column(JOBS).get(key)
    if stored is not None:
        _move(db, key, stored, None)


def stored_job(value: JobValue) -> Job:
    return Job(
        type=value.type,
        retries=value.retries,
        custom_headers=dict(value.custom_headers),
        process_instance_key=value.process_instance_key,
        bpmn_process_id=value.bpmn_process_id,
        process_definition_version=value.process_definition_version,
        process_definition_key=value.process_definition_key,
        element_id=value.element_id,
        element_instance_key=value.element_instance_key,
        worker=value.worker,
        deadline=value.deadline,
        job_kind=value.job_kind,
        listener_event_type=value.listener_event_type,
    )


def job_value(stored: Job) -> JobValue:
    return JobValue(
        type=stored.type,
        retries=stored.retries,
        custom_headers=stored.custom_headers,
        process_instance_key=stored.process_instance_key,
        bpmn_process_id=stored.bpmn_process_id,
        process_definition_version=stored.process_definition_version,
        process_definition_key=stored.process_definition_key,
        element_id=stored.element_id,
        element_instance_key=stored.element_instance_key,
        worker=stored.worker,
        deadline=stored.deadline,
        job_kind=stored.job_kind,
        listener_event_type=stored.listener_event_type,
    )

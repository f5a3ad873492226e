"""The appliers of JOB and JOB_BATCH events: every change goes through `job.state`, which keeps
the indexes and per-type counters right."""

from __future__ import annotations

from msgspec.structs import replace

from partita.processing.dispatch import Handlers
from partita.processing.instance import state as instance_state
from partita.processing.job import state as job_state
from partita.processing.job.state import JOBS, stored_job
from partita.processing.user_task import state as user_task_state
from partita.protocol import json_text
from partita.protocol.enums import JobKind
from partita.protocol.intents import JobBatchIntent, JobIntent
from partita.protocol.records import Record
from partita.protocol.values import PUSH_WORKER, JobBatchValue, JobValue
from partita.state import PartitionDb

handlers = Handlers()


@handlers.applier(JobIntent.CREATED)
def apply_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, JobValue)
    job_state.make_created(db, record.key, stored_job(value))
    element = instance_state.instance(db, value.element_instance_key)
    if element is not None:
        db.column(instance_state.INSTANCES).upsert(
            value.element_instance_key, replace(element, job_key=record.key)
        )


@handlers.applier(JobIntent.CANCELED)
def apply_removed(record: Record, db: PartitionDb) -> None:
    job_state.remove(db, record.key)


@handlers.applier(JobIntent.COMPLETED)
def apply_completed(record: Record, db: PartitionDb) -> None:
    """Gone; a listener's completion counts towards its element's execution listeners or its
    user task's transition's task listeners."""
    job_state.remove(db, record.key)
    value = record.value
    assert isinstance(value, JobValue)
    if value.job_kind is JobKind.BPMN_ELEMENT:
        return
    element = instance_state.instance(db, value.element_instance_key)
    if element is None:
        return
    if value.job_kind is JobKind.EXECUTION_LISTENER:
        db.column(instance_state.INSTANCES).upsert(
            value.element_instance_key,
            replace(element, listener_index=element.listener_index + 1),
        )
    elif value.job_kind is JobKind.AD_HOC_SUB_PROCESS:
        if value.result and json_text.parse(value.result).get("isCompletionConditionFulfilled"):
            db.column(instance_state.INSTANCES).upsert(
                value.element_instance_key, replace(element, ad_hoc_completing=True)
            )
    elif value.job_kind is JobKind.TASK_LISTENER:
        under_way = user_task_state.transition(db, element.user_task_key)
        if under_way is not None:
            db.column(user_task_state.TRANSITIONS).upsert(
                element.user_task_key,
                replace(under_way, listener_index=under_way.listener_index + 1),
            )


@handlers.applier(JobIntent.FAILED)
def apply_failed(record: Record, db: PartitionDb) -> None:
    """Retries left: activatable again (after the back-off, when the worker asked for one);
    none left: FAILED until an incident resolution."""
    value = record.value
    assert isinstance(value, JobValue)
    stored = db.column(JOBS).get(record.key)
    if stored is None:
        return
    stored = replace(stored, retries=value.retries)
    db.column(JOBS).upsert(record.key, stored)
    if value.retries <= 0:
        job_state.make_inactive(db, record.key, stored, "FAILED")
    elif value.recurring_time >= 0:
        job_state.make_backoff(db, record.key, stored, value.recurring_time)
    else:
        job_state.make_activatable(db, record.key, stored)


@handlers.applier(JobIntent.RETRIES_UPDATED)
def apply_retries_updated(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, JobValue)
    stored = db.column(JOBS).get(record.key)
    if stored is not None:
        db.column(JOBS).upsert(record.key, replace(stored, retries=value.retries))


@handlers.applier(JobIntent.TIMEOUT_UPDATED)
def apply_timeout_updated(record: Record, db: PartitionDb) -> None:
    """The job stays activated, with the new deadline (and the worker the command named)."""
    value = record.value
    assert isinstance(value, JobValue)
    stored = db.column(JOBS).get(record.key)
    if stored is not None:
        worker = value.worker or stored.worker
        job_state.make_activated(db, record.key, worker, value.deadline, pushed=stored.pushed)


@handlers.applier(JobIntent.ERROR_THROWN)
def apply_error_thrown(record: Record, db: PartitionDb) -> None:
    stored = db.column(JOBS).get(record.key)
    if stored is not None:
        job_state.make_inactive(db, record.key, stored, "ERROR_THROWN")


@handlers.applier(JobIntent.RECURRED_AFTER_BACKOFF)
def apply_recurred(record: Record, db: PartitionDb) -> None:
    stored = db.column(JOBS).get(record.key)
    if stored is not None:
        job_state.make_activatable(db, record.key, stored)


@handlers.applier(JobIntent.TIMED_OUT, JobIntent.YIELDED)
def apply_timed_out(record: Record, db: PartitionDb) -> None:
    stored = db.column(JOBS).get(record.key)
    if stored is not None:
        job_state.make_activatable(db, record.key, stored)


@handlers.applier(JobBatchIntent.ACTIVATED)
def apply_batch_activated(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, JobBatchValue)
    pushed = value.worker == PUSH_WORKER
    for key, job in zip(value.job_keys, value.jobs, strict=True):
        job_state.make_activated(db, key, job.worker, job.deadline, pushed=pushed)

"""The appliers of INCIDENT events. Resolving a job's incident makes the job activatable again
when it stopped for lack of retries or an uncaught error; resolving an element's incident
counts its execution listeners from the first again (the step they belong to is retried)."""

from __future__ import annotations

from msgspec.structs import replace

from partita.processing.dispatch import Handlers
from partita.processing.incident.state import BY_ELEMENT, INCIDENTS
from partita.processing.instance import state as instance_state
from partita.processing.job import state as job_state
from partita.processing.job.state import JOBS
from partita.processing.user_task import state as user_task_state
from partita.protocol.intents import IncidentIntent
from partita.protocol.records import Record
from partita.protocol.values import IncidentValue
from partita.state import PartitionDb
from partita.state.stored import Incident

handlers = Handlers()


@handlers.applier(IncidentIntent.CREATED)
def apply_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, IncidentValue)
    db.column(INCIDENTS).insert(
        record.key,
        Incident(
            error_type=value.error_type,
            error_message=value.error_message,
            element_instance_key=value.element_instance_key,
            job_key=value.job_key,
            process_instance_key=value.process_instance_key,
        ),
    )
    if value.element_instance_key > 0:
        db.column(BY_ELEMENT).upsert(value.element_instance_key, record.key)


@handlers.applier(IncidentIntent.RESOLVED)
def apply_resolved(record: Record, db: PartitionDb) -> None:
    stored = db.column(INCIDENTS).get(record.key)
    if stored is None:
        return
    db.column(INCIDENTS).delete_existing(record.key)
    job_key = stored.job_key
    job = db.column(JOBS).get(job_key) if job_key > 0 else None
    if job is not None and db.column(job_state.STATES).get(job_key) in ("FAILED", "ERROR_THROWN"):
        job_state.make_activatable(db, job_key, job)  # a worker can take it again
    if db.column(BY_ELEMENT).get(stored.element_instance_key) == record.key:
        db.column(BY_ELEMENT).delete(stored.element_instance_key)
    if job is None:  # an element's step is retried: its listeners run again from the first
        element = instance_state.instance(db, stored.element_instance_key)
        if element is not None and element.listener_index:
            db.column(instance_state.INSTANCES).upsert(
                stored.element_instance_key, replace(element, listener_index=0)
            )
        under_way = user_task_state.transition(db, element.user_task_key) if element else None
        if element is not None and under_way is not None and under_way.listener_index:
            db.column(user_task_state.TRANSITIONS).upsert(
                element.user_task_key, replace(under_way, listener_index=0)
            )

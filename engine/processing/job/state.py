"""Jobs in state: `job` holds the job, `job_state` its state, `job_activatable` indexes
activatable jobs by (type, key), `job_deadline` activated jobs by (deadline, key) and
`job_backoff` failed jobs waiting out a retry back-off by (recurring time, key).

States: ACTIVATABLE -> ACTIVATED (polled or pushed) -> gone (completed / cancelled), or
FAILED (no retries left, an incident), BACKOFF (retries left, waiting), ERROR_THROWN (an
uncaught BPMN error, an incident). The helpers here are the only code that moves a job between
states."""

from __future__ import annotations

from typing import Any

from engine.protocol.values import JobValue
from engine.state import ColumnFamilies, PartitionDb
from engine.state.errors import KeyNotFoundError
from engine.state.view import StateView

JOBS = ColumnFamilies.JOB
STATES = ColumnFamilies.JOB_STATE
ACTIVATABLE = ColumnFamilies.JOB_ACTIVATABLE
DEADLINES = ColumnFamilies.JOB_DEADLINE


BACKOFFS = ColumnFamilies.JOB_BACKOFF
PUSHED = ColumnFamilies.JOB_PUSHED
ACTIVATABLE_COUNT = ColumnFamilies.JOB_ACTIVATABLE_COUNT

PUSH_WORKER = "partita.push"
"""The worker name of pushed activations (reserved: a poll may not use it)."""

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


def _move(
    db: PartitionDb, key: int, stored: dict[str, Any], state: str | None, **changes: Any
) -> None:
    """Move the job to `state` (None: gone) with `changes` to its stored fields, keeping the
    indexes (activatable, deadline, back-off) and the per-type counters right."""
    job_type = stored["type"]
    deadline = stored.get("deadline", -1)
    if deadline >= 0:
        db.column(DEADLINES).delete((deadline, key))
    recurring = stored.get("recurringTime", -1)
    if recurring >= 0:
        db.column(BACKOFFS).delete((recurring, key))
    if stored.get("pushed"):
        _count(db, PUSHED, job_type, -1)
    previous = db.column(STATES).get(key)
    if previous == "ACTIVATABLE" and state != "ACTIVATABLE":
        db.column(ACTIVATABLE).delete((job_type, key))
        _count(db, ACTIVATABLE_COUNT, job_type, -1)
    elif state == "ACTIVATABLE" and previous != "ACTIVATABLE":
        db.column(ACTIVATABLE).upsert((job_type, key), None)
        _count(db, ACTIVATABLE_COUNT, job_type, 1)
    if state is None:
        db.column(JOBS).delete_existing(key)
        db.column(STATES).delete(key)
        return
    updated = {**stored, "deadline": -1, "recurringTime": -1, "pushed": False, **changes}
    db.column(JOBS).upsert(key, updated)
    db.column(STATES).upsert(key, state)
    if updated["deadline"] >= 0:
        db.column(DEADLINES).upsert((updated["deadline"], key), None)
    if updated["recurringTime"] >= 0:
        db.column(BACKOFFS).upsert((updated["recurringTime"], key), None)
    if updated["pushed"]:
        _count(db, PUSHED, job_type, 1)


def make_created(db: PartitionDb, key: int, stored: dict[str, Any]) -> None:
    _move(db, key, stored, "ACTIVATABLE")


def make_activatable(db: PartitionDb, key: int, stored: dict[str, Any]) -> None:
    _move(db, key, stored, "ACTIVATABLE", worker="")


def make_activated(
    db: PartitionDb, key: int, worker: str, deadline: int, *, pushed: bool = False
) -> None:
    stored = db.column(JOBS).get(key)
    if stored is None:  # e.g. an ACTIVATED event for a job of another partition
        raise KeyNotFoundError(JOBS.name, key, "activation of a job")
    _move(db, key, stored, "ACTIVATED", worker=worker, deadline=deadline, pushed=pushed)


def make_inactive(db: PartitionDb, key: int, stored: dict[str, Any], state: str) -> None:
    """FAILED or ERROR_THROWN: no worker gets the job until an incident is resolved."""
    _move(db, key, stored, state)


def make_backoff(db: PartitionDb, key: int, stored: dict[str, Any], recurring: int) -> None:
    """Retries left but the worker asked for a back-off: activatable again at `recurring`."""
    _move(db, key, stored, "BACKOFF", recurringTime=recurring)


def remove(db: PartitionDb, key: int) -> None:
    stored = db.column(JOBS).get(key)
    if stored is not None:
        _move(db, key, stored, None)


def stored_job(value: JobValue) -> dict[str, object]:
    return {
        "type": value.type,
        "retries": value.retries,
        "customHeaders": dict(value.custom_headers),
        "processInstanceKey": value.process_instance_key,
        "bpmnProcessId": value.bpmn_process_id,
        "processDefinitionVersion": value.process_definition_version,
        "processDefinitionKey": value.process_definition_key,
        "elementId": value.element_id,
        "elementInstanceKey": value.element_instance_key,
        "worker": value.worker,
        "deadline": value.deadline,
    }


def job_value(stored: dict[str, object]) -> JobValue:
    return JobValue(
        type=str(stored["type"]),
        retries=int(stored["retries"]),  # type: ignore[call-overload]
        custom_headers=dict(stored["customHeaders"]),  # type: ignore[call-overload]
        process_instance_key=int(stored["processInstanceKey"]),  # type: ignore[call-overload]
        bpmn_process_id=str(stored["bpmnProcessId"]),
        process_definition_version=int(stored["processDefinitionVersion"]),  # type: ignore[call-overload]
        process_definition_key=int(stored["processDefinitionKey"]),  # type: ignore[call-overload]
        element_id=str(stored["elementId"]),
        element_instance_key=int(stored["elementInstanceKey"]),  # type: ignore[call-overload]
        worker=str(stored.get("worker", "")),
        deadline=int(stored.get("deadline", -1)),  # type: ignore[call-overload]
    )

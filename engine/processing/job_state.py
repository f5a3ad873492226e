"""Jobs in state: `job` holds the job, `job_state` its state (ACTIVATABLE, ACTIVATED, FAILED),
`job_activatable` indexes activatable jobs by (type, key) and `job_deadline` activated jobs by
(deadline, key). The helpers here are the only code that moves a job between states."""

from __future__ import annotations

from typing import Any

from engine.protocol.values import JobValue
from engine.state import ColumnFamilies, PartitionDb

JOBS = ColumnFamilies.JOB
STATES = ColumnFamilies.JOB_STATE
ACTIVATABLE = ColumnFamilies.JOB_ACTIVATABLE
DEADLINES = ColumnFamilies.JOB_DEADLINE


def make_activatable(db: PartitionDb, key: int, stored: dict[str, Any]) -> None:
    deadline = stored.get("deadline", -1)
    if deadline >= 0:
        db.column(DEADLINES).delete((deadline, key))
    db.column(JOBS).update(key, {**stored, "deadline": -1, "worker": ""})
    db.column(STATES).upsert(key, "ACTIVATABLE")
    db.column(ACTIVATABLE).upsert((stored["type"], key), None)


def make_activated(db: PartitionDb, key: int, worker: str, deadline: int) -> None:
    stored = db.column(JOBS).get(key)
    assert stored is not None
    db.column(ACTIVATABLE).delete((stored["type"], key))
    db.column(JOBS).update(key, {**stored, "deadline": deadline, "worker": worker})
    db.column(STATES).upsert(key, "ACTIVATED")
    db.column(DEADLINES).upsert((deadline, key), None)


def make_failed(db: PartitionDb, key: int, stored: dict[str, Any]) -> None:
    deadline = stored.get("deadline", -1)
    if deadline >= 0:
        db.column(DEADLINES).delete((deadline, key))
    db.column(ACTIVATABLE).delete((stored["type"], key))
    db.column(JOBS).update(key, {**stored, "deadline": -1})
    db.column(STATES).upsert(key, "FAILED")


def remove(db: PartitionDb, key: int) -> None:
    stored = db.column(JOBS).get(key)
    if stored is None:
        return
    deadline = stored.get("deadline", -1)
    if deadline >= 0:
        db.column(DEADLINES).delete((deadline, key))
    db.column(JOBS).delete_existing(key)
    db.column(STATES).delete(key)
    db.column(ACTIVATABLE).delete((stored["type"], key))


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

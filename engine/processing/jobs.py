"""Jobs: created by service tasks, completed by job workers.

State: `job` (the job), `job_state` (ACTIVATABLE / ACTIVATED), `job_activatable` (type, key).
JOB COMPLETE merges the completion variables with Zeebe's default semantics and completes the
service task. A command for a job that is no longer active is rejected NOT_FOUND.
"""

from __future__ import annotations

import json
from dataclasses import replace

from engine.processing import instances
from engine.processing.context import ProcessingContext, RejectionError
from engine.processing.element import propagate_variables
from engine.processing.engine import Engine
from engine.protocol.enums import BpmnElementType, RejectionType
from engine.protocol.intents import JobIntent
from engine.protocol.intents import ProcessInstanceIntent as Instance
from engine.protocol.records import Record
from engine.protocol.values import JobValue, ProcessInstanceValue
from engine.state import ColumnFamilies, PartitionDb

JOBS = ColumnFamilies.JOB
STATES = ColumnFamilies.JOB_STATE
ACTIVATABLE = ColumnFamilies.JOB_ACTIVATABLE


def apply_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, JobValue)
    db.column(JOBS).insert(record.key, _stored(value))
    db.column(STATES).insert(record.key, "ACTIVATABLE")
    db.column(ACTIVATABLE).insert((value.type, record.key), None)
    element = instances.instance(db, value.element_instance_key)
    if element is not None:
        db.column(instances.INSTANCES).update(
            value.element_instance_key, {**element, "jobKey": record.key}
        )


def apply_removed(record: Record, db: PartitionDb) -> None:
    stored = db.column(JOBS).get(record.key)
    if stored is None:
        return
    db.column(JOBS).delete_existing(record.key)
    db.column(STATES).delete(record.key)
    db.column(ACTIVATABLE).delete((stored["type"], record.key))


def _stored(value: JobValue) -> dict[str, object]:
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
    )


def complete(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, JobValue)
    stored = ctx.state.column(JOBS).get(command.key)
    if stored is None:
        raise RejectionError(
            RejectionType.NOT_FOUND,
            f"job {command.key} does not exist or is no longer active (completed, failed out"
            " or cancelled)",
        )
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
    task = ProcessInstanceValue(
        bpmn_process_id=element["bpmnProcessId"],
        version=element["version"],
        process_definition_key=element["processDefinitionKey"],
        process_instance_key=element["processInstanceKey"],
        element_id=element["elementId"],
        flow_scope_key=element["flowScopeKey"],
        bpmn_element_type=BpmnElementType.SERVICE_TASK,
    )
    propagate_variables(ctx, job.element_instance_key, variables, task)
    ctx.append_command(Instance.COMPLETE_ELEMENT, task, job.element_instance_key)


def register(engine: Engine) -> None:
    engine.applier(JobIntent.CREATED, apply_created)
    engine.applier(JobIntent.COMPLETED, apply_removed)
    engine.applier(JobIntent.CANCELED, apply_removed)
    engine.processor(JobIntent.COMPLETE, complete)

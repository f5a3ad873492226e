"""Jobs in state: `job` holds the job, `job_state` its state (ACTIVATABLE, ACTIVATED), and
`job_activatable` indexes activatable jobs by (type, key)."""

from __future__ import annotations

from engine.protocol.values import JobValue
from engine.state import ColumnFamilies

JOBS = ColumnFamilies.JOB
STATES = ColumnFamilies.JOB_STATE
ACTIVATABLE = ColumnFamilies.JOB_ACTIVATABLE


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

"""Tasks whose work is a job (send, script, business rule, job-based user tasks, message throw
and end events) and script tasks with `zeebe:script`: the jobs they create, as Zeebe writes
them, and the incidents when their expressions fail."""

from __future__ import annotations

import json
from typing import Any

from partita.protocol.enums import BpmnElementType, BpmnEventType, ErrorType
from partita.protocol.intents import IncidentIntent, JobIntent, ProcessInstanceIntent
from partita.protocol.records import Record
from tests.support.paths import CONFORMANCE
from tests.support.scenario_steps import all_events, complete, create, deploy, jobs_of

JOB_ELEMENTS = (CONFORMANCE / "bpmn" / "job-elements.bpmn").read_bytes()


def _job(engine: Any, instance: int, job_type: str) -> Record:
    (job,) = [j for j in jobs_of(engine, instance) if j.value.type == job_type]
    return job


def _through_to_user_task(engine: Any, **variables: object) -> int:
    deploy(engine, "job-elements.bpmn", content={"job-elements.bpmn": JOB_ELEMENTS})
    instance = create(engine, "job-elements", **variables)
    for job_type in ("send-mail", "score-script", "rules"):
        complete(engine, _job(engine, instance, job_type))
    return instance


def test_a_job_based_user_task_carries_assignment_schedule_and_form_in_headers(
    engine: Any,
) -> None:
    instance = _through_to_user_task(engine, owner="ann", reviewers=["bob", "cy"], count=1)
    job = _job(engine, instance, "io.camunda.zeebe:userTask")
    assert job.value.retries == 1
    assert job.value.custom_headers == {
        "desk": "front",
        "io.camunda.zeebe:assignee": "ann",
        "io.camunda.zeebe:candidateGroups": '["sales","ops"]',
        "io.camunda.zeebe:candidateUsers": '["bob","cy"]',
        "io.camunda.zeebe:dueDate": "2026-12-31T17:00:00Z",
        "io.camunda.zeebe:formKey": "camunda-forms:bpmn:approval-form",
    }
    activated = [
        r.value
        for r in all_events(engine)
        if r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATED and r.value.element_id == "approve"
    ]
    assert [v.bpmn_element_type for v in activated] == [BpmnElementType.USER_TASK]


def test_candidates_that_are_not_a_list_of_names_raise_an_incident_naming_them(
    engine: Any,
) -> None:
    instance = _through_to_user_task(engine, owner="ann", reviewers="bob", count=1)
    incidents = [
        r
        for r in all_events(engine)
        if r.intent is IncidentIntent.CREATED and r.value.process_instance_key == instance
    ]
    assert [i.value.error_type for i in incidents] == [ErrorType.EXTRACT_VALUE_ERROR]
    assert "approve" in incidents[0].value.error_message
    assert "=reviewers must yield a list of strings" in incidents[0].value.error_message
    assert not [j for j in jobs_of(engine, instance) if j.value.type.startswith("io.camunda")]


def test_message_throw_and_end_events_are_jobs_of_their_element_and_event_type(
    engine: Any,
) -> None:
    instance = _through_to_user_task(engine, owner="ann", reviewers=[], count=4)
    complete(engine, _job(engine, instance, "io.camunda.zeebe:userTask"))
    complete(engine, _job(engine, instance, "notify"))
    complete(engine, _job(engine, instance, "publish-end"))
    events = all_events(engine)
    kinds = {
        r.value.element_id: (r.value.bpmn_element_type, r.value.bpmn_event_type)
        for r in events
        if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
        and r.value.process_instance_key == instance
    }
    message = BpmnEventType.MESSAGE
    assert kinds["announce"] == (BpmnElementType.INTERMEDIATE_THROW_EVENT, message)
    assert kinds["published"] == (BpmnElementType.END_EVENT, message)
    assert kinds["send-confirmation"][0] is BpmnElementType.SEND_TASK
    assert kinds["total"][0] is BpmnElementType.SCRIPT_TASK
    total = [
        json.loads(r.value.value)
        for r in events
        if r.value_type.name == "VARIABLE" and r.value.name == "total"
    ]
    assert total == [5]
    completed_jobs = [r for r in events if r.intent is JobIntent.COMPLETED]
    assert {"notify", "publish-end"} <= {j.value.type for j in completed_jobs}

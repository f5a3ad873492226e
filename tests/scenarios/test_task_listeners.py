"""Task listeners (`zeebe:taskListeners`) on Zeebe user tasks: a transition's listener jobs and
its final event after them, corrections (CORRECTED), denials, the client's answer after the last
listener, Zeebe's refusals of a listener's job result, incidents, and the deploy-time checks;
replay rebuilds the same state (the fixture checks it after every scenario)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from partita.bpmn import BpmnValidationError, parse_bpmn
from partita.protocol.enums import (
    ErrorType,
    JobKind,
    JobListenerEventType,
    RecordType,
    RejectionType,
)
from partita.protocol.intents import (
    IncidentIntent,
    JobIntent,
    VariableDocumentIntent,
)
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.records import command
from partita.protocol.values import (
    IncidentValue,
    JobValue,
    UserTaskValue,
    VariableDocumentValue,
)
from tests.support import task_listener_steps as tl
from tests.support.scenario_steps import all_events, jobs_of, send


def test_creation_waits_for_its_listeners_then_assigns_through_its_own(engine: Any) -> None:
    instance = tl.start(engine)
    create_job = tl.job(engine, instance, "tl-create")
    assert create_job.value.job_kind is JobKind.TASK_LISTENER
    assert create_job.value.listener_event_type is JobListenerEventType.CREATING
    headers = create_job.value.custom_headers
    assert headers["desk"] == "orders"
    assert headers["io.camunda.zeebe:assignee"] == "ann"  # the model's, as the task is created
    assert headers["io.camunda.zeebe:candidateGroups"] == '["sales"]'
    assert headers["io.camunda.zeebe:priority"] == "50"
    task_key = int(headers["io.camunda.zeebe:userTaskKey"])
    assert tl.task_steps(engine, instance) == ["CREATING"]  # the element is active meanwhile
    tl.finish(engine, create_job)
    assert tl.task_steps(engine, instance) == ["CREATING", "CREATED", "ASSIGNING"]
    assign_job = tl.job(engine, instance, "tl-assign")
    assert assign_job.value.listener_event_type is JobListenerEventType.ASSIGNING
    assert assign_job.value.retries == 1
    assert assign_job.value.custom_headers["io.camunda.zeebe:changedAttributes"] == '["assignee"]'
    tl.finish(engine, assign_job)
    assigned = [r for r in all_events(engine) if r.key == task_key][-1]
    assert (assigned.intent, assigned.value.assignee) == (Task.ASSIGNED, "ann")


def test_a_completion_is_answered_after_its_listeners_with_their_corrections(
    engine: Any,
) -> None:
    instance = tl.start(engine)
    task = tl.created(engine, instance)
    asked = UserTaskValue(variables=json.dumps({"approved": True}))
    correlation, results = tl.ask(engine, Task.COMPLETE, task, asked)
    assert [r.intent for r in results] == [Task.COMPLETING, JobIntent.CREATED]
    assert not tl.replies(engine, correlation)  # not before the listeners
    check = tl.job(engine, instance, "tl-check")
    assert check.value.custom_headers["io.camunda.zeebe:action"] == "complete"
    corrections = {"priority": 80, "candidateGroupsList": ["sales", "audit"]}
    tl.finish(engine, check, {"correctedAttributes": list(corrections), "corrections": corrections})
    corrected = [r for r in all_events(engine) if r.intent is Task.CORRECTED]
    assert [(r.value.priority, r.value.candidate_groups_list) for r in corrected] == [
        (80, ("sales", "audit"))
    ]
    assert corrected[0].value.changed_attributes == ("priority", "candidateGroupsList")
    final = tl.job(engine, instance, "tl-final")  # the second listener sees the corrections
    assert final.value.custom_headers["io.camunda.zeebe:priority"] == "80"
    tl.finish(engine, final)
    (reply,) = tl.replies(engine, correlation)
    assert (reply.intent, reply.value.priority) == (Task.COMPLETED, 80)
    completed = [r for r in all_events(engine) if r.intent is Task.COMPLETED]
    assert completed and json.loads(completed[0].value.variables) == {"approved": True}
    ended = [
        r.value.element_id
        for r in all_events(engine)
        if r.value_type.name == "PROCESS_INSTANCE"
        and r.intent.name == "ELEMENT_COMPLETED"
        and r.value.process_instance_key == instance
    ]
    assert ended[-1] == "task-listeners"


def test_a_denied_completion_leaves_the_task_as_it_was_and_rejects_the_request(
    engine: Any,
) -> None:
    instance = tl.start(engine)
    task = tl.created(engine, instance)
    correlation, _ = tl.ask(engine, Task.COMPLETE, task, UserTaskValue())
    tl.finish(engine, tl.job(engine, instance, "tl-check"), {"denied": True, "deniedReason": "no"})
    denied = [r for r in all_events(engine) if r.intent is Task.COMPLETION_DENIED]
    assert [r.value.denied_reason for r in denied] == ["no"]
    (reply,) = tl.replies(engine, correlation)
    assert reply.record_type is RecordType.COMMAND_REJECTION
    assert reply.rejection_type is RejectionType.INVALID_STATE
    assert reply.rejection_reason == (
        f"Completion of the User Task with key '{task}' was denied by Task Listener."
        " Reason to deny: 'no'"
    )
    assert not [j for j in jobs_of(engine, instance) if j.value.type == "tl-final"]
    _, again = tl.ask(engine, Task.COMPLETE, task, UserTaskValue())  # CREATED again
    assert again[0].intent is Task.COMPLETING


def test_an_update_denied_and_an_assignment_corrected(engine: Any) -> None:
    instance = tl.start(engine)
    task = tl.created(engine, instance)
    change = UserTaskValue(priority=10, changed_attributes=("priority",))
    correlation, _ = tl.ask(engine, Task.UPDATE, task, change)
    tl.finish(engine, tl.job(engine, instance, "tl-update"), {"denied": True})
    (reply,) = tl.replies(engine, correlation)
    assert "Update of the User Task" in reply.rejection_reason
    correlation, _ = tl.ask(engine, Task.ASSIGN, task, UserTaskValue(assignee="bob"))
    corrections = {"assignee": "cy"}
    tl.finish(engine, tl.job(engine, instance, "tl-assign"), {"corrections": corrections})
    (reply,) = tl.replies(engine, correlation)
    assert (reply.intent, reply.value.assignee) == (Task.ASSIGNED, "cy")
    assert reply.value.changed_attributes == ("assignee",)


@pytest.mark.parametrize(
    ("result", "variables", "words"),
    [
        (None, {"x": 1}, "variables payload provided is not supported"),
        ({"denied": True}, None, "Denying result is not supported for 'CREATING'"),
        ({"corrections": {"name": "x"}}, None, "property 'name' cannot be corrected"),
        ({"corrections": {"assignee": "bob"}}, None, "correcting the assignee on 'CREATING'"),
        ({"corrections": {"priority": 101}}, None, "must be 0 to 100, not 101"),
        ({"corrections": {"dueDate": "soon"}}, None, "ISO 8601"),
    ],
)
def test_a_listener_result_is_refused_as_zeebe_refuses_it(
    engine: Any, result: dict[str, Any] | None, variables: dict[str, Any] | None, words: str
) -> None:
    instance = tl.start(engine)
    job = tl.job(engine, instance, "tl-create")
    value = JobValue(
        result=json.dumps(result) if result is not None else "",
        variables=json.dumps(variables or {}),
    )
    (rejection,) = send(engine, command(JobIntent.COMPLETE, value, key=job.key))
    assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
    assert words in rejection.rejection_reason, rejection.rejection_reason
    assert tl.task_steps(engine, instance) == ["CREATING"]  # the job is still to complete


def test_a_listener_out_of_retries_is_an_incident_then_goes_on(engine: Any) -> None:
    instance = tl.start(engine)
    tl.finish(engine, tl.job(engine, instance, "tl-create"))
    assign = tl.job(engine, instance, "tl-assign")
    send(engine, command(JobIntent.FAIL, JobValue(retries=0), key=assign.key))
    (incident,) = [r for r in all_events(engine) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.TASK_LISTENER_NO_RETRIES
    send(engine, command(JobIntent.UPDATE_RETRIES, JobValue(retries=1), key=assign.key))
    send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    tl.finish(engine, assign)
    assert tl.task_steps(engine, instance)[-1] == "ASSIGNED"


def test_a_listener_type_that_cannot_be_evaluated_is_resolved_by_running_them_again(
    engine: Any,
) -> None:
    instance = tl.start(engine, stage=None)
    task = tl.created(engine, instance)
    tl.ask(engine, Task.COMPLETE, task, UserTaskValue())
    tl.finish(engine, tl.job(engine, instance, "tl-check"))  # the next one's type needs `stage`
    (incident,) = [r for r in all_events(engine) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.EXTRACT_VALUE_ERROR
    document = json.dumps({"stage": "late"})
    send(
        engine,
        command(
            VariableDocumentIntent.UPDATE,
            VariableDocumentValue(scope_key=instance, variables=document),
        ),
    )
    send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    tl.finish(engine, tl.job(engine, instance, "tl-check"))  # every listener again, as in Zeebe
    tl.finish(engine, tl.job(engine, instance, "tl-late"))
    assert tl.task_steps(engine, instance)[-1] == "COMPLETED"


def test_a_listener_job_cannot_throw_a_bpmn_error(engine: Any) -> None:
    instance = tl.start(engine)
    job = tl.job(engine, instance, "tl-create")
    (rejection,) = send(
        engine, command(JobIntent.THROW_ERROR, JobValue(error_code="E"), key=job.key)
    )
    assert rejection.rejection_reason.startswith("Cannot throw BPMN error from TASK_LISTENER job")


def test_task_listeners_are_checked_at_deploy() -> None:
    def task(extensions: str, element_id: str) -> str:
        return (
            f'<bpmn:userTask id="{element_id}"><bpmn:extensionElements>{extensions}'
            "</bpmn:extensionElements></bpmn:userTask>"
        )

    def listener(event: str, job_type: str = "t") -> str:
        return (
            "<zeebe:taskListeners>"
            f'<zeebe:taskListener eventType="{event}" type="{job_type}"/></zeebe:taskListeners>'
        )

    xml = (
        '<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"'
        ' xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d">'
        '<bpmn:process id="p" isExecutable="true"><bpmn:startEvent id="s"/>'
        + task(listener("creating"), "job-based")
        + task("<zeebe:userTask/>" + listener("claiming"), "unknown")
        + task("<zeebe:userTask/>" + listener("canceling"), "cancel")
        + task("<zeebe:userTask/>" + listener("cancel"), "cancel-alias")
        + task("<zeebe:userTask/>" + listener("complete", ""), "untyped")
        + "</bpmn:process></bpmn:definitions>"
    )
    with pytest.raises(BpmnValidationError) as error:
        parse_bpmn(xml.encode())
    problems = {str(p) for p in error.value.problems}
    assert "job-based: Task listeners are only allowed on Camunda user tasks." in problems
    assert (
        "unknown: a task listener's eventType must be one of creating, assigning, updating,"
        " completing, canceling, not 'claiming'" in problems
    )
    assert not any(p.startswith(("cancel:", "cancel-alias:")) for p in problems)
    assert "untyped: Attribute 'type' must be present and not empty" in problems

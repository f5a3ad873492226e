"""Task listeners (`zeebe:taskListeners`) on Zeebe user tasks: a transition's listener jobs and
its final event after them, corrections (CORRECTED), denials, the client's answer after the last
listener, Zeebe's refusals of a listener's job result, incidents, and the deploy-time checks;
replay rebuilds the same state (the fixture checks it after every scenario)."""

from __future__ import annotations

import json
import uuid
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
from partita.protocol.headers import ReplyTo
from partita.protocol.intents import (
    IncidentIntent,
    JobIntent,
    ProcessInstanceIntent,
    VariableDocumentIntent,
)
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.records import Record, command
from partita.protocol.values import (
    IncidentValue,
    JobValue,
    ProcessInstanceValue,
    UserTaskValue,
    VariableDocumentValue,
)
from tests.support.paths import CONFORMANCE
from tests.support.scenario_steps import all_events, create, deploy, jobs_of, send

LISTENERS = (CONFORMANCE / "bpmn" / "task-listeners.bpmn").read_bytes()


def _start(engine: Any, **variables: object) -> int:
    deploy(engine, "tl.bpmn", content={"tl.bpmn": LISTENERS})
    return create(engine, "task-listeners", **({"owner": "ann", "stage": "final"} | variables))


def _job(engine: Any, instance: int, job_type: str) -> Record:
    (job,) = [j for j in jobs_of(engine, instance) if j.value.type == job_type]
    return job


def _finish(engine: Any, job: Record, result: dict[str, Any] | None = None) -> list[Record]:
    value = JobValue(result=json.dumps(result) if result is not None else "")
    return send(engine, command(JobIntent.COMPLETE, value, key=job.key))


def _task_steps(engine: Any, instance: int) -> list[str]:
    return [
        r.intent.name
        for r in all_events(engine)
        if r.value_type.name == "USER_TASK" and r.value.process_instance_key == instance
    ]


def _created(engine: Any, instance: int) -> int:
    """An instance whose task is created and assigned to ann, its listeners done: the task key."""
    _finish(engine, _job(engine, instance, "tl-create"))
    _finish(engine, _job(engine, instance, "tl-assign"))
    (task,) = {
        r.key
        for r in all_events(engine)
        if r.intent is Task.CREATED and r.value.process_instance_key == instance
    }
    return task


def _ask(engine: Any, intent: Task, key: int, value: UserTaskValue) -> tuple[bytes, list[Record]]:
    """Send a user task command with a reply address: its correlation id and its results."""
    correlation = uuid.uuid4().hex.encode()
    position = engine.send(
        0, command(intent, value, key=key), reply=ReplyTo(engine.REPLIES, 0, correlation)
    )
    engine.run()
    return correlation, engine.results_of(0, position)


def _replies(engine: Any, correlation: bytes) -> list[Record]:
    return [r for c, r in engine.replies() if c == correlation]


def test_creation_waits_for_its_listeners_then_assigns_through_its_own(engine: Any) -> None:
    instance = _start(engine)
    create_job = _job(engine, instance, "tl-create")
    assert create_job.value.job_kind is JobKind.TASK_LISTENER
    assert create_job.value.listener_event_type is JobListenerEventType.CREATING
    headers = create_job.value.custom_headers
    assert headers["desk"] == "orders"
    assert headers["io.camunda.zeebe:assignee"] == "ann"  # the model's, as the task is created
    assert headers["io.camunda.zeebe:candidateGroups"] == '["sales"]'
    assert headers["io.camunda.zeebe:priority"] == "50"
    task_key = int(headers["io.camunda.zeebe:userTaskKey"])
    assert _task_steps(engine, instance) == ["CREATING"]  # the element is active meanwhile
    _finish(engine, create_job)
    assert _task_steps(engine, instance) == ["CREATING", "CREATED", "ASSIGNING"]
    assign_job = _job(engine, instance, "tl-assign")
    assert assign_job.value.listener_event_type is JobListenerEventType.ASSIGNING
    assert assign_job.value.retries == 1
    assert assign_job.value.custom_headers["io.camunda.zeebe:changedAttributes"] == '["assignee"]'
    _finish(engine, assign_job)
    assigned = [r for r in all_events(engine) if r.key == task_key][-1]
    assert (assigned.intent, assigned.value.assignee) == (Task.ASSIGNED, "ann")


def test_a_completion_is_answered_after_its_listeners_with_their_corrections(
    engine: Any,
) -> None:
    instance = _start(engine)
    task = _created(engine, instance)
    asked = UserTaskValue(variables=json.dumps({"approved": True}))
    correlation, results = _ask(engine, Task.COMPLETE, task, asked)
    assert [r.intent for r in results] == [Task.COMPLETING, JobIntent.CREATED]
    assert not _replies(engine, correlation)  # not before the listeners
    check = _job(engine, instance, "tl-check")
    assert check.value.custom_headers["io.camunda.zeebe:action"] == "complete"
    corrections = {"priority": 80, "candidateGroupsList": ["sales", "audit"]}
    _finish(engine, check, {"correctedAttributes": list(corrections), "corrections": corrections})
    corrected = [r for r in all_events(engine) if r.intent is Task.CORRECTED]
    assert [(r.value.priority, r.value.candidate_groups_list) for r in corrected] == [
        (80, ("sales", "audit"))
    ]
    assert corrected[0].value.changed_attributes == ("priority", "candidateGroupsList")
    final = _job(engine, instance, "tl-final")  # the second listener sees the corrections
    assert final.value.custom_headers["io.camunda.zeebe:priority"] == "80"
    _finish(engine, final)
    (reply,) = _replies(engine, correlation)
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
    instance = _start(engine)
    task = _created(engine, instance)
    correlation, _ = _ask(engine, Task.COMPLETE, task, UserTaskValue())
    _finish(engine, _job(engine, instance, "tl-check"), {"denied": True, "deniedReason": "no"})
    denied = [r for r in all_events(engine) if r.intent is Task.COMPLETION_DENIED]
    assert [r.value.denied_reason for r in denied] == ["no"]
    (reply,) = _replies(engine, correlation)
    assert reply.record_type is RecordType.COMMAND_REJECTION
    assert reply.rejection_type is RejectionType.INVALID_STATE
    assert reply.rejection_reason == (
        f"Completion of the User Task with key '{task}' was denied by Task Listener."
        " Reason to deny: 'no'"
    )
    assert not [j for j in jobs_of(engine, instance) if j.value.type == "tl-final"]
    _, again = _ask(engine, Task.COMPLETE, task, UserTaskValue())  # CREATED again
    assert again[0].intent is Task.COMPLETING


def test_an_update_denied_and_an_assignment_corrected(engine: Any) -> None:
    instance = _start(engine)
    task = _created(engine, instance)
    change = UserTaskValue(priority=10, changed_attributes=("priority",))
    correlation, _ = _ask(engine, Task.UPDATE, task, change)
    _finish(engine, _job(engine, instance, "tl-update"), {"denied": True})
    (reply,) = _replies(engine, correlation)
    assert "Update of the User Task" in reply.rejection_reason
    correlation, _ = _ask(engine, Task.ASSIGN, task, UserTaskValue(assignee="bob"))
    corrections = {"assignee": "cy"}
    _finish(engine, _job(engine, instance, "tl-assign"), {"corrections": corrections})
    (reply,) = _replies(engine, correlation)
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
    instance = _start(engine)
    job = _job(engine, instance, "tl-create")
    value = JobValue(
        result=json.dumps(result) if result is not None else "",
        variables=json.dumps(variables or {}),
    )
    (rejection,) = send(engine, command(JobIntent.COMPLETE, value, key=job.key))
    assert rejection.rejection_type is RejectionType.INVALID_ARGUMENT
    assert words in rejection.rejection_reason, rejection.rejection_reason
    assert _task_steps(engine, instance) == ["CREATING"]  # the job is still to complete


def test_a_listener_out_of_retries_is_an_incident_then_goes_on(engine: Any) -> None:
    instance = _start(engine)
    _finish(engine, _job(engine, instance, "tl-create"))
    assign = _job(engine, instance, "tl-assign")
    send(engine, command(JobIntent.FAIL, JobValue(retries=0), key=assign.key))
    (incident,) = [r for r in all_events(engine) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.TASK_LISTENER_NO_RETRIES
    send(engine, command(JobIntent.UPDATE_RETRIES, JobValue(retries=1), key=assign.key))
    send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    _finish(engine, assign)
    assert _task_steps(engine, instance)[-1] == "ASSIGNED"


def test_a_listener_type_that_cannot_be_evaluated_is_resolved_by_running_them_again(
    engine: Any,
) -> None:
    instance = _start(engine, stage=None)
    task = _created(engine, instance)
    _ask(engine, Task.COMPLETE, task, UserTaskValue())
    _finish(engine, _job(engine, instance, "tl-check"))  # the next one's type needs `stage`
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
    _finish(engine, _job(engine, instance, "tl-check"))  # every listener again, as in Zeebe
    _finish(engine, _job(engine, instance, "tl-late"))
    assert _task_steps(engine, instance)[-1] == "COMPLETED"


def test_a_listener_job_cannot_throw_a_bpmn_error(engine: Any) -> None:
    instance = _start(engine)
    job = _job(engine, instance, "tl-create")
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


def _cancel_start(engine: Any) -> tuple[int, int]:
    """An instance of `task-listeners-cancel` waiting at its task: (instance, task key)."""
    deploy(engine, "tl.bpmn", content={"tl.bpmn": LISTENERS})
    instance = create(engine, "task-listeners-cancel")
    (task,) = {
        r.key
        for r in all_events(engine)
        if r.intent is Task.CREATED and r.value.process_instance_key == instance
    }
    return instance, task


def _element_steps(engine: Any, instance: int) -> list[tuple[str, str]]:
    return [
        (r.value.element_id, r.intent.name)
        for r in all_events(engine)
        if r.value_type.name == "PROCESS_INSTANCE" and r.value.process_instance_key == instance
    ]


def test_cancelling_the_instance_waits_for_the_canceling_listeners(engine: Any) -> None:
    instance, task_key = _cancel_start(engine)
    cancel = ProcessInstanceValue(process_instance_key=instance)
    (reply,) = send(engine, command(ProcessInstanceIntent.CANCEL, cancel, key=instance))[:1]
    assert reply.intent is ProcessInstanceIntent.ELEMENT_TERMINATING  # answered at once
    first = _job(engine, instance, "tl-cancel-a")
    assert first.value.job_kind is JobKind.TASK_LISTENER
    assert first.value.listener_event_type is JobListenerEventType.CANCELING
    assert first.value.custom_headers["io.camunda.zeebe:userTaskKey"] == str(task_key)
    assert first.value.custom_headers["io.camunda.zeebe:assignee"] == "ann"
    assert _task_steps(engine, instance)[-1] == "CANCELING"
    terminating = {
        e for e, step in _element_steps(engine, instance) if step == "ELEMENT_TERMINATING"
    }
    assert terminating == {"task-listeners-cancel", "stage", "review"}
    assert not any(step == "ELEMENT_TERMINATED" for _, step in _element_steps(engine, instance))
    again = send(engine, command(ProcessInstanceIntent.CANCEL, cancel, key=instance))[0]
    assert again.rejection_type is RejectionType.INVALID_STATE
    assert "already terminating" in again.rejection_reason

    _finish(engine, first, {"corrections": {"priority": 99}})  # nothing to correct: ignored
    assert _task_steps(engine, instance)[-1] == "CANCELING"
    second = _job(engine, instance, "tl-cancel-b")
    _finish(engine, second)
    assert _task_steps(engine, instance)[-2:] == ["CANCELING", "CANCELED"]
    ended = [e for e, step in _element_steps(engine, instance) if step == "ELEMENT_TERMINATED"]
    assert ended == ["review", "stage", "task-listeners-cancel"]
    assert jobs_of(engine, instance) == []


def test_an_interrupting_boundary_event_activates_once_the_listeners_are_done(
    engine: Any,
) -> None:
    instance, _ = _cancel_start(engine)
    engine.advance(3601)
    assert ("review", "ELEMENT_TERMINATING") in _element_steps(engine, instance)
    assert ("too-slow", "ELEMENT_ACTIVATING") not in _element_steps(engine, instance)
    _finish(engine, _job(engine, instance, "tl-cancel-a"))
    assert ("too-slow", "ELEMENT_ACTIVATING") not in _element_steps(engine, instance)
    _finish(engine, _job(engine, instance, "tl-cancel-b"))
    steps = _element_steps(engine, instance)
    assert steps.index(("review", "ELEMENT_TERMINATED")) < steps.index(
        ("too-slow", "ELEMENT_ACTIVATING")
    )
    assert steps[-1] == ("task-listeners-cancel", "ELEMENT_COMPLETED")


def test_a_canceling_listener_cannot_deny(engine: Any) -> None:
    instance, _ = _cancel_start(engine)
    cancel = ProcessInstanceValue(process_instance_key=instance)
    send(engine, command(ProcessInstanceIntent.CANCEL, cancel, key=instance))
    (refused,) = _finish(engine, _job(engine, instance, "tl-cancel-a"), {"denied": True})
    assert refused.rejection_type is RejectionType.INVALID_ARGUMENT
    assert "Denying result is not supported for 'CANCELING' task listener jobs" in (
        refused.rejection_reason
    )


def test_a_completion_under_way_is_cancelled_and_its_client_rejected(engine: Any) -> None:
    instance = _start(engine)
    task_key = _created(engine, instance)
    correlation, _ = _ask(engine, Task.COMPLETE, task_key, UserTaskValue(variables="{}"))
    checking = _job(engine, instance, "tl-check")  # the completing listener runs
    cancel = ProcessInstanceValue(process_instance_key=instance)
    send(engine, command(ProcessInstanceIntent.CANCEL, cancel, key=instance))
    assert [r.intent for r in all_events(engine) if r.key == checking.key][-1] is (
        JobIntent.CANCELED
    )
    (answer,) = _replies(engine, correlation)
    assert answer.record_type is RecordType.COMMAND_REJECTION
    assert "canceled during ongoing transition" in answer.rejection_reason
    assert _task_steps(engine, instance)[-2:] == ["CANCELING", "CANCELED"]  # no canceling listener


WAITED = b"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d" targetNamespace="t">
  <bpmn:process id="race-to-end" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="fork" />
    <bpmn:parallelGateway id="fork" />
    <bpmn:sequenceFlow id="f2" sourceRef="fork" targetRef="review" />
    <bpmn:sequenceFlow id="f3" sourceRef="fork" targetRef="hold" />
    <bpmn:userTask id="review">
      <bpmn:extensionElements>
        <zeebe:userTask />
        <zeebe:taskListeners>
          <zeebe:taskListener eventType="canceling" type="tl-cleanup" />
        </zeebe:taskListeners>
      </bpmn:extensionElements>
    </bpmn:userTask>
    <bpmn:serviceTask id="hold">
      <bpmn:extensionElements><zeebe:taskDefinition type="hold" /></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f4" sourceRef="hold" targetRef="kill" />
    <bpmn:endEvent id="kill"><bpmn:terminateEventDefinition /></bpmn:endEvent>
  </bpmn:process>
  <bpmn:process id="first-answer" isExecutable="true">
    <bpmn:startEvent id="m-start" />
    <bpmn:sequenceFlow id="m1" sourceRef="m-start" targetRef="ask" />
    <bpmn:userTask id="ask">
      <bpmn:extensionElements>
        <zeebe:userTask />
        <zeebe:taskListeners>
          <zeebe:taskListener eventType="canceling" type="tl-cleanup" />
        </zeebe:taskListeners>
      </bpmn:extensionElements>
      <bpmn:multiInstanceLoopCharacteristics>
        <bpmn:extensionElements>
          <zeebe:loopCharacteristics inputCollection="=[1, 2, 3]" inputElement="n" />
        </bpmn:extensionElements>
        <bpmn:completionCondition>=numberOfCompletedInstances &gt;= 1</bpmn:completionCondition>
      </bpmn:multiInstanceLoopCharacteristics>
    </bpmn:userTask>
    <bpmn:sequenceFlow id="m2" sourceRef="ask" targetRef="m-end" />
    <bpmn:endEvent id="m-end" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_a_terminate_end_event_completes_its_scope_once_the_listeners_are_done(
    engine: Any,
) -> None:
    deploy(engine, "waited.bpmn", content={"waited.bpmn": WAITED})
    instance = create(engine, "race-to-end")
    _finish(engine, _job(engine, instance, "hold"))
    steps = _element_steps(engine, instance)
    assert ("kill", "ELEMENT_COMPLETED") in steps
    assert ("race-to-end", "ELEMENT_COMPLETED") not in steps  # review still terminates
    _finish(engine, _job(engine, instance, "tl-cleanup"))
    steps = _element_steps(engine, instance)
    assert steps[-2:] == [
        ("race-to-end", "ELEMENT_COMPLETING"),
        ("race-to-end", "ELEMENT_COMPLETED"),
    ]
    assert ("review", "ELEMENT_TERMINATED") in steps


def test_a_met_completion_condition_completes_the_body_after_the_listeners(engine: Any) -> None:
    deploy(engine, "waited.bpmn", content={"waited.bpmn": WAITED})
    instance = create(engine, "first-answer")
    tasks = sorted(
        r.key
        for r in all_events(engine)
        if r.intent is Task.CREATED and r.value.process_instance_key == instance
    )
    assert len(tasks) == 3
    send(engine, command(Task.COMPLETE, UserTaskValue(variables="{}"), key=tasks[0]))
    cleanups = [j for j in jobs_of(engine, instance) if j.value.type == "tl-cleanup"]
    assert len(cleanups) == 2  # the two others cancel, each with its listener
    steps = _element_steps(engine, instance)
    assert ("first-answer", "ELEMENT_COMPLETED") not in steps
    for job in cleanups:
        _finish(engine, job)
    steps = _element_steps(engine, instance)
    assert [e for e, s in steps if s == "ELEMENT_TERMINATED"] == ["ask", "ask"]
    assert steps[-1] == ("first-answer", "ELEMENT_COMPLETED")
    assert ("m-end", "ELEMENT_COMPLETED") in steps

"""Zeebe user tasks (`zeebe:userTask`): the USER_TASK records of creation, assignment, claims,
updates, completion and cancellation, with Zeebe's rejections; replay rebuilds the same state
(the fixture checks it after every scenario)."""

from __future__ import annotations

import json
from typing import Any

from partita.protocol.enums import ErrorType, RecordType, RejectionType
from partita.protocol.intents import IncidentIntent, ProcessInstanceIntent
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.records import Record, command
from partita.protocol.values import ProcessInstanceValue, UserTaskValue
from tests.support.paths import CONFORMANCE
from tests.support.scenario_steps import all_events, create, deploy, send

USER_TASK = (CONFORMANCE / "bpmn" / "user-task.bpmn").read_bytes()


def _start(engine: Any, **variables: object) -> tuple[int, Record]:
    deploy(engine, "user-task.bpmn", content={"user-task.bpmn": USER_TASK})
    defaults: dict[str, object] = {"owner": None, "reviewers": [], "due": None, "urgent": False}
    instance = create(engine, "user-task", **(defaults | variables))
    (task,) = [
        r
        for r in all_events(engine)
        if r.intent is Task.CREATED and r.value.process_instance_key == instance
    ]
    return instance, task


def _task_events(engine: Any, key: int) -> list[Record]:
    return [r for r in all_events(engine) if r.value_type.name == "USER_TASK" and r.key == key]


def _send(engine: Any, intent: Task, key: int, **fields: Any) -> Record:
    """The answer to a user task command: its rejection, or its final USER_TASK event."""
    results = send(engine, command(intent, UserTaskValue(**fields), key=key))
    if results[0].record_type is RecordType.COMMAND_REJECTION:
        return results[0]
    return [r for r in results if r.value_type.name == "USER_TASK"][-1]


def test_creation_evaluates_the_properties_then_assigns_after_activation(engine: Any) -> None:
    instance, task = _start(
        engine, owner="ann", reviewers=["bob", "cy"], due="2026-12-31T17:00:00Z", urgent=True
    )
    value = task.value
    assert value.user_task_key == task.key and value.element_id == "review"
    assert value.assignee == ""  # given after the element is activated
    assert value.candidate_groups_list == ("claims", "audit")
    assert value.candidate_users_list == ("bob", "cy")
    assert (value.due_date, value.follow_up_date) == (
        "2026-12-31T17:00:00Z",
        "2026-12-24T09:00:00+01:00",
    )
    assert value.priority == 90
    assert value.external_form_reference == "https://forms.example/claims"
    assert value.custom_headers == {"desk": "claims"}
    steps = [
        (r.value_type.name, r.intent.name)
        for r in all_events(engine)
        if r.value_type.name in ("USER_TASK", "PROCESS_INSTANCE")
        and r.value.process_instance_key == instance
        and getattr(r.value, "element_id", "review") == "review"
    ]
    assert steps[-5:] == [
        ("USER_TASK", "CREATING"),
        ("USER_TASK", "CREATED"),
        ("PROCESS_INSTANCE", "ELEMENT_ACTIVATED"),
        ("USER_TASK", "ASSIGNING"),
        ("USER_TASK", "ASSIGNED"),
    ]
    assigned = _task_events(engine, task.key)[-1]
    assert assigned.value.assignee == "ann" and assigned.value.changed_attributes == ("assignee",)


def test_a_claim_is_refused_while_someone_else_has_the_task(engine: Any) -> None:
    _, task = _start(engine, owner="ann")
    refused = _send(engine, Task.CLAIM, task.key, assignee="bob")
    assert refused.record_type is RecordType.COMMAND_REJECTION
    assert refused.rejection_type is RejectionType.INVALID_STATE
    assert refused.rejection_reason == (
        f"Expected to claim user task with key '{task.key}', but it has already been assigned"
    )
    again = _send(engine, Task.CLAIM, task.key, assignee="ann")
    assert again.intent is Task.ASSIGNED and again.value.action == "claim"
    assert again.value.changed_attributes == ()  # the same assignee: nothing changed
    unassigned = _send(engine, Task.ASSIGN, task.key, assignee="", action="unassign")
    assert unassigned.intent is Task.ASSIGNED and unassigned.value.assignee == ""
    claimed = _send(engine, Task.CLAIM, task.key, assignee="bob")
    assert claimed.intent is Task.ASSIGNED and claimed.value.assignee == "bob"
    taken = _send(engine, Task.ASSIGN, task.key, assignee="cy")  # an assignment overrides
    assert taken.value.assignee == "cy" and taken.value.action == "assign"
    intents = [r.intent for r in _task_events(engine, task.key)]
    assert Task.CLAIMING in intents and Task.ASSIGNING in intents


def test_an_update_changes_the_named_attributes_and_lists_those_that_changed(
    engine: Any,
) -> None:
    _, task = _start(engine)
    updated = _send(
        engine,
        Task.UPDATE,
        task.key,
        candidate_users_list=("dee",),
        due_date="2027-01-15T12:00:00Z",
        priority=40,  # unchanged
        changed_attributes=("candidateUsersList", "dueDate", "priority"),
    )
    assert updated.intent is Task.UPDATED
    assert updated.value.changed_attributes == ("candidateUsersList", "dueDate")
    assert updated.value.candidate_users_list == ("dee",)
    assert updated.value.candidate_groups_list == ("claims", "audit")  # not named: kept
    refused = _send(engine, Task.UPDATE, task.key, priority=101, changed_attributes=("priority",))
    assert refused.rejection_type is RejectionType.INVALID_ARGUMENT
    assert "priority must be 0 to 100, not 101" in refused.rejection_reason
    refused = _send(engine, Task.UPDATE, task.key, due_date="soon", changed_attributes=("dueDate",))
    assert "dueDate must be an ISO 8601 date-time with an offset" in refused.rejection_reason
    refused = _send(engine, Task.UPDATE, task.key, changed_attributes=("assignee",))
    assert "cannot update assignee of a user task" in refused.rejection_reason


def test_completion_merges_the_variables_and_completes_the_instance(engine: Any) -> None:
    instance, task = _start(engine)
    done = _send(engine, Task.COMPLETE, task.key, variables=json.dumps({"approved": True}))
    assert done.intent is Task.COMPLETED and done.value.action == "complete"
    intents = [r.intent for r in _task_events(engine, task.key)]
    assert intents[-2:] == [Task.COMPLETING, Task.COMPLETED]
    events = all_events(engine)
    assert any(
        r.key == instance and r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED for r in events
    )
    approved = [
        json.loads(r.value.value)
        for r in events
        if r.value_type.name == "VARIABLE" and r.value.name == "approved"
    ]
    assert approved == [True]
    gone = _send(engine, Task.COMPLETE, task.key)
    assert gone.rejection_type is RejectionType.NOT_FOUND
    assert gone.rejection_reason == (
        f"Expected to complete user task with key '{task.key}', but no such user task was found"
    )
    bad = _send(engine, Task.ASSIGN, 123456, assignee="x")
    assert bad.rejection_type is RejectionType.NOT_FOUND


def test_cancelling_the_instance_cancels_the_task(engine: Any) -> None:
    instance, task = _start(engine)
    cancel = ProcessInstanceValue(process_instance_key=instance)
    send(engine, command(ProcessInstanceIntent.CANCEL, cancel, key=instance))
    intents = [r.intent for r in _task_events(engine, task.key)]
    assert intents[-2:] == [Task.CANCELING, Task.CANCELED]
    refused = _send(engine, Task.COMPLETE, task.key)
    assert refused.rejection_type is RejectionType.NOT_FOUND


def test_a_property_that_cannot_be_evaluated_is_an_incident_naming_it(engine: Any) -> None:
    deploy(engine, "user-task.bpmn", content={"user-task.bpmn": USER_TASK})
    instance = create(engine, "user-task", owner=7, reviewers=[], due="tomorrow", urgent=False)
    incidents = [
        r.value
        for r in all_events(engine)
        if r.intent is IncidentIntent.CREATED and r.value.process_instance_key == instance
    ]
    assert [i.error_type for i in incidents] == [ErrorType.EXTRACT_VALUE_ERROR]
    assert "review: Expected result of the expression '=owner'" in incidents[0].error_message
    assert not [
        r
        for r in all_events(engine)
        if r.intent is Task.CREATING and r.value.process_instance_key == instance
    ]

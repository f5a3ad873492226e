"""Scopes and errors: embedded subprocesses with their own variables, event subprocesses,
call activities, errors caught by boundary events and event subprocesses (specific before
catch-all, through subprocess and call activity scopes), uncaught errors, terminate end and
none throw events."""

from __future__ import annotations

import json
from typing import Any

from partita.processing.instance import queries
from partita.processing.instance import state as instance_state
from partita.processing.variable import state as variable_state
from partita.protocol.enums import ErrorType, RejectionType
from partita.protocol.intents import IncidentIntent, JobIntent, ProcessInstanceIntent
from partita.protocol.records import command
from partita.protocol.values import JobValue, ProcessInstanceValue
from tests.support.scenario_steps import (
    all_events,
    complete,
    create,
    deploy,
    jobs_of,
    publish,
    send,
    steps,
)


def _throw(engine: Any, job: Any, code: str, message: str = "") -> list[Any]:
    value = JobValue(error_code=code, error_message=message)
    return send(engine, command(JobIntent.THROW_ERROR, value, key=job.key))


def _instance_jobs(engine: Any, instance: int) -> list[Any]:
    """Open jobs of an instance and of the instances it called."""
    called = {
        r.key
        for r in all_events(engine)
        if r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATING
        and r.value.parent_process_instance_key == instance
    }
    return [j for i in (instance, *called) for j in jobs_of(engine, i)]


def test_an_embedded_subprocess_has_its_own_scope(engine: Any) -> None:
    deploy(engine, "subprocess.bpmn")
    instance = create(engine, "with-subprocess", order={"id": 7})
    (job,) = jobs_of(engine, instance)
    sub_key = next(
        r.key
        for r in engine.events(0)
        if r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATED and r.value.element_id == "sub"
    )
    assert variable_state.local_variables(engine.dbs[0], sub_key) == {"orderId": 7}
    assert job.value.element_id == "inner"
    inner = instance_state.instance(engine.dbs[0], job.value.element_instance_key)
    assert inner is not None and inner.flow_scope_key == sub_key
    complete(engine, job, subResult="ok")
    lifecycle = steps(engine, instance)
    assert ("sub-end", "ELEMENT_COMPLETED") in lifecycle and (
        "sub",
        "ELEMENT_COMPLETED",
    ) in lifecycle
    assert lifecycle[-1] == ("with-subprocess", "ELEMENT_COMPLETED")
    variables = [
        (r.value.name, r.value.scope_key)
        for r in engine.events(0)
        if r.value_type.name == "VARIABLE"
    ]
    assert ("result", instance) in variables and ("orderId", instance) not in variables


def test_errors_are_caught_by_the_specific_boundary_before_the_catch_all(engine: Any) -> None:
    deploy(engine, "subprocess.bpmn")
    specific = create(engine, "with-subprocess", order={"id": 1})
    (job,) = jobs_of(engine, specific)
    thrown = _throw(engine, job, "OUT_OF_STOCK")
    assert thrown[0].intent is JobIntent.ERROR_THROWN
    lifecycle = steps(engine, specific)
    assert ("sub", "ELEMENT_TERMINATED") in lifecycle and (
        "inner",
        "ELEMENT_TERMINATED",
    ) in lifecycle
    assert ("no-stock-end", "ELEMENT_COMPLETED") in lifecycle
    assert ("failed-end", "ELEMENT_ACTIVATING") not in lifecycle
    assert lifecycle[-1] == ("with-subprocess", "ELEMENT_COMPLETED")
    assert [r.intent for r in all_events(engine) if r.key == job.key][-1] is JobIntent.CANCELED

    other = create(engine, "with-subprocess", order={"id": 2})
    (job,) = jobs_of(engine, other)
    _throw(engine, job, "SOMETHING_ELSE")
    assert ("failed-end", "ELEMENT_COMPLETED") in steps(engine, other)
    assert not [r for r in all_events(engine) if r.intent is IncidentIntent.CREATED]


def test_an_error_end_event_is_caught_outside_its_subprocess(engine: Any) -> None:
    deploy(engine, "error-end.bpmn")
    fine = create(engine, "error-end", ok=True)
    assert steps(engine, fine)[-1] == ("error-end", "ELEMENT_COMPLETED")
    assert ("fine", "ELEMENT_COMPLETED") in steps(engine, fine)
    failing = create(engine, "error-end", ok=False)
    lifecycle = steps(engine, failing)
    assert ("attempt", "ELEMENT_TERMINATED") in lifecycle
    assert ("recovered", "ELEMENT_COMPLETED") in lifecycle
    assert lifecycle[-1] == ("error-end", "ELEMENT_COMPLETED")


def test_an_uncaught_error_is_an_incident_naming_the_code(engine: Any) -> None:
    deploy(engine, "error-end.bpmn")
    instance = create(engine, "uncaught-error")
    (incident,) = [r for r in all_events(engine) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.UNHANDLED_ERROR_EVENT
    assert "'NOPE'" in incident.value.error_message and incident.value.element_id == "u-fail"
    assert steps(engine, instance)[-1] == ("u-fail", "ELEMENT_ACTIVATING")


def test_event_subprocesses_interrupt_or_run_beside(engine: Any) -> None:
    deploy(engine, "event-subprocess.bpmn")
    instance = create(engine, "with-event-sub", id="e-1")
    (job,) = jobs_of(engine, instance)
    publish(engine, "note", "e-1", text="hello")  # non-interrupting
    lifecycle = steps(engine, instance)
    assert ("on-note", "ELEMENT_COMPLETED") in lifecycle and (
        "note-end",
        "ELEMENT_COMPLETED",
    ) in lifecycle
    assert ("work", "ELEMENT_TERMINATED") not in lifecycle and jobs_of(engine, instance) == [job]
    publish(engine, "cancel", "e-1")  # interrupting
    lifecycle = steps(engine, instance)
    assert ("work", "ELEMENT_TERMINATED") in lifecycle and (
        "cancel-end",
        "ELEMENT_COMPLETED",
    ) in lifecycle
    assert lifecycle[-1] == ("with-event-sub", "ELEMENT_COMPLETED")

    erring = create(engine, "with-event-sub", id="e-2")
    (job,) = jobs_of(engine, erring)
    _throw(engine, job, "ANY")
    lifecycle = steps(engine, erring)
    assert ("on-error", "ELEMENT_ACTIVATED") in lifecycle and (
        "handled",
        "ELEMENT_COMPLETED",
    ) in lifecycle
    assert lifecycle[-1] == ("with-event-sub", "ELEMENT_COMPLETED")


def test_a_call_activity_runs_a_child_instance_with_the_variables(engine: Any) -> None:
    deploy(engine, "call-activity.bpmn")
    parent = create(engine, "parent", childId="child", x=1)
    (job,) = _instance_jobs(engine, parent)
    child = job.value.process_instance_key
    assert child != parent
    assert variable_state.local_variables(engine.dbs[0], child) == {"childId": "child", "x": 1}
    (refused,) = send(
        engine,
        command(
            ProcessInstanceIntent.CANCEL,
            ProcessInstanceValue(process_instance_key=child),
            key=child,
        ),
    )
    assert refused.rejection_type is RejectionType.INVALID_STATE
    assert "cancel its root process instance" in refused.rejection_reason
    complete(engine, job, y=2)
    assert steps(engine, child)[-1] == ("child", "ELEMENT_COMPLETED")
    assert steps(engine, parent)[-1] == ("parent", "ELEMENT_COMPLETED")
    assert variable_state.local_variables(engine.dbs[0], parent) == {}  # completed and removed
    ys = [r for r in engine.events(0) if r.value_type.name == "VARIABLE" and r.value.name == "y"]
    assert [(r.value.scope_key, json.loads(r.value.value)) for r in ys] == [(child, 2), (parent, 2)]


def test_only_mapped_variables_cross_a_strict_call_activity(engine: Any) -> None:
    deploy(engine, "call-activity.bpmn")
    parent = create(engine, "parent-strict", x=5, secret="s")
    (job,) = _instance_jobs(engine, parent)
    child = job.value.process_instance_key
    assert variable_state.local_variables(engine.dbs[0], child) == {"x": 5}
    complete(engine, job, y=9, noise=True)
    names = {
        r.value.name
        for r in engine.events(0)
        if r.value_type.name == "VARIABLE" and r.value.scope_key == parent
    }
    assert names == {"x", "secret", "fromChild"}


def test_cancelling_the_parent_terminates_the_child_and_errors_cross_upwards(engine: Any) -> None:
    deploy(engine, "call-activity.bpmn")
    parent = create(engine, "parent", childId="child")
    (job,) = _instance_jobs(engine, parent)
    child = job.value.process_instance_key
    cancel = ProcessInstanceValue(process_instance_key=parent)
    send(engine, command(ProcessInstanceIntent.CANCEL, cancel, key=parent))
    assert steps(engine, child)[-1] == ("child", "ELEMENT_TERMINATED")
    assert [r.intent for r in all_events(engine) if r.key == job.key][-1] is JobIntent.CANCELED

    failing = create(engine, "parent", childId="child")
    (job,) = _instance_jobs(engine, failing)
    _throw(engine, job, "CHILD_FAILED")
    assert steps(engine, job.value.process_instance_key)[-1] == ("child", "ELEMENT_TERMINATED")
    lifecycle = steps(engine, failing)
    assert ("child-failed-end", "ELEMENT_COMPLETED") in lifecycle
    assert lifecycle[-1] == ("parent", "ELEMENT_COMPLETED")


def test_a_missing_called_process_is_an_incident(engine: Any) -> None:
    deploy(engine, "call-activity.bpmn")
    create(engine, "parent", childId="nobody")
    (incident,) = [r for r in all_events(engine) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.CALLED_ELEMENT_ERROR
    assert "no process 'nobody' is deployed" in incident.value.error_message


def test_a_terminate_end_event_ends_its_scope_at_once(engine: Any) -> None:
    deploy(engine, "terminate.bpmn")
    instance = create(engine, "terminating")
    lifecycle = steps(engine, instance)
    assert ("mark", "ELEMENT_COMPLETED") in lifecycle  # the none throw event passes through
    assert ("slow", "ELEMENT_TERMINATED") in lifecycle
    assert lifecycle[-1] == ("terminating", "ELEMENT_COMPLETED")
    slow_jobs = [r for r in all_events(engine) if r.value_type.name == "JOB"]
    assert [r.intent for r in slow_jobs] == [JobIntent.CREATED, JobIntent.CANCELED]


def test_an_incident_in_a_called_instance_is_visible_from_the_root(engine: Any) -> None:
    deploy(engine, "call-activity.bpmn")
    parent = create(engine, "parent", childId="child")
    (job,) = _instance_jobs(engine, parent)
    send(
        engine, command(JobIntent.FAIL, JobValue(retries=0, error_message="disk full"), key=job.key)
    )
    tree = queries.instance_tree(engine.dbs[0], parent)
    assert tree is not None and tree["elementId"] == "parent"
    (call,) = tree["children"]
    assert call["elementId"] == "call" and call["called"]["elementId"] == "child"
    (incident,) = queries.incidents_in_tree(tree)
    assert incident["errorType"] == "JOB_NO_RETRIES" and incident["message"] == "disk full"

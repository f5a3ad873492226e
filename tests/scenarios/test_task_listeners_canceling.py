"""Canceling task listeners: a user task's element terminated (the instance cancelled, an
interrupting boundary event, a terminate end event, a met completion condition) waits for its
canceling listeners' jobs, then what the termination was for follows; replay rebuilds the same
state (the fixture checks it after every scenario)."""

from __future__ import annotations

from typing import Any

from partita.protocol.enums import (
    JobKind,
    JobListenerEventType,
    RecordType,
    RejectionType,
)
from partita.protocol.intents import (
    JobIntent,
    ProcessInstanceIntent,
)
from partita.protocol.intents import UserTaskIntent as Task
from partita.protocol.records import command
from partita.protocol.values import (
    ProcessInstanceValue,
    UserTaskValue,
)
from tests.support import task_listener_steps as tl
from tests.support.scenario_steps import all_events, create, deploy, jobs_of, send


def _cancel_start(engine: Any) -> tuple[int, int]:
    """An instance of `task-listeners-cancel` waiting at its task: (instance, task key)."""
    deploy(engine, "tl.bpmn", content={"tl.bpmn": tl.LISTENERS})
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
    first = tl.job(engine, instance, "tl-cancel-a")
    assert first.value.job_kind is JobKind.TASK_LISTENER
    assert first.value.listener_event_type is JobListenerEventType.CANCELING
    assert first.value.custom_headers["io.camunda.zeebe:userTaskKey"] == str(task_key)
    assert first.value.custom_headers["io.camunda.zeebe:assignee"] == "ann"
    assert tl.task_steps(engine, instance)[-1] == "CANCELING"
    terminating = {
        e for e, step in _element_steps(engine, instance) if step == "ELEMENT_TERMINATING"
    }
    assert terminating == {"task-listeners-cancel", "stage", "review"}
    assert not any(step == "ELEMENT_TERMINATED" for _, step in _element_steps(engine, instance))
    again = send(engine, command(ProcessInstanceIntent.CANCEL, cancel, key=instance))[0]
    assert again.rejection_type is RejectionType.INVALID_STATE
    assert "already terminating" in again.rejection_reason

    tl.finish(engine, first, {"corrections": {"priority": 99}})  # nothing to correct: ignored
    assert tl.task_steps(engine, instance)[-1] == "CANCELING"
    second = tl.job(engine, instance, "tl-cancel-b")
    tl.finish(engine, second)
    assert tl.task_steps(engine, instance)[-2:] == ["CANCELING", "CANCELED"]
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
    tl.finish(engine, tl.job(engine, instance, "tl-cancel-a"))
    assert ("too-slow", "ELEMENT_ACTIVATING") not in _element_steps(engine, instance)
    tl.finish(engine, tl.job(engine, instance, "tl-cancel-b"))
    steps = _element_steps(engine, instance)
    assert steps.index(("review", "ELEMENT_TERMINATED")) < steps.index(
        ("too-slow", "ELEMENT_ACTIVATING")
    )
    assert steps[-1] == ("task-listeners-cancel", "ELEMENT_COMPLETED")


def test_a_canceling_listener_cannot_deny(engine: Any) -> None:
    instance, _ = _cancel_start(engine)
    cancel = ProcessInstanceValue(process_instance_key=instance)
    send(engine, command(ProcessInstanceIntent.CANCEL, cancel, key=instance))
    (refused,) = tl.finish(engine, tl.job(engine, instance, "tl-cancel-a"), {"denied": True})
    assert refused.rejection_type is RejectionType.INVALID_ARGUMENT
    assert "Denying result is not supported for 'CANCELING' task listener jobs" in (
        refused.rejection_reason
    )


def test_a_completion_under_way_is_cancelled_and_its_client_rejected(engine: Any) -> None:
    instance = tl.start(engine)
    task_key = tl.created(engine, instance)
    correlation, _ = tl.ask(engine, Task.COMPLETE, task_key, UserTaskValue(variables="{}"))
    checking = tl.job(engine, instance, "tl-check")  # the completing listener runs
    cancel = ProcessInstanceValue(process_instance_key=instance)
    send(engine, command(ProcessInstanceIntent.CANCEL, cancel, key=instance))
    assert [r.intent for r in all_events(engine) if r.key == checking.key][-1] is (
        JobIntent.CANCELED
    )
    (answer,) = tl.replies(engine, correlation)
    assert answer.record_type is RecordType.COMMAND_REJECTION
    assert "canceled during ongoing transition" in answer.rejection_reason
    # no canceling listener on this task: CANCELED at once
    assert tl.task_steps(engine, instance)[-2:] == ["CANCELING", "CANCELED"]


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
    tl.finish(engine, tl.job(engine, instance, "hold"))
    steps = _element_steps(engine, instance)
    assert ("kill", "ELEMENT_COMPLETED") in steps
    assert ("race-to-end", "ELEMENT_COMPLETED") not in steps  # review still terminates
    tl.finish(engine, tl.job(engine, instance, "tl-cleanup"))
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
        tl.finish(engine, job)
    steps = _element_steps(engine, instance)
    assert [e for e, s in steps if s == "ELEMENT_TERMINATED"] == ["ask", "ask"]
    assert steps[-1] == ("first-answer", "ELEMENT_COMPLETED")
    assert ("m-end", "ELEMENT_COMPLETED") in steps

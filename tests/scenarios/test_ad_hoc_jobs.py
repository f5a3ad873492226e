"""Job worker ad-hoc subprocesses (Zeebe 8.8, what Camunda's AI agents run on): the job created
on activation, its result activating elements with their own variables or completing the
subprocess, a new job after each completed path, Zeebe's refusals, and the incident of a job out
of retries; replay rebuilds the same state (the fixture checks it after every scenario)."""

from __future__ import annotations

import json
from typing import Any

from partita.protocol.enums import ErrorType, JobKind, RejectionType
from partita.protocol.intents import (
    IncidentIntent,
    JobIntent,
    ProcessInstanceIntent,
    VariableIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.values import JobValue, ProcessInstanceValue
from tests.support.paths import CONFORMANCE
from tests.support.scenario_steps import all_events, complete, create, deploy, jobs_of, send

AGENT = (CONFORMANCE / "bpmn" / "ad-hoc-agent.bpmn").read_bytes()


def _start(engine: Any) -> int:
    deploy(engine, "agent.bpmn", content={"agent.bpmn": AGENT})
    return create(engine, "ad-hoc-agent", order="o-1")


def _open(engine: Any, instance: int, job_type: str) -> Record:
    ended = {
        r.key for r in all_events(engine) if r.intent in (JobIntent.COMPLETED, JobIntent.CANCELED)
    }
    (job,) = [
        j for j in jobs_of(engine, instance) if j.value.type == job_type and j.key not in ended
    ]
    return job


def _decide(engine: Any, job: Record, **result: Any) -> list[Record]:
    value = JobValue(result=json.dumps({"type": "adHocSubProcess", **result}))
    return send(engine, command(JobIntent.COMPLETE, value, key=job.key))


def _steps(engine: Any, instance: int, element_id: str) -> list[str]:
    return [
        r.intent.name
        for r in all_events(engine)
        if r.value_type.name == "PROCESS_INSTANCE"
        and r.value.process_instance_key == instance
        and r.value.element_id == element_id
    ]


def test_the_job_is_created_before_activation_with_the_elements_it_may_activate(
    engine: Any,
) -> None:
    instance = _start(engine)
    job = _open(engine, instance, "agent")
    assert job.value.job_kind is JobKind.AD_HOC_SUB_PROCESS
    assert (job.value.retries, job.value.custom_headers) == (2, {"model": "small"})
    assert _steps(engine, instance, "agent") == ["ELEMENT_ACTIVATING", "ELEMENT_ACTIVATED"]
    variables = {
        r.value.name: json.loads(r.value.value)
        for r in all_events(engine)
        if r.intent is VariableIntent.CREATED
        and r.value.scope_key == job.value.element_instance_key
    }
    assert variables["adHocSubProcessElements"] == [
        {"elementId": "lookup", "elementName": "Look up the order"},
        {"elementId": "refund", "elementName": "Refund"},
    ]
    assert variables["toolCallResults"] == []
    assert not _steps(engine, instance, "lookup")  # nothing runs until the job decides


def test_a_result_activates_elements_with_their_variables_and_each_path_asks_again(
    engine: Any,
) -> None:
    instance = _start(engine)
    first = _open(engine, instance, "agent")
    activate = [
        {"elementId": "lookup", "variables": {"toolName": "lookup"}},
        {"elementId": "lookup", "variables": {"toolName": "lookup-again"}},
    ]
    _decide(engine, first, activateElements=activate)  # one element twice: allowed
    lookups = [j for j in jobs_of(engine, instance) if j.value.type == "lookup"]
    assert len(lookups) == 2
    complete(engine, lookups[0], answer="shipped")
    second = _open(engine, instance, "agent")  # a path completed: the worker decides again
    complete(engine, lookups[1], answer="late")
    cancelled = [r.key for r in all_events(engine) if r.intent is JobIntent.CANCELED]
    assert second.key in cancelled  # the stale job gave way to a newer one
    third = _open(engine, instance, "agent")
    (stale,) = send(engine, command(JobIntent.COMPLETE, JobValue(), key=second.key))
    assert stale.rejection_type is RejectionType.NOT_FOUND
    _decide(engine, third, isCompletionConditionFulfilled=True)
    assert _steps(engine, instance, "agent")[-1] == "ELEMENT_COMPLETED"
    collected = [
        json.loads(r.value.value)
        for r in all_events(engine)
        if r.intent in (VariableIntent.CREATED, VariableIntent.UPDATED)
        and r.value.name == "toolCallResults"
        and r.value.scope_key == instance
    ]
    assert collected[-1] == [
        {"tool": "lookup", "answer": "shipped"},
        {"tool": "lookup-again", "answer": "late"},
    ]


def _refund_running(engine: Any) -> tuple[int, Record, Record]:
    """An instance whose lookup path completed while its refund runs: its new agent job and
    the refund's job."""
    instance = _start(engine)
    both = [{"elementId": "refund"}, {"elementId": "lookup", "variables": {"toolName": "l"}}]
    _decide(engine, _open(engine, instance, "agent"), activateElements=both)
    complete(engine, _open(engine, instance, "lookup"), answer="shipped")
    return instance, _open(engine, instance, "agent"), _open(engine, instance, "refund")


def test_a_completion_waits_for_running_paths(engine: Any) -> None:
    instance, agent, refund = _refund_running(engine)
    _decide(engine, agent, isCompletionConditionFulfilled=True)
    assert _steps(engine, instance, "agent")[-1] == "ELEMENT_ACTIVATED"  # the refund runs
    complete(engine, refund, answer="refunded")
    assert _steps(engine, instance, "agent")[-1] == "ELEMENT_COMPLETED"
    assert not [
        j for j in jobs_of(engine, instance) if j.value.type == "agent" and j.key > refund.key
    ]  # no job after the completion was asked for


def test_a_completion_that_cancels_the_running_paths(engine: Any) -> None:
    instance, agent, refund = _refund_running(engine)
    _decide(engine, agent, isCompletionConditionFulfilled=True, isCancelRemainingInstances=True)
    assert _steps(engine, instance, "refund")[-1] == "ELEMENT_TERMINATED"
    assert [r.intent for r in all_events(engine) if r.key == refund.key][-1] is JobIntent.CANCELED
    assert _steps(engine, instance, "agent")[-1] == "ELEMENT_COMPLETED"


def test_refusals_and_incidents(engine: Any) -> None:
    instance = _start(engine)
    job = _open(engine, instance, "agent")
    (unknown,) = _decide(engine, job, activateElements=[{"elementId": "ghost"}, {"elementId": "x"}])
    assert unknown.rejection_type is RejectionType.NOT_FOUND
    assert unknown.rejection_reason == (
        "Expected to activate activities for ad-hoc sub-process with key"
        f" '{job.value.element_instance_key}', but the given elements [ghost, x] do not exist."
    )
    (both,) = _decide(
        engine, job, activateElements=[{"elementId": "lookup"}], isCompletionConditionFulfilled=True
    )
    assert both.rejection_type is RejectionType.INVALID_ARGUMENT
    assert "because the completion condition is fulfilled" in both.rejection_reason
    send(
        engine, command(JobIntent.FAIL, JobValue(retries=0, error_message="no model"), key=job.key)
    )
    (incident,) = [r for r in all_events(engine) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.AD_HOC_SUB_PROCESS_NO_RETRIES
    assert incident.value.element_id == "agent"
    send(engine, command(ProcessInstanceIntent.CANCEL, ProcessInstanceValue(), key=instance))
    assert [r.intent for r in all_events(engine) if r.key == job.key][-1] is JobIntent.CANCELED


def test_a_hostile_result_is_refused_and_the_job_stays(engine: Any) -> None:
    instance = _start(engine)
    job = _open(engine, instance, "agent")
    for hostile, words in (("[" * 100_000, "nested too deeply"), ("[1]", "must be a JSON object")):
        (refused,) = send(
            engine, command(JobIntent.COMPLETE, JobValue(result=hostile), key=job.key)
        )
        assert refused.rejection_type is RejectionType.INVALID_ARGUMENT
        assert words in refused.rejection_reason, refused.rejection_reason
    _decide(engine, job, activateElements=[{"elementId": "lookup"}])  # still the worker's
    assert _open(engine, instance, "lookup").value.type == "lookup"


TOOLS = b"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="d" targetNamespace="t">
  <bpmn:process id="two-step-tools" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="agent" />
    <bpmn:adHocSubProcess id="agent">
      <bpmn:extensionElements>
        <zeebe:taskDefinition type="agent" />
        <zeebe:adHoc outputCollection="results" outputElement="={call: toolCall, said: said}" />
      </bpmn:extensionElements>
      <bpmn:serviceTask id="draft">
        <bpmn:extensionElements><zeebe:taskDefinition type="draft" /></bpmn:extensionElements>
        <bpmn:outgoing>d1</bpmn:outgoing>
      </bpmn:serviceTask>
      <bpmn:sequenceFlow id="d1" sourceRef="draft" targetRef="send" />
      <bpmn:serviceTask id="send">
        <bpmn:extensionElements>
          <zeebe:taskDefinition type="send" />
          <zeebe:ioMapping>
            <zeebe:input source="=toolCall.to" target="to" />
            <zeebe:output source="=&quot;sent to &quot; + to" target="said" />
          </zeebe:ioMapping>
        </bpmn:extensionElements>
        <bpmn:incoming>d1</bpmn:incoming>
      </bpmn:serviceTask>
    </bpmn:adHocSubProcess>
    <bpmn:sequenceFlow id="f2" sourceRef="agent" targetRef="end" />
    <bpmn:endEvent id="end" />
  </bpmn:process>
</bpmn:definitions>
"""


def test_each_activation_runs_in_an_inner_instance_its_whole_path_sees(engine: Any) -> None:
    deploy(engine, "tools.bpmn", content={"tools.bpmn": TOOLS})
    instance = create(engine, "two-step-tools")
    agent = _open(engine, instance, "agent")
    agent_key = agent.value.element_instance_key
    calls = [
        {"elementId": "draft", "variables": {"toolCall": {"to": "ann"}}},
        {"elementId": "draft", "variables": {"toolCall": {"to": "bob"}}},
    ]
    _decide(engine, agent, activateElements=calls)
    inner = [
        r
        for r in all_events(engine)
        if r.intent is ProcessInstanceIntent.ELEMENT_ACTIVATED
        and r.value.element_id == "agent#innerInstance"
    ]
    assert len(inner) == 2
    assert all(r.value.flow_scope_key == agent_key for r in inner)
    assert all(r.value.bpmn_element_type.name == "AD_HOC_SUB_PROCESS_INNER_INSTANCE" for r in inner)
    calls_by_scope = {
        r.value.scope_key: json.loads(r.value.value)
        for r in all_events(engine)
        if r.intent is VariableIntent.CREATED and r.value.name == "toolCall"
    }
    assert calls_by_scope == {inner[0].key: {"to": "ann"}, inner[1].key: {"to": "bob"}}
    drafts = [j for j in jobs_of(engine, instance) if j.value.type == "draft"]
    assert {d.value.element_instance_key for d in drafts}.isdisjoint({r.key for r in inner})
    for draft in drafts:
        complete(engine, draft)
    sends = [j for j in jobs_of(engine, instance) if j.value.type == "send"]
    inputs = {  # the second element of each path maps its activation's toolCall
        r.value.scope_key: json.loads(r.value.value)
        for r in all_events(engine)
        if r.intent is VariableIntent.CREATED and r.value.name == "to"
    }
    assert sorted(inputs[s.value.element_instance_key] for s in sends) == ["ann", "bob"]
    for job in sends:
        complete(engine, job)
    assert _steps(engine, instance, "agent#innerInstance").count("ELEMENT_COMPLETED") == 2
    collected = [
        json.loads(r.value.value)
        for r in all_events(engine)
        if r.intent in (VariableIntent.CREATED, VariableIntent.UPDATED)
        and r.value.name == "results"
    ]
    assert sorted(collected[-1], key=lambda c: c["call"]["to"]) == [
        {"call": {"to": "ann"}, "said": "sent to ann"},
        {"call": {"to": "bob"}, "said": "sent to bob"},
    ]
    _decide(engine, _open(engine, instance, "agent"), isCompletionConditionFulfilled=True)
    assert _steps(engine, instance, "agent")[-1] == "ELEMENT_COMPLETED"

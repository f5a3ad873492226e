"""Process instances on the engine core: lifecycle, variables, gateways, cancel, results."""

from __future__ import annotations

import json
from pathlib import Path

from partita.processing.builtin import build_engine
from partita.processing.instance import state as instance_state
from partita.processing.variable import state as variable_state
from partita.protocol.enums import (
    ErrorType,
    RecordType,
    RejectionType,
    VariableDocumentUpdateSemantic,
)
from partita.protocol.headers import ReplyTo
from partita.protocol.intents import (
    DeploymentIntent,
    IncidentIntent,
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    ProcessInstanceResultIntent,
    VariableDocumentIntent,
    VariableIntent,
)
from partita.protocol.records import command
from partita.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    ProcessInstanceCreationValue,
    ProcessInstanceValue,
    VariableDocumentValue,
)
from tests.support.memory import MemoryEngine
from tests.support.paths import BPMN_FIXTURES
from tests.support.scenario_steps import complete, create, jobs_of, lifecycle, send


def test_start_service_task_end_follows_zeebes_record_order(engine: MemoryEngine) -> None:
    instance = create(engine, "one-task", orderId=42)
    (job,) = jobs_of(engine, instance)
    assert (job.value.type, job.value.retries, job.value.element_id) == ("work", 3, "work")
    complete(engine, job, paid=True)

    assert lifecycle(engine, instance) == [
        ("one-task", "ELEMENT_ACTIVATING"),
        ("one-task", "ELEMENT_ACTIVATED"),
        ("start", "ELEMENT_ACTIVATING"),
        ("start", "ELEMENT_ACTIVATED"),
        ("start", "ELEMENT_COMPLETING"),
        ("start", "ELEMENT_COMPLETED"),
        ("f1", "SEQUENCE_FLOW_TAKEN"),
        ("work", "ELEMENT_ACTIVATING"),
        ("work", "ELEMENT_ACTIVATED"),
        ("work", "ELEMENT_COMPLETING"),
        ("work", "ELEMENT_COMPLETED"),
        ("f2", "SEQUENCE_FLOW_TAKEN"),
        ("end", "ELEMENT_ACTIVATING"),
        ("end", "ELEMENT_ACTIVATED"),
        ("end", "ELEMENT_COMPLETING"),
        ("end", "ELEMENT_COMPLETED"),
        ("one-task", "ELEMENT_COMPLETING"),
        ("one-task", "ELEMENT_COMPLETED"),
    ]
    events = [
        r
        for r in engine.events(0)
        if r.value_type.name in ("JOB", "PROCESS_INSTANCE")
        and getattr(r.value, "process_instance_key", 0) == instance
    ]
    job_created = next(i for i, r in enumerate(events) if r.intent is JobIntent.CREATED)
    assert (
        events[job_created - 1].intent is ProcessInstanceIntent.ELEMENT_ACTIVATING
    )  # JOB CREATED before task ACTIVATED
    variables = [
        (r.intent, r.value.name, r.value.value)
        for r in engine.events(0)
        if r.value_type.name == "VARIABLE" and r.value.process_instance_key == instance
    ]
    assert variables == [
        (VariableIntent.CREATED, "orderId", "42"),
        (VariableIntent.CREATED, "paid", "true"),
    ]
    assert instance_state.instance(engine.dbs[0], instance) is None  # completed and removed
    assert variable_state.local_variables(engine.dbs[0], instance) == {}


def test_unknown_process_and_bad_variables_are_rejected(engine: MemoryEngine) -> None:
    value = ProcessInstanceCreationValue(bpmn_process_id="nope")
    position = engine.send(0, command(ProcessInstanceCreationIntent.CREATE, value))
    bad = engine.send(
        0,
        command(
            ProcessInstanceCreationIntent.CREATE,
            ProcessInstanceCreationValue(bpmn_process_id="one-task", variables="[1]"),
        ),
    )
    engine.run()
    (missing,) = engine.results_of(0, position)
    assert (
        missing.rejection_type is RejectionType.NOT_FOUND
        and "process 'nope' is not deployed" in missing.rejection_reason
    )
    (invalid,) = engine.results_of(0, bad)
    assert (
        invalid.rejection_type is RejectionType.INVALID_ARGUMENT
        and "JSON object" in invalid.rejection_reason
    )


def test_exclusive_and_parallel_gateways_with_mappings(engine: MemoryEngine) -> None:
    instance = create(engine, "order-process", order={"total": 12.5})
    (charge,) = jobs_of(engine, instance)
    assert charge.value.type == "payment-service" and charge.value.retries == 5
    assert dict(charge.value.custom_headers) == {"method": "card"}
    task_scope = variable_state.local_variables(engine.dbs[0], charge.value.element_instance_key)
    assert task_scope == {"amount": 12.5}  # the input mapping, local to the task
    complete(engine, charge, paid=True)

    steps = lifecycle(engine, instance)
    assert ("Flow_ship", "SEQUENCE_FLOW_TAKEN") in steps and (
        "Flow_refund",
        "SEQUENCE_FLOW_TAKEN",
    ) not in steps
    assert steps.count(("join", "ELEMENT_ACTIVATING")) == 1  # both branches joined once
    assert steps[-1] == ("order-process", "ELEMENT_COMPLETED")
    assert ("shipped", "ELEMENT_COMPLETED") in steps


def test_the_default_flow_is_taken_when_no_condition_holds(engine: MemoryEngine) -> None:
    instance = create(engine, "order-process", order={"total": 1}, region="eu")
    (charge,) = jobs_of(engine, instance)
    complete(engine, charge, paid=False)
    (refund,) = jobs_of(engine, instance)
    assert refund.value.type == "refund-eu"  # a FEEL job type
    complete(engine, refund)
    steps = lifecycle(engine, instance)
    assert ("Flow_refund", "SEQUENCE_FLOW_TAKEN") in steps
    assert steps[-1] == ("order-process", "ELEMENT_COMPLETED")


def test_a_condition_that_is_not_boolean_raises_an_incident(engine: MemoryEngine) -> None:
    instance = create(engine, "order-process", order={"total": 1})
    (charge,) = jobs_of(engine, instance)
    complete(engine, charge, paid="yes")  # `orderPaid = true` compares a string: null
    (incident,) = [r for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.CONDITION_ERROR
    assert "Flow_ship" in incident.value.error_message
    assert "expected the result to be a boolean but it is null" in incident.value.error_message
    assert incident.value.element_id == "paid-gateway"
    assert ("paid-gateway", "ELEMENT_COMPLETING") not in lifecycle(engine, instance)


def test_a_job_type_expression_that_fails_raises_an_incident(engine: MemoryEngine) -> None:
    instance = create(engine, "order-process", order={"total": 1})  # no `region`
    (charge,) = jobs_of(engine, instance)
    complete(engine, charge, paid=False)
    (incident,) = [r for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.EXTRACT_VALUE_ERROR
    assert incident.value.element_id == "refund"
    assert not jobs_of(engine, instance)


def test_cancel_terminates_children_and_cancels_the_job(engine: MemoryEngine) -> None:
    instance = create(engine, "order-process", order={"total": 3})
    (charge,) = jobs_of(engine, instance)
    position = engine.send(
        0,
        command(
            ProcessInstanceIntent.CANCEL,
            ProcessInstanceValue(process_instance_key=instance),
            key=instance,
        ),
    )
    engine.run()
    results = engine.results_of(0, position)
    assert [(r.value_type.name, r.intent.name) for r in results] == [
        ("PROCESS_INSTANCE", "ELEMENT_TERMINATING"),
        ("PROCESS_INSTANCE", "ELEMENT_TERMINATING"),
        ("JOB", "CANCELED"),
        ("PROCESS_INSTANCE", "ELEMENT_TERMINATED"),
        ("PROCESS_INSTANCE", "ELEMENT_TERMINATED"),
    ]
    assert results[1].value.element_id == "charge" and results[2].key == charge.key
    assert instance_state.instance(engine.dbs[0], instance) is None
    assert variable_state.local_variables(engine.dbs[0], instance) == {}
    (rejection,) = complete(engine, charge)  # the job went with the instance
    assert rejection.rejection_type is RejectionType.NOT_FOUND

    again = engine.send(
        0,
        command(
            ProcessInstanceIntent.CANCEL,
            ProcessInstanceValue(process_instance_key=instance),
            key=instance,
        ),
    )
    engine.run()
    (missing,) = engine.results_of(0, again)
    assert missing.rejection_type is RejectionType.NOT_FOUND
    assert f"no active process instance with key {instance}" in missing.rejection_reason


def test_variable_documents_update_local_and_propagated(engine: MemoryEngine) -> None:
    instance = create(engine, "order-process", order={"total": 4})
    (charge,) = jobs_of(engine, instance)
    task = charge.value.element_instance_key
    local = VariableDocumentValue(
        scope_key=task,
        update_semantics=VariableDocumentUpdateSemantic.LOCAL,
        variables='{"amount": 5, "note": "x"}',
    )
    (updated,) = [
        r
        for r in send(engine, command(VariableDocumentIntent.UPDATE, local))
        if r.intent is VariableDocumentIntent.UPDATED
    ]
    assert updated.value.scope_key == task
    assert variable_state.local_variables(engine.dbs[0], task) == {"amount": 5, "note": "x"}
    propagate = VariableDocumentValue(scope_key=task, variables='{"note": "y", "region": "eu"}')
    send(engine, command(VariableDocumentIntent.UPDATE, propagate))
    assert variable_state.local_variables(engine.dbs[0], task)["note"] == "y"  # defined locally
    assert variable_state.local_variables(engine.dbs[0], instance)["region"] == "eu"  # new: root
    (missing,) = send(
        engine, command(VariableDocumentIntent.UPDATE, VariableDocumentValue(scope_key=12345))
    )
    assert missing.rejection_type is RejectionType.NOT_FOUND


def test_create_with_awaiting_result_replies_when_the_instance_completes(
    engine: MemoryEngine,
) -> None:
    value = ProcessInstanceCreationValue(
        bpmn_process_id="one-task", variables='{"a": 1, "b": 2}', fetch_variables=("b", "done")
    )
    engine.send(
        0,
        command(ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT, value),
        reply=ReplyTo(engine.REPLIES, 0, b"req-1"),
    )
    engine.run()
    assert engine.replies() == []  # nothing until the instance completes
    (created,) = [r for r in engine.events(0) if r.intent is ProcessInstanceCreationIntent.CREATED]
    (job,) = jobs_of(engine, created.key)
    complete(engine, job, done=True)
    ((correlation, result),) = engine.replies()
    assert correlation == b"req-1"
    assert result.intent is ProcessInstanceResultIntent.COMPLETED
    assert result.value.process_instance_key == created.key
    assert json.loads(result.value.variables) == {"b": 2, "done": True}


def test_an_awaited_instance_that_is_cancelled_answers_with_a_rejection(
    engine: MemoryEngine,
) -> None:
    value = ProcessInstanceCreationValue(bpmn_process_id="one-task")
    engine.send(
        0,
        command(ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT, value),
        reply=ReplyTo(engine.REPLIES, 0, b"req-2"),
    )
    engine.run()
    (created,) = [r for r in engine.events(0) if r.intent is ProcessInstanceCreationIntent.CREATED]
    cancel = ProcessInstanceValue(process_instance_key=created.key)
    engine.send(0, command(ProcessInstanceIntent.CANCEL, cancel, key=created.key))
    engine.run()
    ((correlation, rejection),) = engine.replies()
    assert correlation == b"req-2"
    assert rejection.record_type is RecordType.COMMAND_REJECTION
    assert rejection.rejection_type is RejectionType.INVALID_STATE
    assert "terminated before it completed" in rejection.rejection_reason


def test_a_creation_that_overtakes_its_deployment_is_handed_to_partition_0(
    tmp_path: Path,
) -> None:
    """Clients write ingress, the engine distributes deployments on the log: a creation sent
    to partition 1 right after the deployment's reply can be read there before the
    distribution. Partition 1 hands it, with its reply address, to partition 0, which deployed
    the process before answering the deployment, instead of rejecting it NOT_FOUND."""
    harness = MemoryEngine(build_engine(), tmp_path / "live", partitions=3)
    try:
        fixture = BPMN_FIXTURES / "one-task.bpmn"
        resource = DeploymentResource("one-task.bpmn", fixture.read_bytes())
        harness.send(0, command(DeploymentIntent.CREATE, DeploymentValue(resources=(resource,))))
        reply = ReplyTo(harness.REPLIES, 0, b"early")
        value = ProcessInstanceCreationValue(bpmn_process_id="one-task")
        position = harness.send(1, command(ProcessInstanceCreationIntent.CREATE, value), reply)
        harness.run()
        assert harness.results_of(1, position) == []  # not rejected there: handed over
        (created,) = [
            r for r in harness.events(0) if r.intent is ProcessInstanceCreationIntent.CREATED
        ]
        assert created.key >> 51 == 1  # an instance of partition 0
        answers = [record for correlation, record in harness.replies() if correlation == b"early"]
        assert [a.intent for a in answers] == [ProcessInstanceCreationIntent.CREATED]
        # a process deployed nowhere is still NOT_FOUND, answered by partition 0
        missing = ProcessInstanceCreationValue(bpmn_process_id="nowhere")
        harness.send(2, command(ProcessInstanceCreationIntent.CREATE, missing))
        harness.run()
        rejected = [r for r in harness.records(0) if r.rejection_type is RejectionType.NOT_FOUND]
        assert [r.rejection_reason for r in rejected] == ["process 'nowhere' is not deployed"]
        harness.assert_replay_matches(tmp_path)
    finally:
        harness.close()

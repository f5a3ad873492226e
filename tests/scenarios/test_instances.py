"""Process instances on the engine core: the element lifecycle, jobs, variables, gateways."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.processing import instances
from engine.processing.builtin import build_engine
from engine.protocol.enums import (
    ErrorType,
    RecordType,
    RejectionType,
    VariableDocumentUpdateSemantic,
)
from engine.protocol.headers import ReplyTo
from engine.protocol.intents import (
    DeploymentIntent,
    IncidentIntent,
    JobBatchIntent,
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    ProcessInstanceResultIntent,
    VariableDocumentIntent,
    VariableIntent,
)
from engine.protocol.records import Record, command
from engine.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    IncidentValue,
    JobBatchValue,
    JobValue,
    ProcessInstanceCreationValue,
    ProcessInstanceValue,
    VariableDocumentValue,
)
from tests.support.memory import CODEC, MemoryEngine

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bpmn"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    memory = MemoryEngine(build_engine(), tmp_path, partitions=1)
    for name in ("one-task.bpmn", "order-process.bpmn"):
        value = DeploymentValue(
            resources=(DeploymentResource(name, (FIXTURES / name).read_bytes()),)
        )
        memory.send(0, command(DeploymentIntent.CREATE, value))
    memory.run()
    yield memory
    memory.assert_replay_matches(tmp_path)  # every scenario: replay rebuilds the same state
    memory.close()


def create(engine: MemoryEngine, process_id: str, **variables: object) -> int:
    value = ProcessInstanceCreationValue(
        bpmn_process_id=process_id, variables=json.dumps(variables)
    )
    position = engine.send(0, command(ProcessInstanceCreationIntent.CREATE, value))
    engine.run()
    created = [
        r
        for r in engine.results_of(0, position)
        if r.intent is ProcessInstanceCreationIntent.CREATED
    ]
    assert created, engine.results_of(0, position)
    return created[0].key


def jobs_of(engine: MemoryEngine, instance: int) -> list[Record]:
    created = [
        r
        for r in engine.events(0)
        if r.intent is JobIntent.CREATED and r.value.process_instance_key == instance
    ]
    done = {r.key for r in engine.events(0) if r.intent is JobIntent.COMPLETED}
    return [j for j in created if j.key not in done]


def complete(engine: MemoryEngine, job: Record, **variables: object) -> list[Record]:
    position = engine.send(
        0, command(JobIntent.COMPLETE, JobValue(variables=json.dumps(variables)), key=job.key)
    )
    engine.run()
    return engine.results_of(0, position)


def lifecycle(engine: MemoryEngine, instance: int) -> list[tuple[str, str]]:
    return [
        (r.value.element_id, r.intent.name)
        for r in engine.events(0)
        if r.value_type.name == "PROCESS_INSTANCE" and r.value.process_instance_key == instance
    ]


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
    assert instances.instance(engine.dbs[0], instance) is None  # completed and removed
    assert instances.local_variables(engine.dbs[0], instance) == {}


def test_completing_a_finished_job_is_rejected_not_found(engine: MemoryEngine) -> None:
    instance = create(engine, "one-task")
    (job,) = jobs_of(engine, instance)
    complete(engine, job)
    (rejection,) = complete(engine, job)
    assert rejection.record_type is RecordType.COMMAND_REJECTION
    assert rejection.rejection_type is RejectionType.NOT_FOUND
    assert f"job {job.key} does not exist or is no longer active" in rejection.rejection_reason


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
    task_scope = instances.local_variables(engine.dbs[0], charge.value.element_instance_key)
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
    assert instances.instance(engine.dbs[0], instance) is None
    assert instances.local_variables(engine.dbs[0], instance) == {}
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


def _send(engine: MemoryEngine, record: Record) -> list[Record]:
    position = engine.send(0, record)
    engine.run()
    return engine.results_of(0, position)


def test_a_job_out_of_retries_raises_an_incident_resolved_after_updating_retries(
    engine: MemoryEngine,
) -> None:
    instance = create(engine, "one-task")
    (job,) = jobs_of(engine, instance)
    failed = _send(
        engine,
        command(JobIntent.FAIL, JobValue(retries=0, error_message="card declined"), key=job.key),
    )
    assert [r.intent for r in failed] == [JobIntent.FAILED, IncidentIntent.CREATED]
    incident = failed[1]
    assert incident.value.error_type is ErrorType.JOB_NO_RETRIES
    assert incident.value.error_message == "card declined" and incident.value.job_key == job.key

    (refused,) = _send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    assert refused.rejection_type is RejectionType.INVALID_STATE
    assert "update its retries before resolving" in refused.rejection_reason

    (updated,) = _send(engine, command(JobIntent.UPDATE_RETRIES, JobValue(retries=2), key=job.key))
    assert updated.intent is JobIntent.RETRIES_UPDATED and updated.value.retries == 2
    (resolved,) = _send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    assert resolved.intent is IncidentIntent.RESOLVED
    complete(engine, job)
    assert lifecycle(engine, instance)[-1] == ("one-task", "ELEMENT_COMPLETED")


def test_failing_with_retries_left_keeps_the_job(engine: MemoryEngine) -> None:
    instance = create(engine, "one-task")
    (job,) = jobs_of(engine, instance)
    (failed,) = _send(
        engine,
        command(JobIntent.FAIL, JobValue(retries=2, retry_backoff=1000), key=job.key),
    )
    assert failed.value.retries == 2 and failed.value.recurring_time == failed.timestamp + 1000
    complete(engine, job)
    assert lifecycle(engine, instance)[-1] == ("one-task", "ELEMENT_COMPLETED")


def test_resolving_an_element_incident_retries_the_element(engine: MemoryEngine) -> None:
    instance = create(engine, "order-process", order={"total": 1})
    (charge,) = jobs_of(engine, instance)
    complete(engine, charge, paid=False)  # refund's job type needs `region`: incident
    (incident,) = [r for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert incident.value.element_id == "refund"
    (resolved, *_) = _send(
        engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key)
    )
    assert resolved.intent is IncidentIntent.RESOLVED
    # still no `region`: the retried activation raises a new incident, not a crash
    incidents = [r for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert len(incidents) == 2 and incidents[1].value.element_id == "refund"
    (missing,) = _send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    assert missing.rejection_type is RejectionType.NOT_FOUND


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
        for r in _send(engine, command(VariableDocumentIntent.UPDATE, local))
        if r.intent is VariableDocumentIntent.UPDATED
    ]
    assert updated.value.scope_key == task
    assert instances.local_variables(engine.dbs[0], task) == {"amount": 5, "note": "x"}
    propagate = VariableDocumentValue(scope_key=task, variables='{"note": "y", "region": "eu"}')
    _send(engine, command(VariableDocumentIntent.UPDATE, propagate))
    assert instances.local_variables(engine.dbs[0], task)["note"] == "y"  # defined locally
    assert instances.local_variables(engine.dbs[0], instance)["region"] == "eu"  # new: root
    (missing,) = _send(
        engine, command(VariableDocumentIntent.UPDATE, VariableDocumentValue(scope_key=12345))
    )
    assert missing.rejection_type is RejectionType.NOT_FOUND


def _replies(engine: MemoryEngine) -> list[tuple[bytes, Record]]:
    out = []
    for message in engine.kafka.log("replies", 0):
        correlation = dict(message.headers())["kafka_correlationId"]
        out.append((correlation, CODEC.decode(message.value())))
    return out


def test_create_with_awaiting_result_replies_when_the_instance_completes(
    engine: MemoryEngine,
) -> None:
    value = ProcessInstanceCreationValue(
        bpmn_process_id="one-task", variables='{"a": 1, "b": 2}', fetch_variables=("b", "done")
    )
    engine.send(
        0,
        command(ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT, value),
        reply=ReplyTo("replies", 0, b"req-1"),
    )
    engine.run()
    assert _replies(engine) == []  # nothing until the instance completes
    (created,) = [r for r in engine.events(0) if r.intent is ProcessInstanceCreationIntent.CREATED]
    (job,) = jobs_of(engine, created.key)
    complete(engine, job, done=True)
    ((correlation, result),) = _replies(engine)
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
        reply=ReplyTo("replies", 0, b"req-2"),
    )
    engine.run()
    (created,) = [r for r in engine.events(0) if r.intent is ProcessInstanceCreationIntent.CREATED]
    cancel = ProcessInstanceValue(process_instance_key=created.key)
    engine.send(0, command(ProcessInstanceIntent.CANCEL, cancel, key=created.key))
    engine.run()
    ((correlation, rejection),) = _replies(engine)
    assert correlation == b"req-2"
    assert rejection.record_type is RecordType.COMMAND_REJECTION
    assert rejection.rejection_type is RejectionType.INVALID_STATE
    assert "terminated before it completed" in rejection.rejection_reason


def _activate(engine: MemoryEngine, max_jobs: int = 10, timeout: int = 60_000) -> Record:
    batch = JobBatchValue(type="work", worker="w1", timeout=timeout, max_jobs_to_activate=max_jobs)
    (activated,) = _send(engine, command(JobBatchIntent.ACTIVATE, batch))
    assert activated.intent is JobBatchIntent.ACTIVATED
    return activated


def test_polling_activates_jobs_once_with_variables_and_deadline(engine: MemoryEngine) -> None:
    first = create(engine, "one-task", n=1)
    second = create(engine, "one-task", n=2)
    batch = _activate(engine, max_jobs=1)
    (job,) = batch.value.jobs
    assert job.process_instance_key == first and json.loads(job.variables) == {"n": 1}
    assert job.worker == "w1" and job.deadline == batch.timestamp + 60_000
    assert batch.value.job_keys == (jobs_of(engine, first)[0].key,)
    (other,) = _activate(engine).value.jobs
    assert other.process_instance_key == second
    assert _activate(engine).value.jobs == ()  # nothing left to activate


def test_an_activated_job_times_out_and_can_be_activated_again(engine: MemoryEngine) -> None:
    instance = create(engine, "one-task")
    (job,) = _activate(engine, timeout=1000).value.jobs
    engine.advance(0.5)
    assert not [r for r in engine.events(0) if r.intent is JobIntent.TIMED_OUT]
    engine.advance(1.0)
    (timed_out,) = [r for r in engine.events(0) if r.intent is JobIntent.TIMED_OUT]
    assert timed_out.key == jobs_of(engine, instance)[0].key
    assert timed_out.source_record_position == -1  # an internal command of the checker
    (again,) = _activate(engine).value.jobs
    assert again.element_instance_key == job.element_instance_key


def test_a_failed_job_with_retries_is_activatable_again(engine: MemoryEngine) -> None:
    instance = create(engine, "one-task")
    _activate(engine)
    (job,) = jobs_of(engine, instance)
    _send(engine, command(JobIntent.FAIL, JobValue(retries=1), key=job.key))
    (again,) = _activate(engine).value.jobs
    assert again.retries == 1

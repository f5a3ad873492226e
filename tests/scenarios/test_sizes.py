"""Records near Kafka's size limit: a job whose variables are too large to send fails with a
MESSAGE_SIZE_EXCEEDED incident instead of stopping the partition, and an awaited result too
large for a reply is answered by a rejection while the instance still completes. The worker
keeps going in both cases (each test ends with a normal instance)."""

from __future__ import annotations

import json

from partita.processing.job.activation import MAX_JOB_VARIABLES_BYTES
from partita.protocol.enums import ErrorType, RecordType, RejectionType
from partita.protocol.headers import ReplyTo
from partita.protocol.intents import (
    IncidentIntent,
    JobBatchIntent,
    JobIntent,
    ProcessInstanceCreationIntent,
    VariableDocumentIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.values import (
    IncidentValue,
    JobBatchValue,
    JobValue,
    ProcessInstanceCreationValue,
    VariableDocumentValue,
)
from tests.support.memory import MemoryEngine
from tests.support.scenario_steps import complete, create, deploy, jobs_of, lifecycle, send


def _activate(engine: MemoryEngine) -> list[Record]:
    return send(
        engine,
        command(
            JobBatchIntent.ACTIVATE,
            JobBatchValue(type="work", worker="w", timeout=60_000, max_jobs_to_activate=5),
        ),
    )


def _finishes_normally(engine: MemoryEngine) -> None:
    instance = create(engine, "one-task", small=1)
    (job,) = jobs_of(engine, instance)
    complete(engine, job)
    assert lifecycle(engine, instance)[-1] == ("one-task", "ELEMENT_COMPLETED")


def test_a_job_too_large_to_activate_fails_with_an_incident_until_it_shrinks(
    engine: MemoryEngine,
) -> None:
    deploy(engine, "one-task.bpmn")
    instance = create(engine, "one-task", blob="x" * (MAX_JOB_VARIABLES_BYTES + 10))
    (job,) = jobs_of(engine, instance)
    results = _activate(engine)
    kinds = [(r.value_type.name, r.intent.name) for r in results]
    assert kinds == [("JOB", "FAILED"), ("INCIDENT", "CREATED"), ("JOB_BATCH", "ACTIVATED")]
    failed, incident, batch = results
    assert failed.key == job.key and failed.value.retries == 0
    assert incident.value.error_type is ErrorType.MESSAGE_SIZE_EXCEEDED
    assert f"over the limit of {MAX_JOB_VARIABLES_BYTES}" in incident.value.error_message
    assert batch.value.job_keys == ()
    assert _activate(engine)[-1].value.job_keys == ()  # not offered again while it is failed

    shrink = VariableDocumentValue(scope_key=instance, variables=json.dumps({"blob": "ref:42"}))
    updated = send(engine, command(VariableDocumentIntent.UPDATE, shrink))
    assert VariableDocumentIntent.UPDATED in [r.intent for r in updated]
    send(engine, command(JobIntent.UPDATE_RETRIES, JobValue(retries=1), key=job.key))
    (resolved,) = send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    assert resolved.intent is IncidentIntent.RESOLVED
    (activated,) = _activate(engine)
    assert activated.value.job_keys == (job.key,)
    assert json.loads(activated.value.jobs[0].variables) == {"blob": "ref:42"}
    complete(engine, job)
    assert lifecycle(engine, instance)[-1] == ("one-task", "ELEMENT_COMPLETED")
    _finishes_normally(engine)


def test_an_awaited_result_too_large_to_send_is_a_rejection_and_the_instance_completes(
    engine: MemoryEngine,
) -> None:
    deploy(engine, "one-task.bpmn")
    half = "y" * (MAX_JOB_VARIABLES_BYTES * 2 // 3)
    value = ProcessInstanceCreationValue(
        bpmn_process_id="one-task", variables=json.dumps({"a": half})
    )
    reply = ReplyTo(engine.REPLIES, 0, b"big")
    engine.send(0, command(ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT, value), reply)
    engine.run()
    created = [r for r in engine.events(0) if r.intent is ProcessInstanceCreationIntent.CREATED]
    instance = created[-1].key
    (job,) = jobs_of(engine, instance)
    done = complete(engine, job, b=half)  # a and b together are over the record limit
    assert done[0].intent is JobIntent.COMPLETED
    assert lifecycle(engine, instance)[-1] == ("one-task", "ELEMENT_COMPLETED")
    answers = [r for correlation, r in engine.replies() if correlation == b"big"]
    assert len(answers) == 1
    (answer,) = answers
    assert answer.record_type is RecordType.COMMAND_REJECTION
    assert answer.rejection_type is RejectionType.EXCEEDED_BATCH_RECORD_SIZE
    assert "the result is too large to send" in answer.rejection_reason
    _finishes_normally(engine)

"""Jobs and incidents on the engine core: activation, timeouts, failures, retries, resolution."""

from __future__ import annotations

import json

from partita.protocol.enums import (
    ErrorType,
    RecordType,
    RejectionType,
)
from partita.protocol.intents import (
    IncidentIntent,
    JobBatchIntent,
    JobIntent,
    VariableIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.values import (
    IncidentValue,
    JobBatchValue,
    JobValue,
)
from tests.support.memory import MemoryEngine
from tests.support.scenario_steps import complete, create, jobs_of, lifecycle, send


def test_completing_a_finished_job_is_rejected_not_found(engine: MemoryEngine) -> None:
    instance = create(engine, "one-task")
    (job,) = jobs_of(engine, instance)
    complete(engine, job)
    (rejection,) = complete(engine, job)
    assert rejection.record_type is RecordType.COMMAND_REJECTION
    assert rejection.rejection_type is RejectionType.NOT_FOUND
    assert f"job {job.key} does not exist or is no longer active" in rejection.rejection_reason


def test_a_job_out_of_retries_raises_an_incident_resolved_after_updating_retries(
    engine: MemoryEngine,
) -> None:
    instance = create(engine, "one-task")
    (job,) = jobs_of(engine, instance)
    failed = send(
        engine,
        command(JobIntent.FAIL, JobValue(retries=0, error_message="card declined"), key=job.key),
    )
    assert [r.intent for r in failed] == [JobIntent.FAILED, IncidentIntent.CREATED]
    incident = failed[1]
    assert incident.value.error_type is ErrorType.JOB_NO_RETRIES
    assert incident.value.error_message == "card declined" and incident.value.job_key == job.key

    (refused,) = send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    assert refused.rejection_type is RejectionType.INVALID_STATE
    assert "update its retries before resolving" in refused.rejection_reason

    (updated,) = send(engine, command(JobIntent.UPDATE_RETRIES, JobValue(retries=2), key=job.key))
    assert updated.intent is JobIntent.RETRIES_UPDATED and updated.value.retries == 2
    (resolved,) = send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    assert resolved.intent is IncidentIntent.RESOLVED
    complete(engine, job)
    assert lifecycle(engine, instance)[-1] == ("one-task", "ELEMENT_COMPLETED")


def test_a_failure_with_back_off_waits_then_the_job_recurs(engine: MemoryEngine) -> None:
    instance = create(engine, "one-task")
    (job,) = jobs_of(engine, instance)
    (failed,) = send(
        engine,
        command(JobIntent.FAIL, JobValue(retries=2, retry_backoff=1000), key=job.key),
    )
    assert failed.value.retries == 2 and failed.value.recurring_time == failed.timestamp + 1000
    (early,) = complete(engine, job)  # waiting out its back-off: no worker may use it
    assert (
        early.rejection_type is RejectionType.INVALID_STATE and "back-off" in early.rejection_reason
    )
    assert _activate(engine).value.jobs == ()
    engine.advance(0.5)
    assert not [r for r in engine.events(0) if r.intent is JobIntent.RECURRED_AFTER_BACKOFF]
    engine.advance(0.6)
    (recurred,) = [r for r in engine.events(0) if r.intent is JobIntent.RECURRED_AFTER_BACKOFF]
    assert recurred.key == job.key and recurred.source_record_position == -1
    (again,) = _activate(engine).value.jobs
    assert again.retries == 2
    complete(engine, job)
    assert lifecycle(engine, instance)[-1] == ("one-task", "ELEMENT_COMPLETED")


def test_an_uncaught_error_raises_an_incident_and_resolving_reactivates_the_job(
    engine: MemoryEngine,
) -> None:
    instance = create(engine, "one-task")
    (job,) = jobs_of(engine, instance)
    empty = send(engine, command(JobIntent.THROW_ERROR, JobValue(), key=job.key))
    assert empty[0].rejection_type is RejectionType.INVALID_ARGUMENT
    thrown, incident = send(
        engine,
        command(
            JobIntent.THROW_ERROR,
            JobValue(error_code="NO_STOCK", error_message="shelf empty"),
            key=job.key,
        ),
    )
    assert thrown.intent is JobIntent.ERROR_THROWN and thrown.value.error_code == "NO_STOCK"
    assert incident.intent is IncidentIntent.CREATED
    assert incident.value.error_type is ErrorType.UNHANDLED_ERROR_EVENT
    assert "'NO_STOCK'" in incident.value.error_message and incident.value.job_key == job.key
    (blocked,) = complete(engine, job)
    assert blocked.rejection_type is RejectionType.INVALID_STATE
    send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    (again,) = _activate(engine).value.jobs
    assert again.element_instance_key == job.value.element_instance_key
    complete(engine, job)
    assert lifecycle(engine, instance)[-1] == ("one-task", "ELEMENT_COMPLETED")


def test_resolving_an_element_incident_retries_the_element(engine: MemoryEngine) -> None:
    instance = create(engine, "order-process", order={"total": 1})
    (charge,) = jobs_of(engine, instance)
    complete(engine, charge, paid=False)  # refund's job type needs `region`: incident
    (incident,) = [r for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert incident.value.element_id == "refund"
    (resolved, *_) = send(
        engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key)
    )
    assert resolved.intent is IncidentIntent.RESOLVED
    # still no `region`: the retried activation raises a new incident, not a crash
    incidents = [r for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert len(incidents) == 2 and incidents[1].value.element_id == "refund"
    (missing,) = send(engine, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    assert missing.rejection_type is RejectionType.NOT_FOUND


def _activate(engine: MemoryEngine, max_jobs: int = 10, timeout: int = 60_000) -> Record:
    batch = JobBatchValue(type="work", worker="w1", timeout=timeout, max_jobs_to_activate=max_jobs)
    (activated,) = send(engine, command(JobBatchIntent.ACTIVATE, batch))
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
    send(engine, command(JobIntent.FAIL, JobValue(retries=1), key=job.key))
    (again,) = _activate(engine).value.jobs
    assert again.retries == 1


def test_updating_the_timeout_moves_an_activated_jobs_deadline(engine: MemoryEngine) -> None:
    instance = create(engine, "one-task")
    (job,) = jobs_of(engine, instance)
    (refused,) = send(
        engine, command(JobIntent.UPDATE_TIMEOUT, JobValue(timeout=5000), key=job.key)
    )
    assert refused.rejection_type is RejectionType.INVALID_STATE  # not activated yet
    assert "is not activated" in refused.rejection_reason
    _activate(engine, timeout=1000)
    (zero,) = send(engine, command(JobIntent.UPDATE_TIMEOUT, JobValue(timeout=0), key=job.key))
    assert zero.rejection_type is RejectionType.INVALID_ARGUMENT
    (updated,) = send(
        engine, command(JobIntent.UPDATE_TIMEOUT, JobValue(timeout=5000), key=job.key)
    )
    assert updated.intent is JobIntent.TIMEOUT_UPDATED
    assert updated.value.deadline == updated.timestamp + 5000 and updated.value.worker == "w1"
    engine.advance(2.0)  # past the first deadline: still activated
    assert not [r for r in engine.events(0) if r.intent is JobIntent.TIMED_OUT]
    assert _activate(engine).value.jobs == ()
    engine.advance(4.0)  # past the new one
    (timed_out,) = [r for r in engine.events(0) if r.intent is JobIntent.TIMED_OUT]
    assert timed_out.key == job.key


def test_updating_the_timeout_with_a_worker_name_hands_the_job_to_that_worker(
    engine: MemoryEngine,
) -> None:
    instance = create(engine, "one-task")
    (job,) = _activate(engine).value.jobs
    key = jobs_of(engine, instance)[0].key
    handed = JobValue(timeout=5000, worker="client-of-a-gateway")
    (updated,) = send(engine, command(JobIntent.UPDATE_TIMEOUT, handed, key=key))
    assert updated.value.worker == "client-of-a-gateway"
    (kept,) = send(engine, command(JobIntent.UPDATE_TIMEOUT, JobValue(timeout=6000), key=key))
    assert kept.value.worker == "client-of-a-gateway"  # no name: the worker stays
    assert job.worker == "w1"


def test_a_failure_sets_its_variables_on_the_task_for_the_retry(engine: MemoryEngine) -> None:
    instance = create(engine, "one-task", n=1)
    (job,) = _activate(engine).value.jobs
    key = jobs_of(engine, instance)[0].key
    failure = JobValue(retries=1, variables=json.dumps({"attempt": 1, "n": 5}))
    failed, *variables = send(engine, command(JobIntent.FAIL, failure, key=key))
    assert failed.intent is JobIntent.FAILED
    assert {(v.intent, v.value.name, v.value.scope_key) for v in variables} == {
        (VariableIntent.CREATED, "attempt", job.element_instance_key),
        (VariableIntent.CREATED, "n", job.element_instance_key),  # local: shadows the instance's
    }
    (again,) = _activate(engine).value.jobs
    assert json.loads(again.variables) == {"n": 5, "attempt": 1}

"""Job workers on the real broker: jobs pushed to `<ns>.jobs.<type>` within the per-type
bound, decorator-style tasks (variables in and out, exceptions fail with back-off, BpmnError
raises an incident), and the same tasks by polling."""

from __future__ import annotations

import json
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator

import pytest

from partita.cli import main
from partita.client import ActivatedJob, BpmnError, Client, JobWorker
from partita.config import Config
from partita.protocol.enums import ErrorType, RecordType
from partita.protocol.intents import (
    IncidentIntent,
    JobBatchIntent,
    JobIntent,
    ProcessInstanceCreationIntent,
)
from partita.protocol.records import Record
from partita.protocol.values import PUSH_WORKER, ProcessInstanceCreationValue
from tests.support.paths import BPMN_FIXTURES
from tests.support.worker_processes import BUILTIN_ENGINE, WorkerProcess, create_topics, read_log

pytestmark = pytest.mark.kafka

PUSH_LIMIT = 4


@pytest.fixture(scope="module")
def config(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Config]:
    home = tmp_path_factory.mktemp("jobworkers")
    config = Config(
        bootstrap_servers=kafka_bootstrap, namespace=f"j{uuid.uuid4().hex[:8]}", home=home
    )
    create_topics(config)
    flags = ["--bootstrap-servers", kafka_bootstrap, "--namespace", config.namespace]
    assert main(["topics", "apply", "--job-type", "work", *flags]) == 0  # push `work` jobs
    worker = WorkerProcess(
        config,
        home,
        engine=BUILTIN_ENGINE,
        env={"PARTITA_JOB_PUSH_LIMIT": str(PUSH_LIMIT), "PARTITA_JOB_PUSH_TIMEOUT_MS": "20000"},
    ).start()
    with Client(config, timeout=60) as client:
        client.deploy(BPMN_FIXTURES / "one-task.bpmn", BPMN_FIXTURES / "typed-task.bpmn")
    yield config
    assert worker.stop() == 0, worker.tail()
    verify = worker.verify_replay()
    assert verify.returncode == 0, verify.stdout + verify.stderr


def _create_awaiting(
    client: Client, count: int, process: str = "one-task", **variables: object
) -> list[bytes]:
    return [
        client.submit(
            ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT,
            ProcessInstanceCreationValue(
                bpmn_process_id=process, variables=json.dumps({"n": n, **variables})
            ),
        )
        for n in range(count)
    ]


def _in_background(worker: JobWorker, **run: object) -> threading.Thread:
    thread = threading.Thread(target=worker.run, kwargs=run, daemon=True)
    thread.start()
    return thread


def test_pushed_jobs_are_worked_by_a_decorated_task_within_the_bound(config: Config) -> None:
    worker = JobWorker(config, name="doubler", client=Client(config, timeout=60))

    @worker.task("work")
    def double(n: int, job: ActivatedJob) -> dict[str, object]:
        return {"doubled": n * 2, "element": job.element_id}

    thread = _in_background(worker, duration=120, max_jobs=30)
    with Client(config, timeout=90) as client:
        pending = _create_awaiting(client, 30)
        results = [client.result(c) for c in pending]
    thread.join(60)
    assert not thread.is_alive()
    assert all(r.record_type is RecordType.EVENT for r in results), results[:3]
    finals = sorted(json.loads(r.value.variables)["doubled"] for r in results)
    assert finals == [2 * n for n in range(30)]
    assert worker.stats.completed == 30 and worker.stats.rejected == 0

    log = read_log(config)
    pushed = 0
    for records in log.partitions.values():
        open_pushed: set[int] = set()
        high = 0
        for record in records:
            if record.intent is JobBatchIntent.ACTIVATED:
                assert record.value.worker == PUSH_WORKER  # nobody polled
                open_pushed.update(record.value.job_keys)
                pushed += len(record.value.job_keys)
            elif record.intent in (JobIntent.COMPLETED, JobIntent.FAILED, JobIntent.TIMED_OUT):
                open_pushed.discard(record.key)
            high = max(high, len(open_pushed))
        assert high <= PUSH_LIMIT  # the per-type bound held on every partition
    assert pushed == 30  # each job pushed once: none timed out


def _events(config: Config) -> list[Record]:
    return [
        r
        for records in read_log(config).partitions.values()
        for r in records
        if r.record_type is RecordType.EVENT
    ]


@pytest.mark.parametrize("mode", ["push", "poll"])
def test_exceptions_fail_with_back_off_and_bpmn_errors_raise_incidents(
    config: Config, mode: str
) -> None:
    job_type = "work" if mode == "push" else "polled"  # `polled` has no job topic
    attempts: dict[int, int] = defaultdict(int)
    worker = JobWorker(config, name=f"flaky-{mode}", mode=mode, client=Client(config, timeout=60))

    @worker.task(job_type, retry_backoff_ms=300, timeout_ms=20_000)
    def flaky(n: int, job: ActivatedJob) -> dict[str, object]:
        attempts[n] += 1
        if n == 0:
            raise BpmnError("OUT_OF_STOCK", f"nothing left for {mode}")
        if attempts[n] == 1:
            raise RuntimeError("transient outage")
        return {"attempts": attempts[n]}

    marker = uuid.uuid4().hex
    with Client(config, timeout=90) as client:
        thread = _in_background(worker, duration=60, max_jobs=5)
        pending = _create_awaiting(client, 3, "typed-task", jobType=job_type, marker=marker)
        ok = [client.result(c, timeout=60) for c in pending[1:]]
        thread.join(60)
    assert [json.loads(r.value.variables)["attempts"] for r in ok] == [2, 2]
    events = _events(config)
    mine = {r.value.process_instance_key for r in ok}
    failed = [
        r for r in events if r.intent is JobIntent.FAILED and r.value.process_instance_key in mine
    ]
    assert len(failed) == 2
    assert all(r.value.retries == 2 and r.value.retry_backoff == 300 for r in failed)
    assert all("RuntimeError: transient outage" in r.value.error_message for r in failed)
    recurred = {r.key for r in events if r.intent is JobIntent.RECURRED_AFTER_BACKOFF}
    assert {r.key for r in failed} <= recurred
    incidents = [
        r
        for r in events
        if r.intent is IncidentIntent.CREATED
        and r.value.error_type is ErrorType.UNHANDLED_ERROR_EVENT
        and f"nothing left for {mode}" in r.value.error_message
    ]
    assert len(incidents) == 1 and "'OUT_OF_STOCK'" in incidents[0].value.error_message

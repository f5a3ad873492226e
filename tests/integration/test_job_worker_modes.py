"""The job worker SDK on the real broker: at most `concurrency` tasks at once, a graceful stop
that answers every job in hand, and exactly-once mode surviving a worker killed with -9 (no job
answered twice, none lost, offsets committed with the answers)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from partita.client import Client, JobWorker
from partita.config import Config
from partita.protocol.enums import RecordType
from partita.protocol.intents import JobBatchIntent, JobIntent, ProcessInstanceCreationIntent
from partita.protocol.records import Record
from partita.protocol.values import ProcessInstanceCreationValue
from tests.support.paths import BPMN_FIXTURES, ROOT
from tests.support.worker_processes import engine_namespace, read_log, wait_until

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def config(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Config]:
    home = tmp_path_factory.mktemp("workermodes")
    with engine_namespace(kafka_bootstrap, home, "m") as config:
        with Client(config, timeout=60) as client:
            client.deploy(BPMN_FIXTURES / "typed-task.bpmn")
        yield config


def _create(client: Client, job_type: str, count: int) -> list[bytes]:
    correlations = [
        client.submit(
            ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT,
            ProcessInstanceCreationValue(
                bpmn_process_id="typed-task", variables=json.dumps({"jobType": job_type, "n": n})
            ),
        )
        for n in range(count)
    ]
    client.flush()
    return correlations


def _job_answers(config: Config, job_type: str) -> tuple[Counter[int], Counter[int], int]:
    """From the log, for the jobs of `job_type` only (the namespace is the module's): JOB
    COMPLETE commands and COMPLETED events per job key, and rejections of their answers."""
    log = read_log(config)
    commands: Counter[int] = Counter()
    completed: Counter[int] = Counter()
    rejected = 0
    ours = {
        record.key
        for records in log.partitions.values()
        for record in records
        if record.intent is JobIntent.CREATED and getattr(record.value, "type", None) == job_type
    }
    for records in log.partitions.values():
        for record in records:
            if record.key not in ours:
                continue
            if record.intent is JobIntent.COMPLETE and record.record_type is RecordType.COMMAND:
                commands[record.key] += 1
            elif record.intent is JobIntent.COMPLETED:
                completed[record.key] += 1
            elif record.record_type is RecordType.COMMAND_REJECTION and record.intent in (
                JobIntent.COMPLETE,
                JobIntent.FAIL,
            ):
                rejected += 1
    return commands, completed, rejected


def test_no_more_than_concurrency_tasks_run_at_once(config: Config) -> None:
    running = 0
    peak = 0
    lock = threading.Lock()
    worker = JobWorker(config, "limited", concurrency=3, client=Client(config, timeout=60))

    @worker.task("limited")
    def slow(n: int) -> dict[str, object]:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.05)
        with lock:
            running -= 1
        return {"m": n + 1}

    thread = threading.Thread(target=worker.run, kwargs={"max_jobs": 24}, daemon=True)
    thread.start()
    with Client(config, timeout=60) as client:
        correlations = _create(client, "limited", 24)
        results = [client.result(c, 60) for c in correlations]
    thread.join(60)
    assert not thread.is_alive()
    assert all(r.record_type is RecordType.EVENT for r in results)
    assert sorted(json.loads(r.value.variables)["m"] for r in results) == list(range(1, 25))  # type: ignore[union-attr]
    assert peak == 3, f"expected 3 tasks at once at the peak, saw {peak}"


def _activations(config: Config, job_type: str) -> int:
    """ACTIVATE commands for `job_type` on the log, all partitions."""
    return sum(
        1
        for records in read_log(config).partitions.values()
        for record in records
        if record.intent is JobBatchIntent.ACTIVATE
        and record.record_type is RecordType.COMMAND
        and getattr(record.value, "type", None) == job_type
    )


def test_an_idle_poll_worker_asks_once_per_poll_interval(config: Config) -> None:
    """With no job to take, a polling worker asks each partition once per poll interval; it
    used to ask again the moment an empty answer came back (29 rounds in these 2 s)."""
    worker = JobWorker(
        config, "idle", mode="poll", poll_interval_ms=200, client=Client(config, timeout=60)
    )
    worker.task("nothing-to-do")(lambda: None)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    time.sleep(2.0)
    worker.stop()
    thread.join(30)
    assert not thread.is_alive()
    rounds = _activations(config, "nothing-to-do") / config.partitions
    assert 2 <= rounds <= 12, f"{rounds} polling rounds in 2 s at one per 200 ms (at most 11)"


def test_a_poll_worker_takes_new_jobs_after_an_idle_round(config: Config) -> None:
    worker = JobWorker(config, "poller", mode="poll", client=Client(config, timeout=60))

    @worker.task("polled")
    def add(n: int) -> dict[str, object]:
        return {"m": n + 1}

    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        time.sleep(0.5)  # a few empty rounds first
        with Client(config, timeout=60) as client:
            correlations = _create(client, "polled", 10)
            results = [client.result(c, 60) for c in correlations]
    finally:
        worker.stop()
        thread.join(30)
    assert sorted(json.loads(r.value.variables)["m"] for r in results) == list(range(1, 11))  # type: ignore[union-attr]


def test_stop_finishes_and_answers_the_jobs_in_hand(config: Config) -> None:
    started: list[int] = []
    worker = JobWorker(config, "graceful", concurrency=4, client=Client(config, timeout=60))

    @worker.task("graceful")
    def slow(job: object) -> dict[str, object]:
        started.append(job.key)  # type: ignore[attr-defined]
        time.sleep(0.5)
        return {"finished": True}

    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    with Client(config, timeout=60) as client:
        _create(client, "graceful", 12)
        wait_until(lambda: len(started) >= 4, 60, "four jobs in hand")
        worker.stop()
        thread.join(30)
        assert not thread.is_alive()
    in_hand = set(started)
    assert worker.stats.completed == len(in_hand) and worker.stats.rejected == 0
    _, completed, _ = _job_answers(config, "graceful")
    assert in_hand <= set(completed), "a job taken before stop() was left unanswered"


def _worker_process(config: Config, name: str, job_type: str) -> subprocess.Popen[str]:
    args = [config.bootstrap, config.namespace, name, job_type, "--exactly-once"]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.job_worker_process", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    seen = []
    try:
        for line in process.stdout:  # librdkafka may log a warning first
            if line.strip() == "ready":
                return process
            seen.append(line)
    except BaseException:  # a test timeout while waiting: leave no process behind
        process.kill()
        raise
    raise AssertionError(f"the job worker exited before it was ready:\n{''.join(seen)}")


def _committed_equals_end(config: Config, job_type: str) -> bool:
    topic = config.job_topic(job_type)
    consumer = Consumer(
        {
            "bootstrap.servers": config.bootstrap,
            "group.id": f"{config.namespace}.workers.{job_type}",
            "isolation.level": "read_committed",
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        committed = consumer.committed([TopicPartition(topic, p) for p in partitions], 10)
        for tp in committed:
            _, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
            # the end may hold one transaction marker past the last job record
            if not high - 1 <= tp.offset <= high:
                return False
        return True
    finally:
        consumer.close()


def test_exactly_once_worker_killed_mid_run_answers_every_job_once(config: Config) -> None:
    job_type = "eos"
    first = _worker_process(config, "eos-1", job_type)
    second: subprocess.Popen[str] | None = None
    try:
        with Client(config, timeout=90) as client:
            correlations = _create(client, job_type, 80)
            answered: dict[bytes, Record] = {}
            while len(answered) < 15:  # some jobs are done: kill the worker in the middle
                answered.update(client.results(0.2))
            first.kill()
            first.wait(10)
            second = _worker_process(config, "eos-1", job_type)  # same name: same txn id
            results = [answered.get(c) or client.result(c, 90) for c in correlations]
        assert all(r.record_type is RecordType.EVENT for r in results)
        second.terminate()
        assert second.wait(30) == 0
    finally:
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.kill()
    commands, completed, rejected = _job_answers(config, job_type)
    eos_jobs = {k for k in completed if k in commands}
    # the 80 instances' jobs, each completed exactly once though the first worker was killed
    assert len(completed) == 80 and set(completed.values()) == {1}, completed
    duplicated = [k for k, n in commands.items() if n > 1]
    assert not duplicated, f"jobs answered twice on the log: {duplicated}"
    assert rejected == 0
    assert len(eos_jobs) == sum(1 for n in commands.values() if n == 1)
    assert _committed_equals_end(config, job_type)

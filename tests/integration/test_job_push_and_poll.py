"""Push and poll for one job type on the real broker, as in Zeebe: the engine pushes a type's
jobs to `<ns>.jobs.<type>` only while the type's workers (`<ns>.workers.<type>`) are there, so a
polling worker gets every job of a type whose job topic exists but that no pushed worker takes,
both kinds of worker share one type, and when the pushed workers leave the pollers get the rest.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from partita.client import Client, JobWorker
from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, job_topic_spec
from partita.protocol.intents import JobBatchIntent, JobIntent
from tests.support.paths import BPMN_FIXTURES
from tests.support.worker_processes import engine_namespace, read_log, wait_until

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def config(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Config]:
    home = tmp_path_factory.mktemp("pushpoll")
    with engine_namespace(kafka_bootstrap, home, "pp") as config:
        with Client(config, timeout=60) as client:
            client.deploy(BPMN_FIXTURES / "typed-task.bpmn")
        yield config


def _topic(config: Config, job_type: str) -> None:
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    apply_topics(admin, [job_topic_spec(config, job_type)])


def _create(client: Client, job_type: str, count: int) -> None:
    for n in range(count):
        client.create_instance("typed-task", {"jobType": job_type, "n": n})


def _activations(config: Config, job_type: str) -> Counter[str]:
    """How many jobs of `job_type` each worker name was given, from the log."""
    given: Counter[str] = Counter()
    for records in read_log(config).partitions.values():
        for r in records:
            if r.intent is JobBatchIntent.ACTIVATED and r.value.type == job_type:  # type: ignore[union-attr]
                given[r.value.worker] += len(r.value.jobs)  # type: ignore[union-attr]
    return given


def _completed(config: Config, job_type: str) -> Counter[int]:
    done: Counter[int] = Counter()
    for records in read_log(config).partitions.values():
        for r in records:
            if r.intent is JobIntent.COMPLETED and r.value.type == job_type:  # type: ignore[union-attr]
                done[r.key] += 1
    return done


class Poller(threading.Thread):
    """Polls `job_type` (ActivateJobs on every partition) and completes what it gets."""

    def __init__(self, config: Config, job_type: str) -> None:
        super().__init__(daemon=True)
        self.config, self.job_type = config, job_type
        self.stop = threading.Event()
        self.done = 0

    def run(self) -> None:
        with Client(self.config, timeout=60) as client:
            while not self.stop.is_set():
                jobs = client.activate_jobs(self.job_type, worker="poller", max_jobs=8)
                for key, _job in jobs:
                    client.complete_job(key, {"by": "poller"})
                    self.done += 1
                if not jobs:
                    time.sleep(0.2)


def _pushed_worker(config: Config, job_type: str) -> tuple[JobWorker, threading.Thread]:
    worker = JobWorker(config, "pusher")

    @worker.task(job_type)
    def work() -> dict[str, str]:
        return {"by": "pusher"}

    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    assert worker.ready.wait(60)
    return worker, thread


def test_a_poller_gets_the_jobs_of_a_type_whose_topic_no_worker_reads(config: Config) -> None:
    _topic(config, "unread")  # the topic exists, nobody consumes it
    poller = Poller(config, "unread")
    poller.start()
    with Client(config, timeout=60) as client:
        _create(client, "unread", 5)
    try:
        wait_until(lambda: poller.done == 5, 60, "the poller to complete all five jobs")
    finally:
        poller.stop.set()
        poller.join(30)
    assert _activations(config, "unread") == Counter({"poller": 5})


def test_pushed_and_polled_workers_share_a_type_and_pollers_take_over(config: Config) -> None:
    worker, thread = _pushed_worker(config, "shared")
    poller = Poller(config, "shared")
    poller.start()
    try:
        with Client(config, timeout=60) as client:
            time.sleep(2.5)  # the engine sees the pushed worker's group (it looks every second)
            _create(client, "shared", 20)
            wait_until(
                lambda: worker.stats.completed + poller.done == 20, 60, "all 20 jobs answered"
            )
            assert worker.stats.completed > 0  # pushed jobs reached the pushed worker

            worker.stop()
            thread.join(30)
            time.sleep(6)  # the engine notices the group is empty (it looks every 5 s)
            before = poller.done
            _create(client, "shared", 5)
            wait_until(lambda: poller.done == before + 5, 60, "the poller to take the rest")
    finally:
        poller.stop.set()
        poller.join(30)
    completed = _completed(config, "shared")
    assert len(completed) == 25 and set(completed.values()) == {1}  # each job once
    given = _activations(config, "shared")
    assert given["partita.push"] == worker.stats.completed
    assert given["poller"] == poller.done

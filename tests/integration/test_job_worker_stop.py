"""A push job worker that stops gracefully leaves none of the jobs it answered to the next
worker of its group, whatever the answer (COMPLETE, FAIL, THROW_ERROR), at least once and
exactly once: the job topic offsets of every answered job are committed before `run` returns.
Counted by task-function calls across both workers, on the real broker."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator

import pytest

from partita.client import BpmnError, Client, JobWorker
from partita.config import Config
from partita.protocol.intents import ProcessInstanceCreationIntent
from partita.protocol.values import ProcessInstanceCreationValue
from tests.support.paths import BPMN_FIXTURES
from tests.support.worker_processes import engine_namespace, wait_until

pytestmark = pytest.mark.kafka

FIRST_JOBS = 12
LATER_JOBS = 3
NEVER_MS = 3_600_000
"""Back-off of failed jobs: a failed job is not pushed again while the test runs."""


@pytest.fixture(scope="module")
def config(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Config]:
    home = tmp_path_factory.mktemp("workerstop")
    with engine_namespace(kafka_bootstrap, home, "w") as config:
        with Client(config, timeout=60) as client:
            client.deploy(BPMN_FIXTURES / "typed-task.bpmn")
        yield config


def _create(config: Config, job_type: str, numbers: range) -> None:
    with Client(config, timeout=60) as client:
        for n in numbers:
            client.submit(
                ProcessInstanceCreationIntent.CREATE,
                ProcessInstanceCreationValue(
                    bpmn_process_id="typed-task",
                    variables=json.dumps({"jobType": job_type, "n": n}),
                ),
            )
        client.flush()


class _Worker:
    """A JobWorker in a thread whose task completes, fails or throws by `n % 3`, counting its
    calls per job key in `calls` (shared by the workers of one test)."""

    def __init__(
        self, config: Config, name: str, job_type: str, calls: Counter[int], exactly_once: bool
    ) -> None:
        self.worker = JobWorker(
            config,
            name,
            concurrency=4,
            exactly_once=exactly_once,
            client=Client(config, timeout=60),
        )
        self.numbers: dict[int, int] = {}
        lock = threading.Lock()

        @self.worker.task(job_type, retry_backoff_ms=NEVER_MS)
        def work(n: int, job: object) -> dict[str, object]:
            key: int = job.key  # type: ignore[attr-defined]
            with lock:
                calls[key] += 1
                self.numbers[key] = n
            if n % 3 == 1:
                raise RuntimeError(f"job {n} fails")
            if n % 3 == 2:
                raise BpmnError("E", f"job {n} throws")
            return {"m": n}

        self.thread = threading.Thread(target=self.worker.run, daemon=True)

    def start(self) -> _Worker:
        self.thread.start()
        wait_until(self.worker.ready.is_set, 60, "the worker's partitions")
        return self

    def stop(self) -> None:
        self.worker.stop()
        self.thread.join(60)
        self.worker.client.close()
        assert not self.thread.is_alive(), "the worker did not stop"


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at-least-once", "exactly-once"])
def test_a_stopped_worker_leaves_no_answered_job_to_the_next(
    config: Config, exactly_once: bool
) -> None:
    job_type = f"stop-{'eos' if exactly_once else 'alo'}"
    calls: Counter[int] = Counter()
    first = _Worker(config, "first", job_type, calls, exactly_once).start()
    _create(config, job_type, range(FIRST_JOBS))
    wait_until(lambda: first.worker.stats.handled >= FIRST_JOBS, 60, "the first jobs answered")
    first.stop()
    stats = first.worker.stats
    assert (stats.completed, stats.failed, stats.errors_thrown) == (4, 4, 4), stats
    assert stats.rejected == 0, stats.rejections

    second = _Worker(config, "second", job_type, calls, exactly_once).start()
    try:
        _create(config, job_type, range(100, 100 + LATER_JOBS))  # the second does work
        wait_until(
            lambda: sum(1 for n in second.numbers.values() if n >= 100) >= LATER_JOBS,
            60,
            "the second worker to take the later jobs",
        )
    finally:
        second.stop()
    again = {key: n for key, n in second.numbers.items() if n < 100}
    assert not again, f"jobs answered by the first worker were worked again: {again}"
    assert not [key for key, count in calls.items() if count > 1]
    assert second.worker.stats.rejected == 0, second.worker.stats.rejections

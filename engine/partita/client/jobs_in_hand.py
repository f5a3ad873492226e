"""The jobs a job worker (`partita.client.worker`) has in hand: task functions running in a pool
of threads, then their answers sent to the engine until it replies.

At most `concurrency` task functions run at once. An answer is sent as soon as its task
finishes, and at most `max_in_flight` answers wait for the engine's reply at a time. A reply
settles its job: pushed at least once, the job's record then counts as consumed
(`partita.client.offsets`); a rejection is counted and logged, never raised (the job is settled).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError

from partita.client.client import Client
from partita.client.offsets import ConsumedOffsets, Taken
from partita.client.tasks import ActivatedJob, Outcome, Task, run_task
from partita.protocol.enums import RecordType
from partita.protocol.intents import JobBatchIntent
from partita.protocol.values import JobBatchValue, JobValue

_LOG = logging.getLogger("partita.jobworker")

Job = tuple[int, JobValue, Taken | None]
"""A job in hand: its key, its value and, pushed at least once, its record."""


@dataclass(slots=True)
class WorkerStats:
    completed: int = 0
    failed: int = 0
    errors_thrown: int = 0
    skipped_expired: int = 0
    rejected: int = 0
    transactions: int = 0
    aborted: int = 0
    rejections: list[str] = field(default_factory=list)

    @property
    def handled(self) -> int:
        return self.completed + self.failed + self.errors_thrown

    def count(self, kind: str) -> None:
        """One more job of outcome `kind` ("completed", "failed" or "errors_thrown")."""
        setattr(self, kind, getattr(self, kind) + 1)


class JobsInHand:
    """Tasks running and answers awaiting their reply, for one job worker."""

    def __init__(
        self, client: Client, tasks: dict[str, Task], concurrency: int, thread_prefix: str
    ) -> None:
        self.client = client
        self.tasks = tasks
        """The worker's registered tasks by job type (shared: registered later)."""
        self.concurrency = concurrency
        self.stats = WorkerStats()
        self.offsets = ConsumedOffsets()
        self.max_in_flight = 1000
        self.pool = ThreadPoolExecutor(concurrency, thread_name_prefix=thread_prefix)
        self._running: dict[Future[Outcome], tuple[int, Taken | None]] = {}
        """Tasks running in the pool -> their job key and, pushed at least once, its record."""
        self._in_flight: dict[bytes, tuple[int, Taken | None]] = {}
        """Answers sent and not yet answered by the engine: correlation id -> job key and,
        pushed at least once, its record (settled in `offsets` when the reply arrives)."""

    @property
    def running(self) -> int:
        return len(self._running)

    @property
    def free(self) -> int:
        """How many more task functions may start now."""
        return self.concurrency - len(self._running)

    def pushed(self, messages: list[Any], consumer: Consumer | None = None) -> list[Job]:
        """The jobs of pushed records, those past their deadline skipped (the engine pushes
        them again); with `consumer`, each job carries its record, whose offset is tracked
        until every job of it is settled."""
        jobs: list[Job] = []
        now_ms = int(time.time() * 1000)
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    _LOG.warning("job topic: %s", error.str())
                continue
            record = self.client.codec.decode(message.value() or b"")
            value = record.value
            found: list[tuple[int, JobValue]] = []
            if record.intent is JobBatchIntent.ACTIVATED:
                assert isinstance(value, JobBatchValue)
                for key, job in zip(value.job_keys, value.jobs, strict=True):
                    if 0 <= job.deadline < now_ms:
                        self.stats.skipped_expired += 1  # timed out: the engine pushes it again
                    else:
                        found.append((key, job))
            taken = self.offsets.taken(consumer, message, len(found)) if consumer else None
            jobs += [(key, job, taken) for key, job in found]
        return jobs

    def start(self, jobs: list[Job]) -> None:
        """Run the task of each job in the pool; `finish` sends their answers."""
        for key, value, taken in jobs:
            task = self.tasks[value.type]
            future = self.pool.submit(run_task, task, ActivatedJob.of(key, value))
            self._running[future] = (key, taken)

    def work(self, jobs: list[Job]) -> list[tuple[int, Outcome]]:
        """Run the task of each job in the pool and wait for all of them: (key, outcome),
        nothing sent (exactly once sends the answers in its transaction)."""
        futures = [
            (key, self.pool.submit(run_task, self.tasks[v.type], ActivatedJob.of(key, v)))
            for key, v, _ in jobs
        ]
        return [(key, future.result()) for key, future in futures]

    def finish(
        self, timeout: float | None, only: Callable[[Taken | None], bool] | None = None
    ) -> None:
        """Send the answers of the tasks that finished within `timeout` (None: all of them,
        or all of those whose record `only` accepts)."""
        waited = [f for f, (_, taken) in self._running.items() if only is None or only(taken)]
        if not waited:
            return
        finished, _ = wait(
            waited, timeout, return_when="ALL_COMPLETED" if timeout is None else FIRST_COMPLETED
        )
        for future in finished:
            key, taken = self._running.pop(future)
            kind, request = future.result()
            self.stats.count(kind)
            while len(self._in_flight) >= self.max_in_flight:
                self.collect(0.01)
            self._in_flight[self.client.connection.produce(request)] = (key, taken)
        self.client.producer.poll(0)

    def sent(self, answers: dict[bytes, int]) -> None:
        """Answers sent elsewhere (in a transaction): correlation id -> job key; their replies
        are collected like the others'."""
        self._in_flight.update({correlation: (key, None) for correlation, key in answers.items()})

    def collect(self, timeout: float) -> None:
        """Take the engine's replies that arrive within `timeout`, settling their jobs."""
        if not self._in_flight:
            if timeout:
                time.sleep(timeout)
            return
        for correlation, reply in self.client.results(timeout).items():
            key, taken = self._in_flight.pop(correlation, (-1, None))
            if taken is not None:
                self.offsets.settled(taken)
            if reply.record_type is RecordType.COMMAND_REJECTION:
                self.stats.rejected += 1
                reason = f"job {key}: {reply.intent.name} rejected: {reply.rejection_reason}"
                self.stats.rejections.append(reason)
                _LOG.warning("%s", reason)

    def drain(self, only: Callable[[Taken | None], bool] | None = None) -> None:
        """Wait for the replies to answers already sent (those whose record `only` accepts),
        up to the client's timeout; the jobs still unanswered then are logged."""

        def waiting() -> int:
            return sum(1 for _, taken in self._in_flight.values() if only is None or only(taken))

        self.client.flush()
        deadline = time.monotonic() + self.client.timeout
        while waiting() and time.monotonic() < deadline:
            self.collect(0.05)
        if waiting():
            _LOG.warning(
                "no reply for %d job answers within %.0f s: their jobs may be worked again",
                waiting(),
                self.client.timeout,
            )

"""Job workers in the decorator style:

    worker = JobWorker(Config.from_env(), name="billing", concurrency=8)

    @worker.task("charge-card")
    def charge(amount: float, job: ActivatedJob) -> dict[str, object]:
        return {"charged": amount}

    worker.run()

A task function receives the job's variables as keyword arguments and returns the variables to
complete the job with (a dict, or None); `BpmnError(code)` throws a BPMN error; any other
exception fails the job with one retry less and the task's back-off (partita.client.tasks).

Jobs arrive by push (default): the worker consumes `<ns>.jobs.<type>` in the consumer group
`<ns>.workers.<type>` (creating the topic if it is missing, which turns push on for the type)
and skips jobs whose deadline has passed (the engine pushes them again). With `mode="poll"` it
sends JOB_BATCH ACTIVATE to every partition instead.

At most `concurrency` task functions run at once, in threads. Answers are sent as tasks finish
and their replies collected in the background of the loop (partita.client.jobs_in_hand).

`exactly_once=True` (push only): each batch of consumed jobs is worked, then its answers and the
consumed offsets are committed in one Kafka transaction (partita.client.exactly_once). Give every
worker process its own name that stays the same across restarts.

At least once (push, default): a job topic offset is committed only past records whose every
job was answered and whose answer the engine replied to (a rejection counts: the job is settled),
so a worker killed mid-job leaves its jobs to the partition's next owner. Offsets are
auto-committed every few seconds, and committed synchronously when `run` returns and when a
rebalance takes partitions away (after the tasks in hand on them are answered).

`stop()` (or SIGTERM/SIGINT with `install_signal_handlers`) is graceful: no new jobs are taken,
the tasks in hand finish, their answers are sent and replied to, and the offsets of every job
answered are committed (in its transaction, with exactly_once) before `run` returns, so the
next worker of the group never gets them. Only an answer the engine did not confirm within the
client's timeout leaves its job to the next worker (logged).
"""

from __future__ import annotations

import dataclasses
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Literal

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from partita.client.client import Client
from partita.client.exactly_once import ExactlyOnceBatches
from partita.client.jobs_in_hand import JobsInHand, WorkerStats
from partita.client.offsets import Taken
from partita.client.tasks import ActivatedJob, BpmnError, Task, TaskFunction
from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.log.admin import admin_client
from partita.log.clients import close_consumer, consume_available, new_consumer
from partita.log.topics import apply_topics, job_topic_spec

__all__ = ["ActivatedJob", "BpmnError", "JobWorker", "WorkerStats"]

_LOG = logging.getLogger("partita.jobworker")
_IDLE_WAIT_S = 0.005
"""The longest the push loop blocks at once: on its job consumer while no task runs, else on
the running tasks (a job that arrives meanwhile waits at most this long)."""
SESSION_TIMEOUT_MS = 10_000
POLL_INTERVAL_MS = 100
"""Poll mode: how long a worker whose last round found no job waits before the next (as Zeebe's
Java client's pollInterval). Each round is one ACTIVATE command per partition on the log."""
_FULL_WAIT_S = 0.05
"""Poll mode, every task slot taken: the longest wait at once for one of them to finish."""


class JobWorker:
    def __init__(
        self,
        config: Config,
        name: str | None = None,
        *,
        mode: Literal["push", "poll"] = "push",
        concurrency: int = 8,
        exactly_once: bool = False,
        client: Client | None = None,
        poll_interval_ms: int = POLL_INTERVAL_MS,
    ) -> None:
        if concurrency < 1:
            raise PartitaError(f"concurrency must be at least 1, not {concurrency}")
        if poll_interval_ms < 0:
            raise PartitaError(f"poll_interval_ms must not be negative, not {poll_interval_ms}")
        if exactly_once and mode != "push":
            raise PartitaError("exactly_once needs mode='push': polled jobs have no offsets")
        self.config = config
        self.name = name or socket.gethostname()
        self.mode = mode
        self.concurrency = concurrency
        self.exactly_once = exactly_once
        self.poll_interval_s = poll_interval_ms / 1000
        self.client = client or Client(config, role=KafkaRole.JOB_WORKER)
        self._owns_client = client is None
        self.tasks: dict[str, Task] = {}
        self._hand = JobsInHand(self.client, self.tasks, concurrency, f"task-{self.name}")
        self._batches = ExactlyOnceBatches(self._hand, config.namespace, self.name)
        self.stats: WorkerStats = self._hand.stats
        self.stopping = threading.Event()
        self.ready = threading.Event()
        """Set once jobs can arrive: every job topic has partitions assigned (push), or at
        once (poll)."""

    @property
    def max_in_flight(self) -> int:
        """At most this many answers wait for the engine's reply at a time."""
        return self._hand.max_in_flight

    @max_in_flight.setter
    def max_in_flight(self, value: int) -> None:
        self._hand.max_in_flight = value

    def task(
        self,
        job_type: str,
        *,
        timeout_ms: int = 300_000,
        max_jobs: int = 32,
        retry_backoff_ms: int = 1000,
    ) -> Callable[[TaskFunction], TaskFunction]:
        """Register the decorated function as the handler of jobs of `job_type`. In push mode
        the engine sets the timeout (PARTITA_JOB_PUSH_TIMEOUT_MS); `timeout_ms` and `max_jobs`
        apply to polling."""

        def register(function: TaskFunction) -> TaskFunction:
            if job_type in self.tasks:
                raise PartitaError(f"job type {job_type!r} already has a task")
            self.tasks[job_type] = Task(job_type, function, timeout_ms, max_jobs, retry_backoff_ms)
            return function

        return register

    # -- running --------------------------------------------------------------------------------

    def stop(self) -> None:
        """Take no new jobs, finish the jobs in hand, then return from `run`."""
        self.stopping.set()

    def install_signal_handlers(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: self.stop())

    def run(self, *, duration: float | None = None, max_jobs: int | None = None) -> WorkerStats:
        """Work until `stop()` (or a signal, with `install_signal_handlers`), for `duration`
        seconds, or until `max_jobs` jobs are handled."""
        if not self.tasks:
            raise PartitaError("no tasks registered: decorate a function with @worker.task(TYPE)")
        deadline = time.monotonic() + duration if duration else None

        def done() -> bool:
            return (
                self.stopping.is_set()
                or (deadline is not None and time.monotonic() > deadline)
                or (max_jobs is not None and self.stats.handled >= max_jobs)
            )

        try:
            if self.mode == "push":
                self._run_push(done)
            else:
                self._run_poll(done)
        finally:
            self._hand.pool.shutdown(wait=True)
            if self._owns_client:
                self.client.close()
        return self.stats

    def _check_job_topics(self) -> None:
        """The job topics must exist (`partita topics apply --job-type T` makes them, so a
        worker needs no Create right); on a cluster that lets this worker create topics, the
        missing ones are created here for convenience."""
        topics = self.client.connection.consumer.list_topics(timeout=self.client.timeout).topics
        missing = [t for t in self.tasks if self.config.job_topic(t) not in topics]
        if not missing:
            return
        # job topics have the log's partition count, whatever PARTITA_PARTITIONS says here
        actual = dataclasses.replace(self.config, partitions=self.client.partition_count)
        try:
            apply_topics(
                admin_client(self.client.connection.access),
                [job_topic_spec(actual, t) for t in missing],
            )
        except PartitaError as error:
            flags = " ".join(f"--job-type {t}" for t in missing)
            raise PartitaError(
                f"job topics {', '.join(self.config.job_topic(t) for t in missing)}"
                f" do not exist and this worker cannot create them ({error}); an operator"
                f" creates them with `partita topics apply {flags}`"
            ) from None

    def _run_push(self, done: Callable[[], bool]) -> None:
        self._check_job_topics()
        consumers = [self._consumer(job_type) for job_type in self.tasks]
        producers = [self._batches.producer(t) for t in self.tasks] if self.exactly_once else []
        try:
            while not done():
                if not self.ready.is_set() and all(c.assignment() for c in consumers):
                    self.ready.set()
                received = 0
                for index, consumer in enumerate(consumers):
                    # idle, the loop waits on its (first) job consumer, which wakes it the
                    # moment a job arrives; while tasks run, it waits on them (`finish`)
                    wait = _IDLE_WAIT_S if index == 0 and not self._hand.running else 0.0
                    if self.exactly_once:
                        received += self._batches.transact(consumer, producers[index], wait)
                    else:
                        free = self._hand.free
                        if free > 0:
                            messages = consume_available(consumer, free, wait)
                            jobs = self._hand.pushed(messages, consumer)
                            received += len(jobs)
                            self._hand.start(jobs)
                self._hand.finish(0.0 if received or not self._hand.running else _IDLE_WAIT_S)
                self._hand.collect(0.0)  # the replies only settle offsets: never waited for
            self._hand.finish(None)
            self._hand.drain()
        finally:
            try:
                if not self.exactly_once:
                    for consumer in consumers:
                        self._commit(consumer)
            finally:
                for consumer in consumers:
                    close_consumer(consumer)
            for producer in producers:
                producer.flush(10)

    def _consumer(self, job_type: str) -> Consumer:
        consumer = new_consumer(
            self.client.connection.access,
            {
                "group.id": f"{self.config.namespace}.workers.{job_type}",
                "client.id": f"{self.name}.{job_type}",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": not self.exactly_once,
                # at least once: an offset is stored for the auto-commit only once every job
                # up to it is answered (ConsumedOffsets)
                "enable.auto.offset.store": False,
                "fetch.wait.max.ms": 10,
                "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                # exactly-once workers have unique, stable names: a restarted one takes its
                # partitions back at once instead of after the session timeout
                **({"group.instance.id": self.name} if self.exactly_once else {}),
            },
        )
        topic = self.config.job_topic(job_type)
        if self.exactly_once:  # nothing in hand between transactions
            consumer.subscribe([topic])
        else:
            consumer.subscribe([topic], on_revoke=self._revoked, on_lost=self._lost)
        return consumer

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """A rebalance takes `partitions` away (or `close` gives them up): answer the jobs in
        hand from them and commit their offsets first, so their next owner starts past them."""
        revoked = {(tp.topic, tp.partition) for tp in partitions}

        def on_revoked(taken: Taken | None) -> bool:
            return taken is not None and taken.consumer is consumer and taken.where in revoked

        self._hand.finish(None, only=on_revoked)
        self._hand.drain(only=on_revoked)
        self._commit(consumer, revoked)
        self._hand.offsets.forget(consumer, revoked)

    def _lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions lost (the session expired): another worker owns them already, so
        nothing may be committed for them; answers in hand still go to the engine."""
        self._hand.offsets.forget(consumer, {(tp.topic, tp.partition) for tp in partitions})

    def _commit(self, consumer: Consumer, only: set[tuple[str, int]] | None = None) -> None:
        """Commit, synchronously, the offsets of the answered jobs of `consumer` (on `only`
        partitions). Retried while the error is retriable, for up to the client's timeout;
        a commit that fails is logged naming the offsets, never raised: the jobs past the
        committed offset are then worked again by the next owner (at least once)."""
        offsets = self._hand.offsets.committable(consumer, only)
        if not offsets:
            return
        deadline = time.monotonic() + self.client.timeout
        while True:
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
                return
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() == KafkaError._NO_OFFSET:
                    return
                if not error.retriable() or time.monotonic() > deadline:
                    where = ", ".join(f"{tp.topic}/{tp.partition}@{tp.offset}" for tp in offsets)
                    _LOG.warning(
                        "job worker %r could not commit %s (%s): those jobs may be worked again",
                        self.name,
                        where,
                        error.str(),
                    )
                    return
                time.sleep(0.1)

    def _run_poll(self, done: Callable[[], bool]) -> None:
        self.ready.set()
        while not done():
            asked = found = 0
            for task in self.tasks.values():
                free = min(task.max_jobs, self._hand.free)
                if free <= 0:
                    break
                asked += 1
                jobs = self.client.activate_jobs(task.job_type, self.name, free, task.timeout_ms)
                found += len(jobs)
                self._hand.start([(key, job, None) for key, job in jobs])
            if found or not asked:  # work, or no free slot: poll again once a task finishes
                self._hand.finish(0.0 if found else _FULL_WAIT_S)
                self._hand.collect(0.0)
            else:
                self._idle(done)
        self._hand.finish(None)
        self._hand.drain()

    def _idle(self, done: Callable[[], bool]) -> None:
        """Poll mode after a round that found no job: the poll interval, answering the tasks
        that finish and taking the replies that arrive meanwhile."""
        deadline = time.monotonic() + self.poll_interval_s
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if self._hand.running:
                self._hand.finish(left)
                self._hand.collect(0.0)
            else:
                self._hand.collect(min(left, _FULL_WAIT_S))

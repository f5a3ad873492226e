"""Job workers in the decorator style:

    worker = JobWorker(Config.from_env(), name="billing", concurrency=8)

    @worker.task("charge-card")
    def charge(amount: float, job: ActivatedJob) -> dict[str, object]:
        return {"charged": amount}

    worker.run()

A task function receives the job's variables as keyword arguments and returns the variables to
complete the job with (a dict, or None); `BpmnError(code)` throws a BPMN error; any other
exception fails the job with one retry less and the task's back-off (engine.client.tasks).

Jobs arrive by push (default): the worker consumes `<ns>.jobs.<type>` in the consumer group
`<ns>.workers.<type>` (creating the topic if it is missing, which turns push on for the type)
and skips jobs whose deadline has passed (the engine pushes them again). With `mode="poll"` it
sends JOB_BATCH ACTIVATE to every partition instead.

At most `concurrency` task functions run at once, in threads. Answers are sent as tasks finish
and their replies collected in the background of the loop.

`exactly_once=True` (push only): each batch of consumed jobs is worked, then its answers and the
consumed offsets are committed in one Kafka transaction, so a job's answer is on the log if and
only if its push record counts as consumed. A worker killed mid-batch leaves nothing behind, and
whoever gets the partition next works those jobs again. The transaction opens only after the
tasks have run, so it lasts milliseconds: an open transaction holds back what read_committed
readers (the engine) see on the log partitions it wrote to. Its transactional id is
`<ns>.workers.<type>.<name>`: give every worker process its own name that stays the same across
restarts, so a restarted worker aborts what its crashed predecessor left open at once.

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

import contextlib
import dataclasses
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Literal

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from engine.client.client import Client
from engine.client.connection import producer_config
from engine.client.offsets import ConsumedOffsets, Taken
from engine.client.tasks import ActivatedJob, BpmnError, Outcome, Task, TaskFunction, run_task
from engine.config import Config, KafkaRole
from engine.errors import PartitaError
from engine.log.admin import admin_client
from engine.log.clients import consume_available, new_consumer, new_producer
from engine.log.topics import apply_topics, job_topic_spec
from engine.protocol.enums import RecordType
from engine.protocol.intents import JobBatchIntent
from engine.protocol.values import JobBatchValue, JobValue

__all__ = ["ActivatedJob", "BpmnError", "JobWorker", "WorkerStats"]

_LOG = logging.getLogger("partita.jobworker")
TRANSACTION_TIMEOUT_MS = 10_000
SESSION_TIMEOUT_MS = 10_000


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
    ) -> None:
        if concurrency < 1:
            raise PartitaError(f"concurrency must be at least 1, not {concurrency}")
        if exactly_once and mode != "push":
            raise PartitaError("exactly_once needs mode='push': polled jobs have no offsets")
        self.config = config
        self.name = name or socket.gethostname()
        self.mode = mode
        self.concurrency = concurrency
        self.exactly_once = exactly_once
        self.client = client or Client(config, role=KafkaRole.JOB_WORKER)
        self._owns_client = client is None
        self.tasks: dict[str, Task] = {}
        self.stats = WorkerStats()
        self.stopping = threading.Event()
        self.ready = threading.Event()
        """Set once jobs can arrive: every job topic has partitions assigned (push), or at
        once (poll)."""
        self.max_in_flight = 1000
        self._in_flight: dict[bytes, tuple[int, Taken | None]] = {}
        """Answers sent and not yet answered by the engine: correlation id -> job key and,
        pushed at least once, its record (settled in `_offsets` when the reply arrives)."""
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix=f"task-{self.name}")
        self._running: dict[Future[Outcome], tuple[int, Taken | None]] = {}
        """Tasks running in the pool -> their job key and, pushed at least once, its record."""
        self._offsets = ConsumedOffsets()

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
            self._pool.shutdown(wait=True)
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
        producers = [self._producer(t) for t in self.tasks] if self.exactly_once else []
        try:
            while not done():
                if not self.ready.is_set() and all(c.assignment() for c in consumers):
                    self.ready.set()
                received = 0
                for index, consumer in enumerate(consumers):
                    if self.exactly_once:
                        received += self._transact(consumer, producers[index])
                    else:
                        free = self.concurrency - len(self._running)
                        if free > 0:
                            messages = consume_available(consumer, free, 0)
                            jobs = self._jobs_of(messages, consumer)
                            received += len(jobs)
                            self._start(jobs)
                self._finish(0.0 if received or not self._running else 0.005)
                self._collect(0.0 if received else 0.005)
            self._finish(None)
            self._drain()
        finally:
            try:
                if not self.exactly_once:
                    for consumer in consumers:
                        self._commit(consumer)
            finally:
                for consumer in consumers:
                    consumer.close()
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

        self._finish(None, only=on_revoked)
        self._drain(only=on_revoked)
        self._commit(consumer, revoked)
        self._offsets.forget(consumer, revoked)

    def _lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions lost (the session expired): another worker owns them already, so
        nothing may be committed for them; answers in hand still go to the engine."""
        self._offsets.forget(consumer, {(tp.topic, tp.partition) for tp in partitions})

    def _commit(self, consumer: Consumer, only: set[tuple[str, int]] | None = None) -> None:
        """Commit, synchronously, the offsets of the answered jobs of `consumer` (on `only`
        partitions). Retried while the error is retriable, for up to the client's timeout;
        a commit that fails is logged naming the offsets, never raised: the jobs past the
        committed offset are then worked again by the next owner (at least once)."""
        offsets = self._offsets.committable(consumer, only)
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

    def _producer(self, job_type: str) -> Producer:
        producer = new_producer(
            self.client.connection.access,
            {
                **producer_config(),
                "transactional.id": f"{self.config.namespace}.workers.{job_type}.{self.name}",
                "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
            },
        )
        producer.init_transactions(30)
        return producer

    def _jobs_of(
        self, messages: list[Any], consumer: Consumer | None = None
    ) -> list[tuple[int, JobValue, Taken | None]]:
        """The jobs of pushed records; with `consumer`, each job carries its record, whose
        offset is tracked until every job of it is settled."""
        jobs: list[tuple[int, JobValue, Taken | None]] = []
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
            taken = self._offsets.taken(consumer, message, len(found)) if consumer else None
            jobs += [(key, job, taken) for key, job in found]
        return jobs

    def _run_poll(self, done: Callable[[], bool]) -> None:
        self.ready.set()
        while not done():
            found = 0
            for task in self.tasks.values():
                free = min(task.max_jobs, self.concurrency - len(self._running))
                if free <= 0:
                    break
                jobs = self.client.activate_jobs(task.job_type, self.name, free, task.timeout_ms)
                found += len(jobs)
                self._start([(key, job, None) for key, job in jobs])
            self._finish(0.0 if found else 0.05)
            self._collect(0.0)
        self._finish(None)
        self._drain()

    # -- tasks and answers ------------------------------------------------------------------------

    def _start(self, jobs: list[tuple[int, JobValue, Taken | None]]) -> None:
        for key, value, taken in jobs:
            task = self.tasks[value.type]
            future = self._pool.submit(run_task, task, ActivatedJob.of(key, value))
            self._running[future] = (key, taken)

    def _finish(
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
            self._count(kind)
            while len(self._in_flight) >= self.max_in_flight:
                self._collect(0.01)
            self._in_flight[self.client.connection.produce(request)] = (key, taken)
        self.client.producer.poll(0)

    def _count(self, kind: str) -> None:
        setattr(self.stats, kind, getattr(self.stats, kind) + 1)

    def _transact(self, consumer: Consumer, producer: Producer) -> int:
        """Exactly-once: work one batch of pushed jobs, then commit its answers and offsets
        in one transaction. Returns the jobs in the batch."""
        messages: list[Any] = [
            m for m in consume_available(consumer, self.concurrency, 0) if not m.error()
        ]
        if not messages:
            return 0
        jobs = self._jobs_of(messages)
        futures = [
            (key, self._pool.submit(run_task, self.tasks[v.type], ActivatedJob.of(key, v)))
            for key, v, _ in jobs
        ]
        outcomes = [(key, future.result()) for key, future in futures]
        offsets: dict[tuple[str, int], int] = {}
        for message in messages:
            offsets[(message.topic(), message.partition())] = message.offset() + 1
        try:
            producer.begin_transaction()
            sent = {}
            for key, (_, request) in outcomes:
                sent[self.client.connection.produce(request, producer=producer)] = (key, None)
            producer.send_offsets_to_transaction(
                [TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                consumer.consumer_group_metadata(),
            )
            producer.commit_transaction()
        except KafkaException as exc:
            self._abort(consumer, producer, messages, exc)
            return len(jobs)
        self.stats.transactions += 1
        for _, (kind, _) in outcomes:
            self._count(kind)
        self._in_flight.update(sent)
        return len(jobs)

    def _abort(
        self, consumer: Consumer, producer: Producer, messages: list[Any], exc: KafkaException
    ) -> None:
        """The batch's transaction failed: abort it and rewind, so its jobs are worked again
        (here, or by the next owner of the partition). A fenced worker cannot go on."""
        error = exc.args[0]
        if error.fatal():
            raise PartitaError(
                f"job worker {self.name!r} was fenced ({error.str()}): another process uses the"
                " same name; give every worker process its own --name"
            ) from None
        _LOG.warning(
            "transaction of %d jobs aborted, working them again: %s", len(messages), error.str()
        )
        self.stats.aborted += 1
        if error.txn_requires_abort():
            producer.abort_transaction(30)
        first: dict[tuple[str, int], int] = {}
        for message in messages:
            first.setdefault((message.topic(), message.partition()), message.offset())
        for (topic, partition), offset in first.items():
            # revoked meanwhile: its next owner starts from the committed offset
            with contextlib.suppress(KafkaException):
                consumer.seek(TopicPartition(topic, partition, offset))

    def _collect(self, timeout: float) -> None:
        if not self._in_flight:
            if timeout:
                time.sleep(timeout)
            return
        for correlation, reply in self.client.results(timeout).items():
            key, taken = self._in_flight.pop(correlation, (-1, None))
            if taken is not None:
                self._offsets.settled(taken)
            if reply.record_type is RecordType.COMMAND_REJECTION:
                self.stats.rejected += 1
                reason = f"job {key}: {reply.intent.name} rejected: {reply.rejection_reason}"
                self.stats.rejections.append(reason)
                _LOG.warning("%s", reason)

    def _drain(self, only: Callable[[Taken | None], bool] | None = None) -> None:
        """Wait for the replies to answers already sent (those whose record `only` accepts),
        up to the client's timeout."""

        def waiting() -> int:
            return sum(1 for _, taken in self._in_flight.values() if only is None or only(taken))

        self.client.flush()
        deadline = time.monotonic() + self.client.timeout
        while waiting() and time.monotonic() < deadline:
            self._collect(0.05)
        if waiting():
            _LOG.warning(
                "no reply for %d job answers within %.0f s: their jobs may be worked again",
                waiting(),
                self.client.timeout,
            )

"""Job workers in the decorator style:

    worker = JobWorker(Config.from_env(), name="billing")

    @worker.task("charge-card")
    def charge(amount: float, job: ActivatedJob) -> dict[str, object]:
        return {"charged": amount}

    worker.run()

A task function receives the job's variables as keyword arguments (only those it names, or all
of them with `**variables`; a parameter named `job` gets the `ActivatedJob`) and returns the
variables to complete the job with (a dict, or None). Raising `BpmnError(code)` throws a BPMN
error; any other exception fails the job with one retry less and the task's back-off, the
exception as the error message.

Jobs arrive by push (default): the worker consumes `<ns>.jobs.<type>` in the consumer group
`<ns>.workers.<type>` (creating the topic if it is missing, which turns push on for the type)
and skips jobs whose deadline has passed (the engine pushes them again). With `mode="poll"`
it sends JOB_BATCH ACTIVATE to every partition instead. Completions are pipelined: a batch of
jobs is handled, then its commands are sent together and their replies awaited.
"""

from __future__ import annotations

import inspect
import json
import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from confluent_kafka import Consumer, KafkaError

from engine.client.client import Client
from engine.config import Config
from engine.errors import PartitaError
from engine.processing.job_push import job_topic
from engine.protocol.enums import RecordType
from engine.protocol.intents import JobBatchIntent, JobIntent
from engine.protocol.values import JobBatchValue, JobValue

_LOG = logging.getLogger("partita.jobworker")


class BpmnError(Exception):
    """Raise from a task to throw a BPMN error with `code` (caught by an error event, or an
    incident naming the code when nothing catches it)."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(message or code)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class ActivatedJob:
    key: int
    type: str
    variables: dict[str, Any]
    custom_headers: dict[str, str]
    retries: int
    deadline: int
    process_instance_key: int
    bpmn_process_id: str
    element_id: str
    element_instance_key: int

    @classmethod
    def of(cls, key: int, job: JobValue) -> ActivatedJob:
        return cls(
            key=key,
            type=job.type,
            variables=json.loads(job.variables or "{}"),
            custom_headers=dict(job.custom_headers),
            retries=job.retries,
            deadline=job.deadline,
            process_instance_key=job.process_instance_key,
            bpmn_process_id=job.bpmn_process_id,
            element_id=job.element_id,
            element_instance_key=job.element_instance_key,
        )


TaskFunction = Callable[..., dict[str, Any] | None]


@dataclass(slots=True)
class Task:
    job_type: str
    function: TaskFunction
    timeout_ms: int
    max_jobs: int
    retry_backoff_ms: int
    names: frozenset[str] = frozenset()
    takes_all: bool = False
    takes_job: bool = False

    def __post_init__(self) -> None:
        parameters = inspect.signature(self.function).parameters.values()
        self.takes_all = any(p.kind is p.VAR_KEYWORD for p in parameters)
        self.takes_job = any(p.name == "job" for p in parameters)
        self.names = frozenset(
            p.name
            for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "job"
        )

    def call(self, job: ActivatedJob) -> dict[str, Any] | None:
        if self.takes_all:
            arguments = dict(job.variables)
        else:
            arguments = {k: v for k, v in job.variables.items() if k in self.names}
        if self.takes_job:
            arguments["job"] = job
        return self.function(**arguments)


@dataclass(slots=True)
class WorkerStats:
    completed: int = 0
    failed: int = 0
    errors_thrown: int = 0
    skipped_expired: int = 0
    rejected: int = 0
    rejections: list[str] = field(default_factory=list)


class JobWorker:
    def __init__(
        self,
        config: Config,
        name: str = "partita-worker",
        *,
        mode: Literal["push", "poll"] = "push",
        client: Client | None = None,
    ) -> None:
        self.config = config
        self.name = name
        self.mode = mode
        self.client = client or Client(config)
        self._owns_client = client is None
        self.tasks: dict[str, Task] = {}
        self.stats = WorkerStats()
        self.stopping = threading.Event()
        self.ready = threading.Event()
        """Set once jobs can arrive: every job topic has partitions assigned (push), or at
        once (poll)."""
        self.max_in_flight = 1000
        self._in_flight: dict[bytes, int] = {}
        """Answers sent and not yet answered by the engine: correlation id -> job key."""

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
        """Finish the jobs in hand, then return from `run`."""
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
            handled = self.stats.completed + self.stats.failed + self.stats.errors_thrown
            return (
                self.stopping.is_set()
                or (deadline is not None and time.monotonic() > deadline)
                or (max_jobs is not None and handled >= max_jobs)
            )

        try:
            if self.mode == "push":
                self._run_push(done)
            else:
                self._run_poll(done)
        finally:
            if self._owns_client:
                self.client.close()
        return self.stats

    def _run_push(self, done: Callable[[], bool]) -> None:
        from engine.log.admin import admin_client
        from engine.log.topics import apply_topics, job_topic_spec

        specs = [job_topic_spec(self.config, t) for t in self.tasks]
        apply_topics(admin_client(self.config.bootstrap), specs)
        consumers = []
        for job_type in self.tasks:
            consumer = Consumer(
                {
                    "bootstrap.servers": self.config.bootstrap,
                    "group.id": f"{self.config.namespace}.workers.{job_type}",
                    "isolation.level": "read_committed",
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": True,
                    "fetch.wait.max.ms": 10,
                    "partition.assignment.strategy": "cooperative-sticky",
                }
            )
            consumer.subscribe([job_topic(self.config.namespace, job_type)])
            consumers.append(consumer)
        try:
            while not done():
                if not self.ready.is_set() and all(c.assignment() for c in consumers):
                    self.ready.set()
                received = 0
                for consumer in consumers:
                    jobs = self._jobs_of(consumer.consume(num_messages=256, timeout=0))
                    received += len(jobs)
                    self._handle(jobs)
                self._collect(0.0 if received else 0.01)
            self._drain()
        finally:
            for consumer in consumers:
                consumer.close()

    def _jobs_of(self, messages: list[Any]) -> list[tuple[int, JobValue]]:
        jobs: list[tuple[int, JobValue]] = []
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    _LOG.warning("job topic: %s", error.str())
                continue
            record = self.client.codec.decode(message.value() or b"")
            value = record.value
            if record.intent is JobBatchIntent.ACTIVATED and isinstance(value, JobBatchValue):
                jobs += zip(value.job_keys, value.jobs, strict=True)
        return jobs

    def _run_poll(self, done: Callable[[], bool]) -> None:
        self.ready.set()
        while not done():
            found = 0
            for task in self.tasks.values():
                jobs = self.client.activate_jobs(
                    task.job_type, self.name, task.max_jobs, task.timeout_ms
                )
                found += len(jobs)
                self._handle(list(jobs))
            self._collect(0.0)
            if not found:
                self.stopping.wait(0.1)
        self._drain()

    def _handle(self, jobs: list[tuple[int, JobValue]]) -> None:
        """Run the tasks of `jobs` and send their answers; replies are collected as they
        come (`_collect`), with at most `max_in_flight` answers unanswered."""
        if not jobs:
            return
        now_ms = int(time.time() * 1000)
        for key, value in jobs:
            if 0 <= value.deadline < now_ms:
                self.stats.skipped_expired += 1  # timed out: the engine activates it again
                continue
            while len(self._in_flight) >= self.max_in_flight:
                self._collect(0.01)
            task = self.tasks[value.type]
            self._in_flight[self._answer(task, ActivatedJob.of(key, value))] = key
        self.client.producer.poll(0)

    def _collect(self, timeout: float) -> None:
        if not self._in_flight:
            if timeout:
                time.sleep(timeout)
            return
        for correlation, reply in self.client.results(timeout).items():
            key = self._in_flight.pop(correlation, -1)
            if reply.record_type is RecordType.COMMAND_REJECTION:
                self.stats.rejected += 1
                reason = f"job {key}: {reply.intent.name} rejected: {reply.rejection_reason}"
                self.stats.rejections.append(reason)
                _LOG.warning("%s", reason)

    def _drain(self) -> None:
        """On the way out: wait for the replies to answers already sent."""
        self.client.flush()
        deadline = time.monotonic() + self.client.timeout
        while self._in_flight and time.monotonic() < deadline:
            self._collect(0.05)
        if self._in_flight:
            _LOG.warning(
                "no reply for %d job answers within %.0f s",
                len(self._in_flight),
                self.client.timeout,
            )

    def _answer(self, task: Task, job: ActivatedJob) -> bytes:
        try:
            variables = task.call(job)
        except BpmnError as error:
            self.stats.errors_thrown += 1
            value = JobValue(error_code=error.code, error_message=error.message)
            return self.client.submit(JobIntent.THROW_ERROR, value, job.key)
        except Exception as exc:  # any failure of user code fails the job
            self.stats.failed += 1
            _LOG.warning("job %d of type %s failed: %s", job.key, job.type, exc)
            value = JobValue(
                retries=max(job.retries - 1, 0),
                error_message=f"{type(exc).__name__}: {exc}"[:4000],
                retry_backoff=task.retry_backoff_ms,
            )
            return self.client.submit(JobIntent.FAIL, value, job.key)
        if variables is not None and not isinstance(variables, dict):
            self.stats.failed += 1
            message = (
                f"task {task.function.__name__} returned {type(variables).__name__}, not a dict"
            )
            value = JobValue(retries=max(job.retries - 1, 0), error_message=message)
            return self.client.submit(JobIntent.FAIL, value, job.key)
        self.stats.completed += 1
        value = JobValue(variables=json.dumps(variables or {}))
        return self.client.submit(JobIntent.COMPLETE, value, job.key)

"""The synchronous client over confluent-kafka.

Every command method sends one command and waits for its reply (the resulting event), raising
the `CommandRejectedError` subclass of the rejection type (`NotFoundError`, `InvalidStateError`,
...) or `ReplyTimeoutError`. A command rejected RESOURCE_EXHAUSTED (backpressure) is sent again
with back-off for up to `retry_for` seconds before `ResourceExhaustedError` is raised.
`submit`/`result`/`results` pipeline many commands without waiting for each, and without
retries. Not thread-safe: use one client per thread, or `AsyncClient` (partita.client.aio).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from partita.client import commands
from partita.client.commands import Request
from partita.client.connection import Connection
from partita.client.errors import ResourceExhaustedError, rejection_error, timeout_error
from partita.client.retry import RetryPolicy, is_backpressure
from partita.config import Config, KafkaRole
from partita.protocol.enums import RecordType
from partita.protocol.intents import Intent
from partita.protocol.records import Record
from partita.protocol.values import JobBatchValue, JobValue, RecordValue


class Client:
    def __init__(
        self,
        config: Config,
        *,
        timeout: float = 30.0,
        retry_for: float = 30.0,
        role: KafkaRole = KafkaRole.CLIENT,
    ) -> None:
        """Connects as `role`: PARTITA_KAFKA_CONFIG_<ROLE> gives it its own principal."""
        self.config = config
        self.timeout = timeout
        self.retry = RetryPolicy(retry_for=retry_for)
        """Back-off for RESOURCE_EXHAUSTED rejections; replace it to tune more than `retry_for`."""
        self.connection = Connection(config, timeout, role=role)
        self.codec = self.connection.codec
        self.producer = self.connection.producer
        self.partition_count = self.connection.partition_count
        self._pending: dict[bytes, Record] = {}

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the request/response core ------------------------------------------------------------

    def request(self, request: Request, timeout: float | None = None) -> Record:
        """Send a command and wait for its result; raises on a rejection. A RESOURCE_EXHAUSTED
        rejection is not raised until the command was sent again for `retry.retry_for`
        seconds; `timeout` bounds each wait for a reply, not the retries."""
        backoff = self.retry.start()
        while True:
            result = self.result(self.connection.produce(request), timeout)
            if is_backpressure(result):
                delay = backoff.next_delay()
                if delay is None:
                    raise ResourceExhaustedError(result, backoff.attempts, backoff.waited)
                time.sleep(delay)
                continue
            if result.record_type is RecordType.COMMAND_REJECTION:
                raise rejection_error(result)
            return result

    def send(
        self,
        intent: Intent,
        value: RecordValue,
        key: int = -1,
        *,
        partition: int | None = None,
        timeout: float | None = None,
    ) -> Record:
        """Send any command and wait for its result; raises on a rejection."""
        return self.request(Request(intent, value, key, partition), timeout)

    def submit(
        self, intent: Intent, value: RecordValue, key: int = -1, *, partition: int | None = None
    ) -> bytes:
        """Send a command without waiting (pipelining); returns the correlation id that
        `result` or `results` takes. Buffered: `send`, `flush` or `result` sends it."""
        return self.connection.produce(Request(intent, value, key, partition))

    def flush(self) -> None:
        self.producer.flush(self.timeout)

    def result(self, correlation: bytes, timeout: float | None = None) -> Record:
        """The reply to a submitted command (a rejection is returned, not raised)."""
        self.producer.flush(self.timeout)
        timeout = timeout or self.timeout
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if correlation in self._pending:
                return self._pending.pop(correlation)
            self._pending.update(self.connection.replies(0.1))
        raise timeout_error(timeout, self.config.namespace, self.config.bootstrap)

    def results(self, timeout: float = 0.1) -> dict[bytes, Record]:
        """Replies that arrived within `timeout` (and earlier ones not yet taken), by
        correlation id, each returned once."""
        self.producer.poll(0)
        self._pending.update(self.connection.replies(timeout))
        taken, self._pending = self._pending, {}
        return taken

    # -- commands -----------------------------------------------------------------------------

    def deploy(self, *resources: Path | tuple[str, bytes]) -> Record:
        """Deploy BPMN files (paths, or (name, content) pairs); the reply is DEPLOYMENT
        CREATED with the process keys and versions."""
        return self.request(commands.deploy(resources))

    def create_instance(
        self,
        bpmn_process_id: str,
        variables: dict[str, Any] | None = None,
        *,
        version: int = -1,
        await_result: bool = False,
        fetch_variables: Sequence[str] = (),
        timeout: float | None = None,
    ) -> Record:
        """Start an instance (latest version unless `version`). With `await_result` the reply
        comes when the instance completes and carries its variables."""
        request = commands.create_instance(
            bpmn_process_id,
            variables,
            version=version,
            await_result=await_result,
            fetch_variables=fetch_variables,
        )
        return self.request(request, timeout)

    def cancel_instance(self, key: int) -> Record:
        return self.request(commands.cancel_instance(key))

    def activate_jobs(
        self, job_type: str, worker: str = "client", max_jobs: int = 32, timeout_ms: int = 300_000
    ) -> tuple[tuple[int, JobValue], ...]:
        """Poll each partition once for activatable jobs of `job_type`."""
        activated: list[tuple[int, JobValue]] = []
        for partition in range(self.partition_count):
            request = commands.activate_jobs(job_type, partition, worker, max_jobs, timeout_ms)
            value = self.request(request).value
            assert isinstance(value, JobBatchValue)
            activated += zip(value.job_keys, value.jobs, strict=True)
        return tuple(activated)

    def complete_job(self, key: int, variables: dict[str, Any] | None = None) -> Record:
        return self.request(commands.complete_job(key, variables))

    def fail_job(
        self,
        key: int,
        retries: int,
        message: str = "",
        backoff_ms: int = 0,
        variables: dict[str, Any] | None = None,
    ) -> Record:
        """Fail a job: with retries left it is activated again (after `backoff_ms`); with 0
        an incident is raised. `variables` are set on the job's task (local)."""
        return self.request(commands.fail_job(key, retries, message, backoff_ms, variables))

    def throw_error(
        self, key: int, code: str, message: str = "", variables: dict[str, Any] | None = None
    ) -> Record:
        """Answer a job with a BPMN error (uncaught, it raises an incident naming the code)."""
        return self.request(commands.throw_error(key, code, message, variables))

    def update_job_retries(self, key: int, retries: int) -> Record:
        return self.request(commands.update_job_retries(key, retries))

    def update_job_timeout(self, key: int, timeout_ms: int) -> Record:
        """An activated job's deadline becomes now + `timeout_ms`."""
        return self.request(commands.update_job_timeout(key, timeout_ms))

    def yield_job(self, key: int) -> Record:
        """Give an activated job back: activatable again at once (JOB YIELDED)."""
        return self.request(commands.yield_job(key))

    def assign_user_task(self, key: int, assignee: str, *, action: str = "") -> Record:
        """Assign a user task (replacing any assignee; "" unassigns): USER_TASK ASSIGNED."""
        return self.request(commands.assign_user_task(key, assignee, action=action))

    def claim_user_task(self, key: int, assignee: str) -> Record:
        """Assign a user task unless someone else has it."""
        return self.request(commands.claim_user_task(key, assignee))

    def update_user_task(self, key: int, **attributes: Any) -> Record:
        """Change a user task's candidates, dates or priority (`commands.update_user_task`)."""
        return self.request(commands.update_user_task(key, **attributes))

    def complete_user_task(
        self, key: int, variables: dict[str, Any] | None = None, *, action: str = ""
    ) -> Record:
        """Complete a user task with variables: USER_TASK COMPLETED, and the task's element."""
        return self.request(commands.complete_user_task(key, variables, action=action))

    def evaluate_decision(
        self,
        decision_id: str = "",
        variables: dict[str, Any] | None = None,
        *,
        decision_key: int = -1,
    ) -> Record:
        """Evaluate a deployed decision (by id: its latest version; or by key): DECISION_EVALUATION
        EVALUATED with the output and audit, or FAILED with the reason."""
        request = commands.evaluate_decision(decision_id, variables, decision_key=decision_key)
        return self.request(request)

    def broadcast_signal(self, name: str, variables: dict[str, Any] | None = None) -> Record:
        """Broadcast a signal: what waits for it on any partition catches it (BROADCASTED)."""
        return self.request(commands.broadcast_signal(name, variables))

    def publish_message(
        self,
        name: str,
        correlation_key: str,
        variables: dict[str, Any] | None = None,
        *,
        ttl_ms: int = -1,
        message_id: str = "",
        await_result: bool = True,
        timeout: float | None = None,
    ) -> Record | None:
        """Publish a message on the partition of its correlation key (ttl -1: the engine's
        default). With `await_result` the reply says where it went: MESSAGE_SUBSCRIPTION
        CORRELATING (a waiting instance), MESSAGE_START_EVENT_SUBSCRIPTION CORRELATED (a new
        instance) or MESSAGE PUBLISHED (buffered); a duplicate messageId raises
        AlreadyExistsError. Without it, returns None once Kafka has it."""
        request = commands.publish_message(
            name, correlation_key, variables, ttl_ms=ttl_ms, message_id=message_id
        )
        if await_result:
            return self.request(request, timeout)
        self.connection.produce(request, reply=False)
        self.producer.flush(self.timeout)
        return None

    def set_variables(
        self, scope_key: int, variables: dict[str, Any], *, local: bool = False
    ) -> Record:
        """VARIABLE_DOCUMENT UPDATE on an element instance or process instance."""
        return self.request(commands.set_variables(scope_key, variables, local=local))

    def resolve_incident(self, key: int) -> Record:
        return self.request(commands.resolve_incident(key))

"""A synchronous client over confluent-kafka.

Each request is a command with Spring Kafka's reply headers pointing at one partition of
`<ns>.replies`; the engine answers in the transaction that processes the command. The client
reads that partition from its end (taken before sending), so it only sees new replies.
Rejections raise `CommandRejectedError` with the rejection type and reason.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from engine.config import Config
from engine.errors import PartitaError
from engine.log.clients import consume_available
from engine.protocol.codec import RecordCodec
from engine.protocol.enums import RecordType, RejectionType, VariableDocumentUpdateSemantic
from engine.protocol.headers import CORRELATION_ID, ReplyTo, header, record_headers
from engine.protocol.intents import (
    DeploymentIntent,
    IncidentIntent,
    Intent,
    JobBatchIntent,
    JobIntent,
    MessageIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    VariableDocumentIntent,
)
from engine.protocol.records import Record, command
from engine.protocol.routing import partition_for_command
from engine.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    IncidentValue,
    JobBatchValue,
    JobValue,
    MessageValue,
    ProcessInstanceCreationValue,
    ProcessInstanceValue,
    RecordValue,
    VariableDocumentValue,
)


class CommandRejectedError(PartitaError):
    """The engine rejected the command; `rejection_type` and `reason` say why."""

    def __init__(self, rejection: Record) -> None:
        self.rejection_type: RejectionType | None = rejection.rejection_type
        self.reason = rejection.rejection_reason
        kind = rejection.rejection_type.name if rejection.rejection_type else "REJECTED"
        super().__init__(
            f"{rejection.value_type.name} {rejection.intent.name} rejected ({kind}): {self.reason}"
        )


class ReplyTimeoutError(PartitaError):
    """No reply within the timeout: is a worker running for the namespace?"""


class Client:
    def __init__(self, config: Config, *, timeout: float = 30.0) -> None:
        self.config = config
        self.timeout = timeout
        self.codec = RecordCodec()
        self.producer = Producer(
            {
                "bootstrap.servers": config.bootstrap,
                "enable.idempotence": True,
                "partitioner": "murmur2_random",
                "linger.ms": 0,
            }
        )
        self.consumer = Consumer(
            {
                "bootstrap.servers": config.bootstrap,
                "group.id": f"{config.namespace}.client",  # never joins: assign only
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 10,
            }
        )
        topics = self.consumer.list_topics(timeout=timeout).topics
        if config.log_topic not in topics or config.replies_topic not in topics:
            raise PartitaError(
                f"topics {config.log_topic} and {config.replies_topic} are missing: run"
                " `partita topics apply` (or `partita up`) first"
            )
        self.partition_count = len(topics[config.log_topic].partitions)
        reply_partitions = len(topics[config.replies_topic].partitions)
        self.reply_partition = uuid.uuid4().int % reply_partitions
        tp = TopicPartition(config.replies_topic, self.reply_partition)
        high = self._end_offset(tp, timeout)
        self.consumer.assign([TopicPartition(config.replies_topic, self.reply_partition, high)])
        self._round_robin = itertools.cycle(range(self.partition_count))
        self._pending: dict[bytes, Record] = {}

    def _end_offset(self, tp: TopicPartition, timeout: float) -> int:
        """The end of the reply partition; a topic created a moment ago may not have a leader
        yet, which is retried until `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                _, high = self.consumer.get_watermark_offsets(tp, timeout=timeout, cached=False)
                return int(high)
            except KafkaException as exc:
                if time.monotonic() > deadline:
                    raise PartitaError(
                        f"cannot read {tp.topic}/{tp.partition}: {exc.args[0].str()}"
                    ) from None
                time.sleep(0.2)

    def close(self) -> None:
        self.producer.flush(10)
        self.consumer.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- the request/response core ------------------------------------------------------------

    def send(
        self,
        intent: Intent,
        value: RecordValue,
        key: int = -1,
        *,
        partition: int | None = None,
        timeout: float | None = None,
    ) -> Record:
        """Send a command and wait for its result; CommandRejectedError on a rejection."""
        correlation = self.submit(intent, value, key, partition=partition)
        self.producer.flush(self.timeout)
        result = self.result(correlation, timeout)
        if result.record_type is RecordType.COMMAND_REJECTION:
            raise CommandRejectedError(result)
        return result

    def submit(
        self, intent: Intent, value: RecordValue, key: int = -1, *, partition: int | None = None
    ) -> bytes:
        """Send a command without waiting (pipelining); returns the correlation id that
        `result` or `results` takes. Buffered: `send`, `flush` or `result` sends it."""
        record = command(intent, value, key)
        if partition is None:
            partition = partition_for_command(record, self.partition_count, next(self._round_robin))
        correlation = uuid.uuid4().hex.encode()
        reply = ReplyTo(self.config.replies_topic, self.reply_partition, correlation)
        while True:
            try:
                self.producer.produce(
                    self.config.log_topic,
                    self.codec.encode(record),
                    partition=partition,
                    headers=[*record_headers(record), *reply.headers()],
                )
                break
            except BufferError:  # the local queue is full: let it drain
                self.producer.poll(0.05)
        self.producer.poll(0)
        return correlation

    def flush(self) -> None:
        self.producer.flush(self.timeout)

    def result(self, correlation: bytes, timeout: float | None = None) -> Record:
        """The reply to a submitted command (a rejection is returned, not raised)."""
        self.producer.flush(self.timeout)
        return self._await(correlation, timeout or self.timeout)

    def results(self, timeout: float = 0.1) -> dict[bytes, Record]:
        """Replies that arrived within `timeout` (and earlier ones not yet taken), by
        correlation id, each returned once."""
        self.producer.poll(0)
        self._read_replies(timeout)
        taken, self._pending = self._pending, {}
        return taken

    def _read_replies(self, timeout: float) -> None:
        for message in consume_available(self.consumer, 500, timeout):
            if message.error() is not None:
                continue
            seen = header(message.headers(), CORRELATION_ID) or b""
            self._pending[seen] = self.codec.decode(message.value() or b"")

    def _await(self, correlation: bytes, timeout: float) -> Record:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if correlation in self._pending:
                return self._pending.pop(correlation)
            self._read_replies(0.1)
        raise ReplyTimeoutError(
            f"no reply within {timeout:.0f} s; is a `partita worker` running for namespace"
            f" '{self.config.namespace}' at {self.config.bootstrap}?"
        )

    # -- commands -----------------------------------------------------------------------------

    def deploy(self, *paths: Path) -> Record:
        resources = tuple(DeploymentResource(p.name, p.read_bytes()) for p in paths)
        return self.send(DeploymentIntent.CREATE, DeploymentValue(resources=resources))

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
        value = ProcessInstanceCreationValue(
            bpmn_process_id=bpmn_process_id,
            version=version,
            variables=json.dumps(variables or {}),
            fetch_variables=tuple(fetch_variables),
        )
        intent = (
            ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT
            if await_result
            else ProcessInstanceCreationIntent.CREATE
        )
        return self.send(intent, value, timeout=timeout)

    def cancel_instance(self, key: int) -> Record:
        value = ProcessInstanceValue(process_instance_key=key)
        return self.send(ProcessInstanceIntent.CANCEL, value, key)

    def activate_jobs(
        self, job_type: str, worker: str = "client", max_jobs: int = 32, timeout_ms: int = 300_000
    ) -> tuple[tuple[int, JobValue], ...]:
        """Poll each partition once for activatable jobs of `job_type`."""
        activated: list[tuple[int, JobValue]] = []
        for partition in range(self.partition_count):
            batch = JobBatchValue(
                type=job_type, worker=worker, timeout=timeout_ms, max_jobs_to_activate=max_jobs
            )
            result = self.send(JobBatchIntent.ACTIVATE, batch, partition=partition)
            value = result.value
            assert isinstance(value, JobBatchValue)
            activated += zip(value.job_keys, value.jobs, strict=True)
        return tuple(activated)

    def complete_job(self, key: int, variables: dict[str, Any] | None = None) -> Record:
        return self.send(JobIntent.COMPLETE, JobValue(variables=json.dumps(variables or {})), key)

    def fail_job(self, key: int, retries: int, message: str = "", backoff_ms: int = 0) -> Record:
        value = JobValue(retries=retries, error_message=message, retry_backoff=backoff_ms)
        return self.send(JobIntent.FAIL, value, key)

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
        CommandRejectedError (ALREADY_EXISTS). Without it, returns None once Kafka has it."""
        value = MessageValue(
            name=name,
            correlation_key=correlation_key,
            time_to_live=ttl_ms,
            message_id=message_id,
            variables=json.dumps(variables or {}),
        )
        if await_result:
            return self.send(MessageIntent.PUBLISH, value, timeout=timeout)
        record = command(MessageIntent.PUBLISH, value)
        self.producer.produce(
            self.config.log_topic,
            self.codec.encode(record),
            partition=partition_for_command(record, self.partition_count, 0),
            headers=record_headers(record),
        )
        self.producer.flush(self.timeout)
        return None

    def set_variables(
        self, scope_key: int, variables: dict[str, Any], *, local: bool = False
    ) -> Record:
        """VARIABLE_DOCUMENT UPDATE on an element instance or process instance."""
        value = VariableDocumentValue(
            scope_key=scope_key,
            update_semantics=VariableDocumentUpdateSemantic.LOCAL
            if local
            else VariableDocumentUpdateSemantic.PROPAGATE,
            variables=json.dumps(variables),
        )
        return self.send(VariableDocumentIntent.UPDATE, value)

    def throw_error(self, key: int, code: str, message: str = "") -> Record:
        """Answer a job with a BPMN error (uncaught, it raises an incident naming the code)."""
        value = JobValue(error_code=code, error_message=message)
        return self.send(JobIntent.THROW_ERROR, value, key)

    def update_job_retries(self, key: int, retries: int) -> Record:
        return self.send(JobIntent.UPDATE_RETRIES, JobValue(retries=retries), key)

    def resolve_incident(self, key: int) -> Record:
        return self.send(IncidentIntent.RESOLVE, IncidentValue(), key)

"""The hostile producer of `partita chaos`: records no client may send, written to ingress.

While the chaos run injects its faults, a thread writes to `<ns>.commands`, at a low rate and in
rotation, one record of each `KINDS`: garbage bytes (with and without an EVENT header), forged
EVENT and COMMAND_REJECTION records, internal intents (PROCESS_INSTANCE COMPLETE_ELEMENT, TIMER
TRIGGER, DEPLOYMENT DISTRIBUTE), keys of partitions the log does not have, and requests whose
reply headers name `<ns>.log`, another namespace's topics, a topic that does not exist and a
partition out of range. The requests are creations of a process that is not deployed, so the
engine answers each with a rejection whatever it does with the reply address.

Every record is built with `partita.protocol`'s encoders. `sent` maps (ingress partition, ingress
offset) to the kind of every record Kafka took; the chaos checks require that each of them got
exactly one rejection on the log and nothing else (`partita.ops.chaos_log`).
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from partita.config import Config
from partita.log.clients import new_consumer, new_producer
from partita.log.security import KafkaAccess
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import BpmnElementType, RecordType, RejectionType, ValueType
from partita.protocol.headers import INTENT, RECORD_TYPE, VALUE_TYPE, Headers, ReplyTo
from partita.protocol.headers import record_headers as filter_headers
from partita.protocol.intents import (
    DeploymentIntent,
    JobIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
    TimerIntent,
)
from partita.protocol.keys import encode_key, partition_id_of_kafka
from partita.protocol.records import Record, command, event
from partita.protocol.values import (
    DeploymentValue,
    JobValue,
    ProcessInstanceCreationValue,
    ProcessInstanceValue,
    TimerValue,
)

_QUIET = logging.getLogger("partita.chaos.kafka")


@dataclass(frozen=True, slots=True)
class HostileRecord:
    kind: str
    value: bytes
    headers: Headers


def _key(partition: int, rng: random.Random) -> int:
    """A key of `partition`'s key space that no entity has (far above any counter used)."""
    return encode_key(partition_id_of_kafka(partition), (1 << 48) + rng.randrange(1 << 20))


def _reply(topic: str, partition: int | None) -> Headers:
    return ReplyTo(topic, partition, b"chaos-hostile").headers()


class HostileRecords:
    """The hostile records of one namespace, in rotation over `KINDS`."""

    KINDS = (
        "garbage",
        "garbage-under-event-header",
        "forged-event",
        "event-under-command-header",
        "forged-rejection",
        "internal-complete-element",
        "internal-timer-trigger",
        "internal-deployment-distribute",
        "key-of-missing-partition",
        "reply-to-log",
        "reply-to-other-namespace-log",
        "reply-to-other-namespace-replies",
        "reply-to-missing-topic",
        "reply-partition-out-of-range",
    )

    def __init__(self, namespace: str, partition_count: int, seed: int) -> None:
        self.namespace = namespace
        self.partition_count = partition_count
        self.codec = RecordCodec()
        self.rng = random.Random(seed)

    def make(self, kind: str, partition: int) -> HostileRecord:
        """The hostile record `kind` addressed to ingress partition `partition`."""
        build: Callable[[int], tuple[bytes, Headers]] = getattr(self, "_" + kind.replace("-", "_"))
        value, headers = build(partition)
        return HostileRecord(kind, value, headers)

    def _encoded(self, record: Record, extra: Headers | None = None) -> tuple[bytes, Headers]:
        return self.codec.encode(record), [*filter_headers(record), *(extra or [])]

    def _completed_process(self, partition: int) -> Record:
        key = _key(partition, self.rng)
        value = ProcessInstanceValue(
            bpmn_process_id="chaos",
            process_instance_key=key,
            element_id="chaos",
            bpmn_element_type=BpmnElementType.PROCESS,
        )
        return event(ProcessInstanceIntent.ELEMENT_COMPLETED, value, key)

    def _request(self, partition: int, reply: Headers) -> tuple[bytes, Headers]:
        """A request its own partition rejects NOT_FOUND (a job that does not exist), so it
        is answered there whatever happens to its reply."""
        key = _key(partition, self.rng)
        return self._encoded(command(JobIntent.COMPLETE, JobValue(), key), reply)

    def _garbage(self, _partition: int) -> tuple[bytes, Headers]:
        return self.rng.randbytes(self.rng.randrange(1, 200)), []

    def _garbage_under_event_header(self, _partition: int) -> tuple[bytes, Headers]:
        headers: Headers = [
            (RECORD_TYPE, b"EVENT"),
            (VALUE_TYPE, b"PROCESS_INSTANCE"),
            (INTENT, b"ELEMENT_COMPLETED"),
        ]
        return self.rng.randbytes(self.rng.randrange(1, 200)), headers

    def _forged_event(self, partition: int) -> tuple[bytes, Headers]:
        return self._encoded(self._completed_process(partition))

    def _event_under_command_header(self, partition: int) -> tuple[bytes, Headers]:
        value, _ = self._encoded(self._completed_process(partition))
        headers: Headers = [
            (RECORD_TYPE, b"COMMAND"),
            (VALUE_TYPE, b"PROCESS_INSTANCE"),
            (INTENT, b"ELEMENT_COMPLETED"),
        ]
        return value, headers

    def _forged_rejection(self, _partition: int) -> tuple[bytes, Headers]:
        value = ProcessInstanceCreationValue(bpmn_process_id="chaos")
        record = Record(
            RecordType.COMMAND_REJECTION,
            ValueType.PROCESS_INSTANCE_CREATION,
            ProcessInstanceCreationIntent.CREATE,
            value,
            rejection_type=RejectionType.INVALID_STATE,
            rejection_reason="forged by the chaos run's hostile producer",
        )
        return self._encoded(record)

    def _internal_complete_element(self, partition: int) -> tuple[bytes, Headers]:
        completed = self._completed_process(partition)
        return self._encoded(
            command(ProcessInstanceIntent.COMPLETE_ELEMENT, completed.value, completed.key)
        )

    def _internal_timer_trigger(self, partition: int) -> tuple[bytes, Headers]:
        key = _key(partition, self.rng)
        value = TimerValue(element_instance_key=key, due_date=0, target_element_id="wait")
        return self._encoded(command(TimerIntent.TRIGGER, value, key))

    def _internal_deployment_distribute(self, partition: int) -> tuple[bytes, Headers]:
        return self._encoded(command(DeploymentIntent.DISTRIBUTE, DeploymentValue()))

    def _key_of_missing_partition(self, _partition: int) -> tuple[bytes, Headers]:
        key = _key(self.partition_count + 7, self.rng)
        return self._encoded(command(JobIntent.COMPLETE, JobValue(), key))

    def _reply_to_log(self, partition: int) -> tuple[bytes, Headers]:
        other = (partition + 1) % self.partition_count
        return self._request(partition, _reply(f"{self.namespace}.log", other))

    def _reply_to_other_namespace_log(self, partition: int) -> tuple[bytes, Headers]:
        return self._request(partition, _reply(f"not{self.namespace}.log", 0))

    def _reply_to_other_namespace_replies(self, partition: int) -> tuple[bytes, Headers]:
        return self._request(partition, _reply(f"not{self.namespace}.replies", None))

    def _reply_to_missing_topic(self, partition: int) -> tuple[bytes, Headers]:
        return self._request(partition, _reply(f"{self.namespace}.no-such-topic", None))

    def _reply_partition_out_of_range(self, partition: int) -> tuple[bytes, Headers]:
        return self._request(partition, _reply(f"{self.namespace}.replies", 4096))


class HostileProducer:
    """A thread writing `rate` hostile records per second to ingress until `stop()`."""

    def __init__(  # noqa: PLR0917 - the run's knobs, spelled out
        self,
        access: KafkaAccess,
        namespace: str,
        topic: str,
        partitions: int,
        rate: float,
        seed: int,
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self.rate = rate
        self.records = HostileRecords(namespace, partitions, seed)
        self.sent: dict[tuple[int, int], str] = {}
        """(ingress partition, ingress offset) -> kind, for every record Kafka took."""
        self.undelivered = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="hostile-producer", daemon=True)
        self._producer = new_producer(
            access,
            {
                "enable.idempotence": True,
                "message.timeout.ms": 600_000,  # outlast broker restarts
                "logger": _QUIET,
            },
        )

    def start(self) -> HostileProducer:
        if self.rate > 0:
            self._thread.start()
        return self

    def stop(self, flush_timeout: float = 300) -> None:
        """Stop writing and wait until Kafka took (or refused) every record written."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        self._producer.flush(flush_timeout)

    def by_kind(self) -> dict[str, int]:
        with self._lock:
            return dict(Counter(self.sent.values()))

    def _run(self) -> None:
        kinds = HostileRecords.KINDS
        n = 0
        while not self._stopping.wait(1 / self.rate):
            kind = kinds[n % len(kinds)]
            partition = n % self.partitions
            record = self.records.make(kind, partition)
            with contextlib.suppress(BufferError):
                self._producer.produce(
                    self.topic,
                    record.value,
                    partition=partition,
                    headers=record.headers,
                    on_delivery=self._delivered(kind),
                )
            n += 1
            self._producer.poll(0)

    def _delivered(self, kind: str) -> Callable[[KafkaError | None, Any], None]:
        def report(error: KafkaError | None, message: Any) -> None:
            with self._lock:
                if error is None:
                    self.sent[(int(message.partition()), int(message.offset()))] = kind
                else:
                    self.undelivered += 1

        return report


def other_namespace(config: Config) -> Config:
    """Another namespace on the same cluster, whose topics hostile reply headers name."""
    return replace(config, namespace=f"not{config.namespace}", partitions=1)


def records_in_namespace(access: KafkaAccess, namespace: Config) -> int:
    """Records on every topic of `namespace` (for the other namespace: nothing may have
    written there)."""
    prefix = f"{namespace.namespace}."
    consumer = new_consumer(access, {"group.id": "chaos-probe"})
    try:
        total = 0
        for name, topic in consumer.list_topics(timeout=30).topics.items():
            if name.startswith(prefix):
                for partition in topic.partitions:
                    tp = TopicPartition(name, partition)
                    total += int(consumer.get_watermark_offsets(tp, 30, cached=False)[1])
        return total
    finally:
        consumer.close()

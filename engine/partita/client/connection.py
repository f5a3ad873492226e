"""The Kafka side of a client: a producer for commands and a consumer of one reply partition.

Commands go to the ingress topic `<ns>.commands` (clients never write the log). Each request is
a command with Spring Kafka's reply headers pointing at one partition of
`<ns>.replies`; the engine answers in the transaction that processes the command. The reply
partition is read from its end as it was before the first command, so only new replies are
seen. Shared by the synchronous `Client` and the asyncio `AsyncClient`.
"""

from __future__ import annotations

import itertools
import time
import uuid

from confluent_kafka import KafkaException, Producer, TopicPartition

from partita.client.commands import Request
from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.log.admin import cluster_metadata
from partita.log.clients import (
    NOW,
    ErrorReporter,
    consume_available,
    new_consumer,
    new_producer,
)
from partita.log.security import kafka_access
from partita.protocol.codec import PRODUCER_MAX_BYTES, RecordCodec
from partita.protocol.headers import CORRELATION_ID, ReplyTo, header, record_headers
from partita.protocol.records import Record, command
from partita.protocol.routing import partition_for_command

_NEW_TOPICS_S = 10.0
"""How long a client waits for missing topics to show in the metadata before it says so."""


def producer_config() -> dict[str, object]:
    """Settings of a client's command producer (the access adds address and security)."""
    return {
        "enable.idempotence": True,
        "partitioner": "murmur2_random",  # Kafka's Java default: routes like any producer
        "linger.ms": 0,
        "message.max.bytes": PRODUCER_MAX_BYTES,  # the codec enforces the record limit
    }


class Connection:
    def __init__(
        self,
        config: Config,
        timeout: float,
        producer: Producer | None = None,
        role: KafkaRole = KafkaRole.CLIENT,
    ) -> None:
        """Connects as `role` (a job worker's commands go out under its own principal).
        KafkaAccessError at once when the cluster refuses the credentials or certificate."""
        self.config = config
        self.codec = RecordCodec()
        self.access = kafka_access(config, role)
        reporter = ErrorReporter(self.access)
        self.producer = producer or new_producer(self.access, producer_config())
        self.consumer = new_consumer(
            self.access,
            {
                "group.id": f"{config.namespace}.client",  # never joins: assign only
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 10,
                "error_cb": reporter,
            },
        )
        wanted = (config.commands_topic, config.replies_topic)
        deadline = time.monotonic() + min(timeout, _NEW_TOPICS_S)
        while True:  # topics created a moment ago reach every broker's metadata a moment later
            topics = cluster_metadata(self.consumer, reporter, self.access, timeout).topics
            if all(name in topics for name in wanted):
                break
            if time.monotonic() > deadline:
                raise PartitaError(
                    f"topics {config.commands_topic} and {config.replies_topic} are missing: run"
                    " `partita topics apply` (or `partita up`) first"
                )
            time.sleep(0.2)
        self.partition_count = len(topics[config.commands_topic].partitions)
        reply_partitions = len(topics[config.replies_topic].partitions)
        self.reply_partition = uuid.uuid4().int % reply_partitions
        tp = TopicPartition(config.replies_topic, self.reply_partition)
        high = self._end_offset(tp, timeout)
        self.consumer.assign([TopicPartition(config.replies_topic, self.reply_partition, high)])
        self._round_robin = itertools.cycle(range(self.partition_count))
        # correlation ids: this connection's random prefix and a count (a uuid4 per command
        # read the system's random source each time); others on the reply partition have
        # prefixes of their own
        self._correlation_prefix = uuid.uuid4().hex[:16]
        self._correlations = itertools.count()

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

    def partition_of(self, request: Request) -> tuple[Record, int]:
        record = command(request.intent, request.value, request.key)
        partition = request.partition
        if partition is None:
            partition = partition_for_command(record, self.partition_count, next(self._round_robin))
        return record, partition

    def produce(
        self, request: Request, *, reply: bool = True, producer: Producer | None = None
    ) -> bytes:
        """Queue the command (the producer, or `producer`, e.g. a transactional one, sends it
        in the background); returns the correlation id its reply will carry (empty without
        `reply`)."""
        producer = producer or self.producer
        record, partition = self.partition_of(request)
        headers = record_headers(record)
        correlation = b""
        if reply:
            correlation = f"{self._correlation_prefix}{next(self._correlations):x}".encode()
            reply_to = ReplyTo(self.config.replies_topic, self.reply_partition, correlation)
            headers = [*headers, *reply_to.headers()]
        value = self.codec.encode(record)
        while True:
            try:
                producer.produce(  # positional: see partita.log.clients
                    self.config.commands_topic, value, None, partition, None, None, NOW, headers
                )
                break
            except BufferError:  # the local queue is full: let it drain
                producer.poll(0.05)
        producer.poll(0)
        return correlation

    def replies(self, timeout: float) -> list[tuple[bytes, Record]]:
        """Replies that arrive within `timeout`, each with its correlation id."""
        found = []
        for message in consume_available(self.consumer, 500, timeout):
            if message.error() is not None:
                continue
            seen = header(message.headers(), CORRELATION_ID) or b""
            found.append((seen, self.codec.decode(message.value() or b"")))
        return found

    def close(self, flush_timeout: float = 10.0) -> None:
        self.producer.flush(flush_timeout)
        self.consumer.close()

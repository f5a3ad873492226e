"""The scenario harness on the real broker: the same surface as `MemoryEngine`, but every
partition's processing state machine reads a real topic with a read_committed consumer and
writes with a real transactional producer, and replay runs the production replay state
machine against the log on the broker. The scenario tests run on both harnesses."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from partita.config import Config, KafkaRole
from partita.log import clients
from partita.log.admin import admin_client
from partita.log.security import KafkaAccess
from partita.log.topics import TopicSpec, apply_topics
from partita.processing import Engine
from partita.processing.job.push import JobPush
from partita.protocol.codec import PRODUCER_MAX_BYTES
from partita.protocol.headers import CORRELATION_ID, ReplyTo, header, record_headers
from partita.protocol.records import Record
from partita.state import KeyGenerator, PartitionDb
from partita.stream.processing.state_machine import ProcessingStateMachine
from partita.stream.replay.state_machine import ReplayStateMachine
from tests.support.memory import CODEC, Harness, reply_routes


class KafkaEngine(Harness):
    """Partitions of one engine on the real broker; `run()` processes until quiet."""

    def __init__(
        self,
        engine: Engine,
        home: Path,
        bootstrap: str,
        partitions: int = 1,
        job_push: JobPush | None = None,
    ) -> None:
        self.engine = engine
        if job_push is not None:  # this push (its topics, limits) instead of the engine's own
            engine.topic_hooks[:] = [
                h for h in engine.topic_hooks if not isinstance(h, JobPush)
            ] + [job_push]
        self.bootstrap = bootstrap
        self.partitions = partitions
        self.namespace = f"s{uuid.uuid4().hex[:10]}"
        self.TOPIC = f"{self.namespace}.log"
        self.REPLIES = f"{self.namespace}.replies"
        config = Config(bootstrap_servers=bootstrap, namespace=self.namespace)
        apply_topics(
            admin_client(KafkaAccess(bootstrap, KafkaRole.OPERATOR)),
            [
                TopicSpec("log", self.TOPIC, partitions, config.replication_factor),
                TopicSpec("replies", self.REPLIES, 1, config.replication_factor),
            ],
        )
        self.now = 1_764_000_000.0
        self.sender = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "message.max.bytes": PRODUCER_MAX_BYTES,
            }
        )
        self.sent: dict[int, int] = {}
        """The highest offset the harness itself produced, per partition."""
        self.messages: dict[int, list[Message]] = {p: [] for p in range(partitions)}
        self.watcher = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"{self.namespace}.watcher",
                "isolation.level": "read_uncommitted",
            }
        )
        """Reads the log's true end: a read_committed consumer's end offset is the last stable
        offset, which lags behind a transaction whose commit markers are still being written."""
        self.dbs: list[PartitionDb] = []
        self.machines: list[ProcessingStateMachine] = []
        self.consumers: list[Consumer] = []
        self.producers: list[Producer] = []
        for partition in range(partitions):
            db = PartitionDb(home / f"partition-{partition}")
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": clients.engine_group(self.namespace),
                    "enable.auto.commit": False,
                    "isolation.level": "read_committed",
                    "fetch.wait.max.ms": 10,
                }
            )
            consumer.assign([TopicPartition(self.TOPIC, partition, 0)])
            self._wait_until_readable(consumer, partition)
            producer = clients.transactional_producer(
                KafkaAccess(bootstrap, KafkaRole.ENGINE), self.namespace, partition
            )
            producer.init_transactions(30)
            self.dbs.append(db)
            self.consumers.append(consumer)
            self.producers.append(producer)
            self.machines.append(
                ProcessingStateMachine(
                    topic=self.TOPIC,
                    partition=partition,
                    partition_count=partitions,
                    engine=engine,
                    codec=CODEC,
                    db=db,
                    keys=KeyGenerator(db, partition + 1),
                    producer=producer,
                    group_metadata=consumer.consumer_group_metadata,
                    rewind=self._rewinder(consumer, partition),
                    replies=reply_routes(self.REPLIES),
                    next_offset=0,
                    clock=lambda: self.now,
                )
            )

    def _wait_until_readable(self, consumer: Consumer, partition: int) -> None:
        """A topic created a moment ago may have no leader yet: wait for valid offsets."""
        deadline = time.monotonic() + 30
        tp = TopicPartition(self.TOPIC, partition)
        while time.monotonic() < deadline:
            try:
                low, high = consumer.get_watermark_offsets(tp, timeout=5, cached=False)
            except KafkaException:
                low = high = -1
            if low >= 0 and high >= 0:
                return
            time.sleep(0.1)
        raise AssertionError(f"{self.TOPIC}/{partition} has no leader after 30 s")

    def _rewinder(self, consumer: Consumer, partition: int) -> Callable[[int, int], None]:
        def rewind(offset: int, _ingress: int = 0) -> None:
            consumer.seek(TopicPartition(self.TOPIC, partition, offset))

        return rewind

    def send(self, partition: int, record: Record, reply: ReplyTo | None = None) -> int:
        """Produce a command (as any client would, outside a transaction); its offset."""
        offsets: list[int] = []

        def delivered(error: KafkaError | None, message: Message) -> None:
            assert error is None, error
            offsets.append(message.offset() or 0)

        headers = list(record_headers(record)) + (reply.headers() if reply else [])
        self.sender.produce(
            self.TOPIC,
            CODEC.encode(record),
            partition=partition,
            headers=headers,
            on_delivery=delivered,
        )
        assert self.sender.flush(30) == 0
        self.sent[partition] = max(self.sent.get(partition, -1), offsets[0])
        return offsets[0]

    def run(self, timeout: float = 60.0) -> None:
        """Consume and process every partition until none has anything left to read."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            busy = False
            for partition, consumer in enumerate(self.consumers):
                batch = [m for m in consumer.consume(500, timeout=0.02) if m.error() is None]
                if batch:
                    busy = True
                    self.messages[partition].extend(batch)
                    self.machines[partition].process(batch)
            if not busy and all(self._caught_up(p) for p in range(self.partitions)):
                return
        raise AssertionError(f"the engine did not become quiet within {timeout} s")

    def _caught_up(self, partition: int) -> bool:
        """Everything on the partition was read: nothing after our position but at most the
        marker of the last transaction, and every command we produced was seen."""
        consumed = self.messages[partition]
        position = (consumed[-1].offset() or 0) + 1 if consumed else 0
        if position <= self.sent.get(partition, -1):
            return False
        tp = TopicPartition(self.TOPIC, partition)
        _, high = self.watcher.get_watermark_offsets(tp, timeout=10, cached=False)
        return bool(0 <= high - position <= 1)  # a negative end: metadata not ready yet

    def records(self, partition: int) -> list[Record]:
        return [CODEC.decode(m.value() or b"", offset=m.offset()) for m in self.messages[partition]]

    def replies(self) -> list[tuple[bytes, Record]]:
        """(correlation id, record) of every committed reply."""
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"{self.namespace}.replies-reader",
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
            }
        )
        found: list[tuple[bytes, Record]] = []
        try:
            consumer.assign([TopicPartition(self.REPLIES, 0, 0)])
            while True:
                message: Any = consumer.poll(10)
                assert message is not None, "no end of the replies topic within 10 s"
                if message.error() is not None:
                    assert message.error().code() == KafkaError._PARTITION_EOF
                    return found
                correlation = header(message.headers(), CORRELATION_ID) or b""
                found.append((correlation, CODEC.decode(message.value())))
        finally:
            consumer.close()

    def assert_replay_matches(self, home: Path) -> None:
        """Rebuild every partition with the production replay state machine reading the
        broker's log: the digests must equal the live ones."""
        for partition, live in enumerate(self.dbs):
            fresh = PartitionDb(home / f"replayed-{partition}")
            restore = clients.restore_consumer(
                KafkaAccess(self.bootstrap, KafkaRole.ENGINE), self.namespace, partition
            )
            try:
                keys = KeyGenerator(fresh, partition + 1)
                ReplayStateMachine(
                    restore, self.TOPIC, partition, self.engine, CODEC, fresh, keys
                ).run()
                assert fresh.digest() == live.digest(), (
                    f"partition {partition} differs after replay from the broker"
                )
            finally:
                restore.close()
                fresh.close()

    def close(self) -> None:
        self.watcher.close()
        self.sender.flush(5)
        for consumer in self.consumers:
            consumer.close()
        for producer in self.producers:
            producer.flush(5)
        for db in self.dbs:
            db.close()
        # the machines and this harness refer to each other (their clock), so only a garbage
        # collection would free the producers, maybe after the session's broker has stopped,
        # and librdkafka would log its failed reconnections: free them now
        self.machines.clear()
        self.producers.clear()
        self.consumers.clear()
        del self.sender

"""An in-memory log with the confluent-kafka surface the processing state machine uses, for
fast tests of the engine core (processors and appliers). Kafka behaviour itself (transactions,
fencing, rebalance, replay) is only ever tested against the real broker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from partita.processing import Engine
from partita.processing.job.push import JobPush
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RecordType
from partita.protocol.headers import ReplyTo, record_headers
from partita.protocol.records import Record
from partita.state import KeyGenerator, PartitionDb
from partita.stream.metrics import ProcessingMetrics
from partita.stream.processing.replies import ReplyRoutes
from partita.stream.processing.state_machine import ProcessingStateMachine
from partita.stream.processing.transaction import BatchTransaction

CODEC = RecordCodec()


@dataclass
class Message:
    """What a consumed record looks like to the processing state machine."""

    _topic: str
    _partition: int
    _offset: int
    _value: bytes
    _headers: list[tuple[str, Any]]
    _key: bytes | None = None

    def key(self) -> bytes | None:
        return self._key

    def offset(self) -> int:
        return self._offset

    def partition(self) -> int:
        return self._partition

    def value(self) -> bytes:
        return self._value

    def headers(self) -> list[tuple[str, Any]]:
        return self._headers

    def topic(self) -> str:
        return self._topic

    def error(self) -> None:
        return None


@dataclass
class MemoryKafka:
    """Topics as lists of messages per partition; a transactional producer per partition."""

    logs: dict[tuple[str, int], list[Message]] = field(default_factory=dict)

    def log(self, topic: str, partition: int) -> list[Message]:
        return self.logs.setdefault((topic, partition), [])

    def append(
        self,
        topic: str,
        partition: int,
        value: bytes,
        headers: list[tuple[str, Any]],
        key: bytes | None = None,
    ) -> Message:
        log = self.log(topic, partition)
        message = Message(topic, partition, len(log), value, headers, key)
        log.append(message)
        return message


class Produced(NamedTuple):
    """One record a producer double was given, as it keeps it."""

    topic: str
    partition: int
    value: bytes
    headers: list[tuple[str, Any]]
    on_delivery: Callable[..., None] | None
    key: bytes | None


class ProducerDouble:
    """confluent-kafka's `Producer.produce`, called as the engine calls it (by position, in its
    order): each call becomes one `queue`. Partition -1 (the partitioner's) is 0 here."""

    def produce(  # noqa: PLR0917 - confluent-kafka's order, which the engine calls positionally
        self,
        topic: str,
        value: bytes,
        key: bytes | None = None,
        partition: int = -1,
        on_delivery: Any = None,
        callback: Any = None,
        timestamp: int = 0,
        headers: Any = None,
    ) -> None:
        headers = list(headers or [])
        on_delivery = on_delivery or callback
        self.queue(Produced(topic, max(partition, 0), value, headers, on_delivery, key))

    def queue(self, produced: Produced) -> None:
        raise NotImplementedError


class MemoryProducer(ProducerDouble):
    def __init__(self, kafka: MemoryKafka) -> None:
        self.kafka = kafka
        self.pending: list[Produced] = []
        self.delivered: list[tuple[Callable[..., None], Message]] = []

    def begin_transaction(self) -> None:
        self.pending = []

    def queue(self, produced: Produced) -> None:
        self.pending.append(produced)

    def send_offsets_to_transaction(self, *_: Any) -> None:
        pass

    def commit_transaction(self, *_: Any) -> None:
        for topic, partition, value, headers, callback, key in self.pending:
            message = self.kafka.append(topic, partition, value, headers, key)
            if callback is not None:
                self.delivered.append((callback, message))
        self.pending = []

    def abort_transaction(self, *_: Any) -> None:
        self.pending = []

    def poll(self, *_: Any) -> None:
        for callback, message in self.delivered:
            callback(None, message)
        self.delivered = []


class QuietProducer:
    """A transactional producer whose calls all succeed and write nothing (it counts aborts):
    unit tests of `BatchTransaction` override the one call that fails."""

    def __init__(self) -> None:
        self.aborted = 0

    def begin_transaction(self) -> None:
        pass

    def produce(self, *_: Any) -> None:
        pass

    def send_offsets_to_transaction(self, *_: Any) -> None:
        pass

    def commit_transaction(self, _timeout: float) -> None:
        pass

    def abort_transaction(self, _timeout: float) -> None:
        self.aborted += 1

    def poll(self, _timeout: float) -> int:
        return 0


def batch_transaction(
    producer: Any, forget: Callable[[], None], rewind: Callable[[], None]
) -> BatchTransaction:
    """The transaction of partition 3 of log `t.log` over `producer` (see QuietProducer)."""
    return BatchTransaction(
        producer,
        "t.log",
        3,
        CODEC,
        ReplyRoutes(frozenset()),
        lambda: None,
        forget,
        rewind,
        ProcessingMetrics(),
    )


def reply_routes(topic: str) -> ReplyRoutes:
    """The harnesses answer to their one-partition replies topic."""
    routes = ReplyRoutes(frozenset({topic}))
    routes.update({topic: 1})
    return routes


class Harness:
    """What both scenario harnesses (this in-memory one and the real-broker one) share: the
    clock, due-date processing, and queries over the records they have read."""

    engine: Engine
    machines: list[ProcessingStateMachine]
    dbs: list[PartitionDb]
    now: float

    def run(self) -> None:
        raise NotImplementedError

    def records(self, partition: int) -> list[Record]:
        raise NotImplementedError

    def advance(self, seconds: float) -> None:
        """Move the clock and let every partition's due-date checkers turn due work into
        commands, then process until quiet."""
        self.now += seconds
        now_ms = int(self.now * 1000)
        for partition, machine in enumerate(self.machines):
            due = [
                command
                for checker in self.engine.due_date_checkers
                for command in checker(self.dbs[partition], now_ms)
            ]
            if due:
                machine.process((), due=due)
        self.run()

    def events(self, partition: int) -> list[Record]:
        return [r for r in self.records(partition) if r.record_type is RecordType.EVENT]

    def results_of(self, partition: int, position: int) -> list[Record]:
        return [
            r
            for r in self.records(partition)
            if r.record_type is not RecordType.COMMAND and r.source_record_position == position
        ]


class MemoryEngine(Harness):
    """Partitions of one engine over the in-memory log; `run()` processes until quiet."""

    TOPIC = "mem.log"
    REPLIES = "mem.replies"

    def __init__(
        self,
        engine: Engine,
        home: Path,
        partitions: int = 3,
        clock: Callable[[], float] | None = None,
        job_push: JobPush | None = None,
    ) -> None:
        self.kafka = MemoryKafka()
        self.engine = engine
        if job_push is not None:  # this push (its topics, limits) instead of the engine's own
            engine.topic_hooks[:] = [
                h for h in engine.topic_hooks if not isinstance(h, JobPush)
            ] + [job_push]
        self.partitions = partitions
        self.now = 1_764_000_000.0
        self.machines: list[ProcessingStateMachine] = []
        self.dbs: list[PartitionDb] = []
        for partition in range(partitions):
            db = PartitionDb(home / f"partition-{partition}")
            self.dbs.append(db)
            self.machines.append(
                ProcessingStateMachine(
                    topic=self.TOPIC,
                    partition=partition,
                    partition_count=partitions,
                    engine=engine,
                    codec=CODEC,
                    db=db,
                    keys=KeyGenerator(db, partition + 1),
                    producer=MemoryProducer(self.kafka),
                    group_metadata=lambda: None,
                    rewind=lambda offset, ingress: None,
                    replies=reply_routes(self.REPLIES),
                    next_offset=0,
                    clock=clock or (lambda: self.now),
                )
            )

    def send(self, partition: int, record: Record, reply: ReplyTo | None = None) -> int:
        """Append a command; returns its offset."""
        headers = list(record_headers(record)) + (reply.headers() if reply else [])
        return self.kafka.append(self.TOPIC, partition, CODEC.encode(record), headers).offset()

    def run(self, rounds: int = 100) -> None:
        for _ in range(rounds):
            progressed = False
            for partition, machine in enumerate(self.machines):
                log = self.kafka.log(self.TOPIC, partition)
                pending = log[machine.next_offset :]
                if pending:
                    machine.process(pending)
                    progressed = True
            if not progressed:
                return
        raise AssertionError("the engine did not become quiet")

    def records(self, partition: int) -> list[Record]:
        return [
            CODEC.decode(m.value(), offset=m.offset())
            for m in self.kafka.log(self.TOPIC, partition)
        ]

    def replies(self) -> list[tuple[bytes, Record]]:
        """(correlation id, record) of every reply written."""
        return [
            (dict(m.headers())["kafka_correlationId"], CODEC.decode(m.value()))
            for m in self.kafka.log(self.REPLIES, 0)
        ]

    def assert_replay_matches(self, home: Path) -> None:
        """Rebuild every partition from its events alone (appliers only) into fresh stores:
        the digests must equal the live ones."""
        for partition, live in enumerate(self.dbs):
            fresh = PartitionDb(home / f"replayed-{partition}")
            keys = KeyGenerator(fresh, partition + 1)
            try:
                for record in self.events(partition):
                    self.engine.apply(record, fresh)
                    keys.set_key_if_higher(record.key)
                fresh.commit()
                assert fresh.digest() == live.digest(), (
                    f"partition {partition} differs after replay"
                )
            finally:
                fresh.close()

    def close(self) -> None:
        for db in self.dbs:
            db.close()

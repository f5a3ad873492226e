"""What the chaos run checks, read from the log itself.

`LogTracker` follows every partition of the log read_committed and keeps, per creation number
`n` (a variable of every instance the run creates): the instances created for it and how often
each completed, and per job the COMPLETED events. `aborted_offsets` reads the log a second
time read_uncommitted: records there and not in the committed view belong to aborted
transactions (left by killed or fenced workers), and none of them may be visible.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, TopicPartition

from engine.protocol.codec import RecordCodec
from engine.protocol.enums import BpmnElementType, RecordType
from engine.protocol.errors import ProtocolError
from engine.protocol.intents import JobIntent, ProcessInstanceCreationIntent, ProcessInstanceIntent
from engine.protocol.values import ProcessInstanceCreationValue, ProcessInstanceValue


@dataclass(slots=True)
class Findings:
    created: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    """Creation number n -> instance keys created for it (more than one: duplicated)."""
    completed: Counter[int] = field(default_factory=Counter)
    """Instance key -> ELEMENT_COMPLETED events of the process (more than one: duplicated)."""
    jobs_completed: Counter[int] = field(default_factory=Counter)
    results: Counter[tuple[int, int, str, int]] = field(default_factory=Counter)
    """(partition, source command position, intent, key) of every event: a command whose
    events were committed twice (a zombie's transaction) shows up as a count above one."""
    offsets: dict[int, set[int]] = field(default_factory=lambda: defaultdict(set))
    """Committed offsets seen, per partition."""

    def lost(self, sent: set[int]) -> list[int]:
        """Creation numbers sent without a completed instance."""
        return sorted(
            n for n in sent if not any(self.completed[k] for k in self.created.get(n, []))
        )

    def duplicated(self) -> dict[str, int]:
        return {
            "instances_created_twice": sum(1 for keys in self.created.values() if len(keys) > 1),
            "instances_completed_twice": sum(1 for n in self.completed.values() if n > 1),
            "jobs_completed_twice": sum(1 for n in self.jobs_completed.values() if n > 1),
            "events_written_twice": sum(1 for n in self.results.values() if n > 1),
        }


_QUIET = logging.getLogger("partita.chaos.kafka")


class LogTracker:
    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.topic = topic
        self.codec = RecordCodec()
        self.findings = Findings()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "chaos-tracker",  # assign only
                "enable.auto.commit": False,
                "logger": _QUIET,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 100,
            }
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])

    def poll(self, seconds: float) -> None:
        """Read what arrived within `seconds`."""
        for message in self.consumer.consume(num_messages=5000, timeout=seconds):
            if message.error() is not None:
                continue
            self._take(
                int(message.partition() or 0), int(message.offset() or 0), message.value() or b""
            )

    def _take(self, partition: int, offset: int, data: bytes) -> None:
        found = self.findings
        found.offsets[partition].add(offset)
        try:
            record = self.codec.decode(data, partition=partition, offset=offset)
        except ProtocolError:
            return
        if record.record_type is not RecordType.EVENT:
            return
        found.results[
            (partition, record.source_record_position, record.intent.name, record.key)
        ] += 1
        value = record.value
        if record.intent is ProcessInstanceCreationIntent.CREATED:
            assert isinstance(value, ProcessInstanceCreationValue)
            n = json.loads(value.variables or "{}").get("n")
            if isinstance(n, int):
                found.created[n].append(record.key)
        elif (
            record.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
            and isinstance(value, ProcessInstanceValue)
            and value.bpmn_element_type is BpmnElementType.PROCESS
        ):
            found.completed[record.key] += 1
        elif record.intent is JobIntent.COMPLETED:
            found.jobs_completed[record.key] += 1

    def close(self) -> None:
        self.consumer.close()


def uncommitted_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, set[int]]:
    """Offsets of data records per partition, read_uncommitted (transaction markers are never
    delivered, so they are not among them)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "chaos-uncommitted",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_uncommitted",
        }
    )
    seen: dict[int, set[int]] = defaultdict(set)
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        at_end = 0
        while at_end < partitions:
            message = consumer.poll(10)
            if message is None:
                break
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:  # one per partition
                    at_end += 1
                continue
            seen[int(message.partition() or 0)].add(int(message.offset() or 0))
    finally:
        consumer.close()
    return seen

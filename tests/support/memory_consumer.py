"""An assign-only consumer over the in-memory log (tests/support/memory.py) with the surface
replay and standbys use: watermarks, assign/unassign, consume, position, close."""

from __future__ import annotations

from typing import Any

from confluent_kafka import TopicPartition

from tests.support.memory import MemoryKafka, Message


class MemoryConsumer:
    """Reads one or more partitions of a MemoryKafka from the assigned offsets."""

    def __init__(self, kafka: MemoryKafka) -> None:
        self.kafka = kafka
        self.positions: dict[tuple[str, int], int] = {}
        self.closed = False

    def get_watermark_offsets(self, tp: TopicPartition, **_: Any) -> tuple[int, int]:
        return 0, len(self.kafka.log(tp.topic, tp.partition))

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.positions = {(tp.topic, tp.partition): max(tp.offset, 0) for tp in partitions}

    def unassign(self) -> None:
        self.positions = {}

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        out: list[Message] = []
        for (topic, partition), offset in self.positions.items():
            found = self.kafka.log(topic, partition)[offset : offset + num_messages - len(out)]
            self.positions[topic, partition] = offset + len(found)
            out.extend(found)
        return out

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self.positions.get((tp.topic, tp.partition), -1))
            for tp in partitions
        ]

    def close(self) -> None:
        self.closed = True

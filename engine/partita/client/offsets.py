"""Which job-topic offsets a job worker may commit: at least once for pushed jobs.

A job topic partition's offset is committable only up to the first record with a job the
engine has not yet answered, so a worker that stops or dies leaves exactly its unanswered jobs
to the partition's next owner, and never a job it answered (whose task would run twice).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition


@dataclass(frozen=True, slots=True, eq=False)
class Taken:
    """One consumed job record (at least once): where it is, and how many of its jobs are
    taken. Compared by identity: a record consumed twice (after a seek) is two."""

    consumer: Consumer
    where: tuple[str, int]
    """(topic, partition)"""
    offset: int


class ConsumedOffsets:
    """At least once for pushed jobs: a job topic partition's offset is stored (for the
    auto-commit) and committable only up to the first record with a job not yet settled, a
    job being settled once the engine replied to its answer. A worker killed mid-job thus
    leaves its jobs to the partition's next owner instead of to the job's deadline. Jobs finish
    in any order (concurrency); offsets advance in order. Never raises for a partition that was
    revoked meanwhile: its new owner decides."""

    def __init__(self) -> None:
        self._open: dict[tuple[int, str, int], dict[int, tuple[Taken, int]]] = {}
        """(consumer id, topic, partition) -> offset of a record -> it, and its jobs not
        settled."""
        self._next: dict[tuple[int, str, int], int] = {}
        """(consumer id, topic, partition) -> the offset after the last record taken."""
        self._stored: dict[tuple[int, str, int], tuple[Consumer, int]] = {}
        """(consumer id, topic, partition) -> the offset stored last, not yet committed."""

    def taken(self, consumer: Consumer, message: Any, jobs: int) -> Taken:
        """Track `message`, a record of which `jobs` jobs are taken (0: settled at once)."""
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        key = (id(consumer), topic, partition)
        taken = Taken(consumer, (topic, partition), offset)
        self._open.setdefault(key, {})[offset] = (taken, jobs)
        self._next[key] = max(self._next.get(key, 0), offset + 1)
        if not jobs:
            self._advance(taken, 0)
        return taken

    def settled(self, taken: Taken) -> None:
        """One job of the record `taken` is settled."""
        self._advance(taken, 1)

    def _advance(self, taken: Taken, jobs: int) -> None:
        key = (id(taken.consumer), *taken.where)
        waiting = self._open.get(key, {})
        record, left = waiting.get(taken.offset, (None, 0))
        if record is not taken:
            return  # forgotten (revoked or lost), or consumed again since
        if left - jobs > 0:
            waiting[taken.offset] = (taken, left - jobs)
            return
        del waiting[taken.offset]
        store = min(waiting) if waiting else self._next[key]
        self._stored[key] = (taken.consumer, store)
        with contextlib.suppress(KafkaException):
            taken.consumer.store_offsets(offsets=[TopicPartition(*taken.where, store)])

    def committable(
        self, consumer: Consumer, only: set[tuple[str, int]] | None = None
    ) -> list[TopicPartition]:
        """The offsets stored for `consumer` (on `only` partitions) since the last call."""
        found = []
        for key, (owner, offset) in list(self._stored.items()):
            if owner is consumer and (only is None or key[1:] in only):
                found.append(TopicPartition(key[1], key[2], offset))
                del self._stored[key]
        return found

    def forget(self, consumer: Consumer, partitions: set[tuple[str, int]]) -> None:
        """Stop tracking `partitions` of `consumer`: they are not ours any more."""
        for key in [k for k in self._open if k[0] == id(consumer) and k[1:] in partitions]:
            self._open.pop(key, None)
            self._next.pop(key, None)
            self._stored.pop(key, None)

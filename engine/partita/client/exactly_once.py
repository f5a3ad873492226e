"""Exactly-once job workers (`JobWorker(exactly_once=True)`, push only): each batch of consumed
jobs is worked, then its answers and the consumed offsets are committed in one Kafka
transaction, so a job's answer is on the log if and only if its push record counts as consumed.

A worker killed mid-batch leaves nothing behind, and whoever gets the partition next works those
jobs again. The transaction opens only after the tasks have run, so it lasts milliseconds: an
open transaction holds back what read_committed readers (the engine) see on the log partitions
it wrote to. Its transactional id is `<ns>.workers.<type>.<name>`: give every worker process its
own name that stays the same across restarts, so a restarted worker aborts what its crashed
predecessor left open at once.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from partita.client.connection import producer_config
from partita.client.jobs_in_hand import JobsInHand
from partita.errors import PartitaError
from partita.log.clients import consume_available, new_producer

_LOG = logging.getLogger("partita.jobworker")
TRANSACTION_TIMEOUT_MS = 10_000


class ExactlyOnceBatches:
    """The transactions of one exactly-once worker named `name`, working through `hand`."""

    def __init__(self, hand: JobsInHand, namespace: str, name: str) -> None:
        self.hand = hand
        self.namespace = namespace
        self.name = name

    def producer(self, job_type: str) -> Producer:
        """The transactional producer of `job_type`'s answers, its predecessor fenced."""
        producer = new_producer(
            self.hand.client.connection.access,
            {
                **producer_config(),
                "transactional.id": f"{self.namespace}.workers.{job_type}.{self.name}",
                "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
            },
        )
        producer.init_transactions(30)
        return producer

    def transact(self, consumer: Consumer, producer: Producer, wait: float = 0.0) -> int:
        """Work one batch of pushed jobs (waiting up to `wait` seconds for the first), then
        commit its answers and offsets in one transaction. Returns the jobs in the batch."""
        hand = self.hand
        messages: list[Any] = [
            m for m in consume_available(consumer, hand.concurrency, wait) if not m.error()
        ]
        if not messages:
            return 0
        jobs = hand.pushed(messages)
        outcomes = hand.work(jobs)
        offsets: dict[tuple[str, int], int] = {}
        for message in messages:
            offsets[(message.topic(), message.partition())] = message.offset() + 1
        try:
            producer.begin_transaction()
            sent = {}
            for key, (_, request) in outcomes:
                sent[hand.client.connection.produce(request, producer=producer)] = key
            producer.send_offsets_to_transaction(
                [TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                consumer.consumer_group_metadata(),
            )
            producer.commit_transaction()
        except KafkaException as exc:
            self._abort(consumer, producer, messages, exc)
            return len(jobs)
        hand.stats.transactions += 1
        for _, (kind, _) in outcomes:
            hand.stats.count(kind)
        hand.sent(sent)
        return len(jobs)

    def _abort(
        self, consumer: Consumer, producer: Producer, messages: list[Any], exc: KafkaException
    ) -> None:
        """The batch's transaction failed: abort it and rewind, so its jobs are worked again
        (here, or by the next owner of the partition). A fenced worker cannot go on."""
        error = exc.args[0]
        if error.fatal():
            raise PartitaError(
                f"job worker {self.name!r} was fenced ({error.str()}): another process uses the"
                " same name; give every worker process its own --name"
            ) from None
        _LOG.warning(
            "transaction of %d jobs aborted, working them again: %s", len(messages), error.str()
        )
        self.hand.stats.aborted += 1
        if error.txn_requires_abort():
            producer.abort_transaction(30)
        first: dict[tuple[str, int], int] = {}
        for message in messages:
            first.setdefault((message.topic(), message.partition()), message.offset())
        for (topic, partition), offset in first.items():
            # revoked meanwhile: its next owner starts from the committed offset
            with contextlib.suppress(KafkaException):
                consumer.seek(TopicPartition(topic, partition, offset))

"""confluent-kafka client configurations of the engine, in one place.

- The group consumer reads `read_committed`, commits offsets only inside transactions
  (`enable.auto.commit=false`) and uses cooperative rebalancing, so a rebalance moves only the
  partitions that change owner.
- Each partition task has its own transactional producer with `transactional.id =
  <ns>.engine.<partition>`: the id is stable per partition, so whoever owns a partition next
  fences the previous owner in `init_transactions()`.
"""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import Consumer, Message, Producer

from engine.protocol.codec import PRODUCER_MAX_BYTES

_LOG = logging.getLogger("partita.kafka")


def engine_group(namespace: str) -> str:
    return f"{namespace}.engine"


def transactional_id(namespace: str, partition: int) -> str:
    return f"{namespace}.engine.{partition}"


def group_consumer(bootstrap: str, namespace: str, **overrides: Any) -> Consumer:
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": engine_group(namespace),
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "partition.assignment.strategy": "cooperative-sticky",
        "session.timeout.ms": 6000,  # the broker minimum: a crashed worker is replaced fast
        "heartbeat.interval.ms": 1000,
        "max.poll.interval.ms": 300000,
        "fetch.wait.max.ms": 10,
        "logger": _LOG,
    }
    conf.update(overrides)
    return Consumer(conf)


def restore_consumer(bootstrap: str, namespace: str, partition: int) -> Consumer:
    """An assign-only consumer that reads one partition's events during replay (also standbys,
    verify-replay and snapshot restore). `auto.offset.reset=error`: a position the log no
    longer holds is an error, never a silent jump to wherever the log now starts or ends."""
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{namespace}.restore.{partition}",  # never joins or commits
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
            "fetch.wait.max.ms": 10,
            "logger": _LOG,
        }
    )


def transactional_producer(bootstrap: str, namespace: str, partition: int) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id(namespace, partition),
            "transaction.timeout.ms": 30000,
            "linger.ms": 1,
            "retry.backoff.ms": 10,  # back-to-back transactions (confluent-kafka-python #967)
            "message.max.bytes": PRODUCER_MAX_BYTES,
            "logger": _LOG,
        }
    )


def consume_available(consumer: Consumer, max_messages: int, timeout: float) -> list[Message]:
    """Up to `max_messages` messages: whatever is already fetched, else wait up to `timeout`
    for the first one and take what arrived with it. (`Consumer.consume` waits for the whole
    batch or the whole timeout, which adds its timeout to every hop under light load.)"""
    messages: list[Message] = consumer.consume(num_messages=max_messages, timeout=0)
    if messages or timeout <= 0:
        return messages
    first = consumer.poll(timeout)
    if first is None:
        return []
    return [first, *consumer.consume(num_messages=max_messages - 1, timeout=0)]

"""The cluster as Zeebe's clients see it: engine workers as brokers, Kafka partitions as Zeebe's.

Each member of the engine's consumer group (`<ns>.engine`) is a broker (node ids in the order of
their member ids, host as Kafka saw it); each partition it owns is a Zeebe partition (Zeebe
counts from 1: Kafka partition p is partition p + 1) where it is LEADER. A partition is HEALTHY
when fewer client commands wait on it than the backpressure limit, else UNHEALTHY. A partition
that no worker owns (none runs, or a rebalance moves it) is under no broker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from partita.config import Config
from partita.log.clients import engine_group

_TIMEOUT_S = 5.0
_LAST: dict[str, Topology] = {}
"""The last topology seen, by namespace: a busy coordinator's timeout or a rebalance (whose
members the coordinator lists without assignments, or not at all) does not empty it."""
_MOVING = (ConsumerGroupState.PREPARING_REBALANCING, ConsumerGroupState.COMPLETING_REBALANCING)
PORT = 26501
"""The port a broker of the topology names (Zeebe's command port); clients only show it."""


@dataclass(frozen=True)
class PartitionView:
    partition_id: int
    healthy: bool
    lag: int | None


@dataclass(frozen=True)
class BrokerView:
    node_id: int
    host: str
    member: str
    partitions: list[PartitionView] = field(default_factory=list)


@dataclass(frozen=True)
class Topology:
    brokers: list[BrokerView]
    partitions_count: int
    replication_factor: int


def topology(admin: AdminClient, config: Config, partitions: int) -> Topology:
    """Blocking (admin requests): call it from a thread."""
    group = engine_group(config.namespace)
    try:
        description = admin.describe_consumer_groups([group], request_timeout=_TIMEOUT_S)[
            group
        ].result()
        members = sorted(description.members or [], key=lambda m: m.member_id)
    except KafkaException:  # the coordinator did not answer in time: what it said last
        return _LAST.get(config.namespace) or Topology([], partitions, 1)
    last = _LAST.get(config.namespace)
    if description.state in _MOVING and last is not None:
        return last  # partitions are changing hands: who had them, until the group settles
    return _seen(admin, config, partitions, group, members)


def _seen(
    admin: AdminClient, config: Config, partitions: int, group: str, members: list[Any]
) -> Topology:
    lags = _lags(admin, config, group)
    brokers = []
    for node_id, member in enumerate(members):
        owned = sorted(
            tp.partition
            for tp in member.assignment.topic_partitions or []
            if tp.topic == config.log_topic
        )
        views = [
            PartitionView(p + 1, _healthy(lags.get(p), config.backpressure_lag), lags.get(p))
            for p in owned
        ]
        host = (member.host or "").lstrip("/") or "unknown"
        brokers.append(BrokerView(node_id, host, member.client_id, views))
    seen = Topology(brokers, partitions, _replication(admin, config.log_topic))
    _LAST[config.namespace] = seen
    return seen


def _replication(admin: AdminClient, topic: str) -> int:
    """The log's replication factor, as Kafka has it (the setting may say "broker default")."""
    try:
        found = admin.list_topics(topic, timeout=_TIMEOUT_S).topics.get(topic)
    except KafkaException:
        return 1
    if found is None or not found.partitions:
        return 1
    return len(found.partitions[0].replicas)


def _healthy(lag: int | None, limit: int) -> bool:
    """None: nothing committed on the partition yet, so nothing waits either."""
    return lag is None or limit <= 0 or lag < limit


def _lags(admin: AdminClient, config: Config, group: str) -> dict[int, int]:
    """Client commands waiting on each partition of `<ns>.commands`, from the engine group's
    committed offsets and the topic's ends."""
    try:
        result = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=_TIMEOUT_S
        )
        committed = {
            tp.partition: tp.offset
            for tp in result[group].result().topic_partitions or []
            if tp.topic == config.commands_topic
        }
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        ends = admin.list_offsets(
            {TopicPartition(config.commands_topic, p): latest for p in committed},
            request_timeout=_TIMEOUT_S,
        )
        return {
            tp.partition: max(future.result().offset - max(committed[tp.partition], 0), 0)
            for tp, future in ends.items()
        }
    except KafkaException:
        return {}

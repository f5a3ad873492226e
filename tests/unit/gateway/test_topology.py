"""The gateway's topology while the engine group rebalances: who had the partitions, not an
empty cluster (zbctl status once showed `Cluster size: 0` mid-rebalance)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from confluent_kafka import ConsumerGroupState

from partita.config import Config
from partita.gateway import topology
from partita.gateway.topology import BrokerView, PartitionView, Topology


@dataclass
class _Described:
    state: ConsumerGroupState
    members: list[Any]


class _Done:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class _Admin:
    def __init__(self, described: _Described) -> None:
        self.described = described

    def describe_consumer_groups(self, groups: list[str], request_timeout: float) -> Any:
        return {group: _Done(self.described) for group in groups}


def test_a_rebalancing_group_shows_the_last_settled_owners() -> None:
    config = replace(Config.from_env({}), namespace="topology-test")
    settled = Topology([BrokerView(0, "10.0.0.1", "worker-1", [PartitionView(1, True, 0)])], 3, 1)
    topology._LAST[config.namespace] = settled
    try:
        for state in (
            ConsumerGroupState.PREPARING_REBALANCING,
            ConsumerGroupState.COMPLETING_REBALANCING,
        ):
            admin = _Admin(_Described(state, []))
            assert topology.topology(admin, config, 3) is settled  # type: ignore[arg-type]
    finally:
        del topology._LAST[config.namespace]

"""What the snapshot tests (tests/integration/test_snapshots.py, test_snapshot_store.py) share:
a one-partition namespace of their own and the manifests on its snapshots topic."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from partita.config import Config
from partita.snapshots import store
from tests.support.worker_processes import create_topics


def snapshot_config(bootstrap: str, home: Path) -> Config:
    config = Config(
        bootstrap_servers=bootstrap, namespace=f"s{uuid.uuid4().hex[:8]}", home=home, partitions=1
    )
    create_topics(config)
    return config


def manifests(config: Config) -> list[Any]:
    """The complete snapshots of partition 0, newest first (what restore tries, in order)."""
    consumer = Consumer(
        {"bootstrap.servers": config.bootstrap, "group.id": "m", "enable.partition.eof": True}
    )
    try:
        return store.manifests(consumer, config.snapshots_topic, 0)
    finally:
        consumer.close()

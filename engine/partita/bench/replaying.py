"""A partition's whole log replayed into an empty store, timed: what a node without local
state and without a snapshot does (`bench e2e` and `bench recovery` report it)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from partita.config import Config, KafkaRole
from partita.log import clients
from partita.log.security import kafka_access
from partita.processing.builtin import build_engine
from partita.protocol.codec import RecordCodec
from partita.protocol.keys import partition_id_of_kafka
from partita.state import KeyGenerator, PartitionDb
from partita.stream.replay.state_machine import ReplayStateMachine


def replay_partition(config: Config, partition: int) -> dict[str, float]:
    """Events applied, seconds, events/s."""
    with tempfile.TemporaryDirectory(prefix="partita-bench-replay-") as scratch:
        db = PartitionDb(Path(scratch) / "state")
        consumer = clients.restore_consumer(
            kafka_access(config, KafkaRole.ENGINE), config.namespace, partition
        )
        try:
            keys = KeyGenerator(db, partition_id_of_kafka(partition))
            result = ReplayStateMachine(
                consumer, config.log_topic, partition, build_engine(), RecordCodec(), db, keys
            ).run()
        finally:
            consumer.close()
            db.close()
    return {
        "events": result.events,
        "seconds": round(result.seconds, 2),
        "events_per_s": round(result.events / max(result.seconds, 1e-9)),
    }

"""`partita verify-replay`: prove that replay rebuilds exactly the state processing built.

The live store of a partition is opened read-only (a running worker keeps it); a fresh store
is built by applying the partition's events from the start of the log up to the live store's
last applied position; the two digests must be equal.

An event the replay cannot apply ends the verification of that partition with
UnappliableRecordError (a PartitaError: `partita verify-replay` prints it and exits 1). Events
at the positions of the skip list are left out, as the workers leave them out: run it with the
workers' PARTITA_SKIP_RECORDS.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.log import clients
from partita.log.security import kafka_access
from partita.processing import Engine
from partita.protocol.codec import RecordCodec
from partita.state import PartitionDb
from partita.state.db import LAST_APPLIED_POSITION
from partita.stream.partition.task import state_dir
from partita.stream.replay.restorer import Mode, Restorer
from partita.stream.skips import SkipList, of_config


@dataclass(frozen=True, slots=True)
class Verification:
    partition: int
    position: int
    live_digest: str
    replayed_digest: str
    events: int

    @property
    def equal(self) -> bool:
        return self.live_digest == self.replayed_digest


def verify_replay(
    config: Config, engine: Engine, partition: int, *, skips: SkipList | None = None
) -> Verification:
    """Rebuild `partition` from the log into a scratch store and compare it with the live one.
    `skips` None: the config's PARTITA_SKIP_RECORDS. UnappliableRecordError at an event the
    replay cannot apply; PartitaError when there is no live store or the log cannot be
    replayed from its start."""
    access = kafka_access(config, KafkaRole.ENGINE)
    live_path = state_dir(config.home, config.namespace, partition)
    if not live_path.exists():
        raise PartitaError(f"no state store for partition {partition} at {live_path}")
    with PartitionDb(live_path, read_only=True) as live:
        position = live.position(LAST_APPLIED_POSITION)
        live_digest = live.digest()
    scratch = Path(tempfile.mkdtemp(prefix=f"partita-verify-{partition}-"))
    restorer = Restorer(
        access,
        config.namespace,
        config.log_topic,
        partition,
        engine,
        RecordCodec(native=config.native_wanted),
        Mode.VERIFY,
        of_config(config) if skips is None else skips,
    )
    consumer = clients.restore_consumer(access, config.namespace, partition)
    try:
        opened, _keys, result = restorer.replay(scratch / "replayed", consumer, until=position)
        return Verification(partition, position, live_digest, opened.db.digest(), result.events)
    finally:
        consumer.close()
        if restorer.opened is not None:
            restorer.opened.db.close()
        shutil.rmtree(scratch, ignore_errors=True)

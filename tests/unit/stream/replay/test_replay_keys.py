"""Replay rebuilds the key generator past every key the partition handed out, including the
keys of follow-up commands that were spilled to the log and not processed yet (no event of
theirs exists), and never past a key a client chose."""

from __future__ import annotations

from pathlib import Path

from partita.processing.builtin import build_engine
from partita.protocol.codec import RecordCodec
from partita.protocol.headers import INGRESS_OFFSET, record_headers
from partita.protocol.intents import JobIntent, ProcessInstanceIntent
from partita.protocol.keys import encode_key
from partita.protocol.records import command
from partita.protocol.values import JobValue, ProcessInstanceValue
from partita.state import KeyGenerator, PartitionDb
from partita.stream.processing.transaction import command_key
from partita.stream.replay.state_machine import ReplayStateMachine
from partita.stream.skips import NO_SKIPS
from tests.support.memory import MemoryKafka
from tests.support.memory_consumer import MemoryConsumer

TOPIC = "mem.log"
CODEC = RecordCodec()


def test_replay_raises_the_key_generator_past_a_spilled_command(tmp_path: Path) -> None:
    kafka = MemoryKafka()
    spilled = command(
        ProcessInstanceIntent.ACTIVATE_ELEMENT,
        ProcessInstanceValue(element_id="inner"),
        encode_key(1, 500),
    )
    kafka.append(
        TOPIC, 0, CODEC.encode(spilled), list(record_headers(spilled)), command_key(spilled)
    )
    chosen = command(JobIntent.COMPLETE, JobValue(), encode_key(1, 9_000))  # a client's copy
    kafka.append(TOPIC, 0, CODEC.encode(chosen), [*record_headers(chosen), (INGRESS_OFFSET, b"0")])
    with PartitionDb(tmp_path / "db") as db:
        keys = KeyGenerator(db, 1)
        ReplayStateMachine(
            MemoryConsumer(kafka), TOPIC, 0, build_engine(), CODEC, db, keys, skips=NO_SKIPS
        ).run()
        assert keys.next_key() == encode_key(1, 501)

"""Replay, standbys and verify-replay on a log holding an EVENT they cannot apply: a typed
error naming partition, offset, value type and intent, and the skip list gets past it."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from partita.config import Config, KafkaRole
from partita.errors import ConfigError
from partita.log.security import KafkaAccess
from partita.processing.builtin import build_engine
from partita.protocol.headers import record_headers
from partita.protocol.intents import JobBatchIntent, VariableIntent
from partita.protocol.keys import partition_id_of_kafka
from partita.protocol.records import event
from partita.protocol.values import JobBatchValue, JobValue, VariableValue
from partita.state import KeyGenerator, PartitionDb
from partita.state.db import LAST_APPLIED_POSITION
from partita.stream.errors import UnappliableRecordError
from partita.stream.partition.stopped import StoppedMarker, decode, encode
from partita.stream.partition.task import state_dir
from partita.stream.replay import restorer as restorer_module
from partita.stream.replay import standby as standby_module
from partita.stream.replay import verify as verify_module
from partita.stream.replay.standby import Standby
from partita.stream.replay.state_machine import ReplayStateMachine
from partita.stream.replay.verify import verify_replay
from partita.stream.skips import NO_SKIPS, SkipList, of_config, parse
from tests.support.memory import CODEC, MemoryKafka
from tests.support.memory_consumer import MemoryConsumer

TOPIC = "mem.log"
PARTITION = 1
ENGINE = build_engine()
BAD = 3
"""The offset of the record no replay can apply; the log has good events before and after."""


def _variable(index: int) -> bytes:
    key = (partition_id_of_kafka(PARTITION) << 51) | (index + 1)
    return CODEC.encode(event(VariableIntent.CREATED, VariableValue(f"v{index}", "1", 7), key))


def _log(bad: str) -> MemoryKafka:
    """Events 0-2 and 4-5 apply; the event at BAD is a JOB_BATCH ACTIVATED that does not
    decode (`garbage`) or that activates a job this partition never created (`unknown job`)."""
    kafka = MemoryKafka()
    activated = event(
        JobBatchIntent.ACTIVATED,
        JobBatchValue(type="t", worker="w", job_keys=(12345,), jobs=(JobValue(type="t"),)),
        (partition_id_of_kafka(PARTITION) << 51) | 999,
    )
    for index in range(6):
        if index == BAD:
            body = b"\xc3\x01not avro at all" if bad == "garbage" else CODEC.encode(activated)
            kafka.append(TOPIC, PARTITION, body, list(record_headers(activated)))
        else:
            headers = list(record_headers(CODEC.decode(_variable(index))))
            kafka.append(TOPIC, PARTITION, _variable(index), headers)
    return kafka


def _replay(kafka: MemoryKafka, path: Path, skips: SkipList = NO_SKIPS) -> PartitionDb:
    db = PartitionDb(path)
    keys = KeyGenerator(db, partition_id_of_kafka(PARTITION))
    ReplayStateMachine(
        MemoryConsumer(kafka), TOPIC, PARTITION, ENGINE, CODEC, db, keys, skips=skips
    ).run()
    return db


def _digest_without_bad(path: Path) -> str:
    """The state of the log's good events alone."""
    db = PartitionDb(path)
    keys = KeyGenerator(db, partition_id_of_kafka(PARTITION))
    try:
        for index in range(6):
            if index != BAD:
                record = CODEC.decode(_variable(index))
                ENGINE.apply(record, db)
                keys.set_key_if_higher(record.key)
        db.commit()
        return db.digest()
    finally:
        db.close()


@pytest.mark.parametrize(
    ("bad", "cause"),
    [("garbage", "its body does not decode"), ("unknown job", "KeyNotFoundError")],
)
def test_replay_stops_with_a_typed_error_naming_the_record(
    tmp_path: Path, bad: str, cause: str
) -> None:
    with pytest.raises(UnappliableRecordError) as raised:
        _replay(_log(bad), tmp_path / "p")
    error = raised.value
    assert (error.topic, error.partition, error.offset) == (TOPIC, PARTITION, BAD)
    assert (error.value_type, error.intent) == ("JOB_BATCH", "ACTIVATED")
    assert cause in error.cause
    text = str(error)
    assert f"partition {PARTITION}" in text and f"offset {BAD}" in text
    assert "JOB_BATCH ACTIVATED" in text and f"PARTITA_SKIP_RECORDS={PARTITION}:{BAD}" in text


@pytest.mark.parametrize("bad", ["garbage", "unknown job"])
def test_replay_leaves_out_a_skipped_record_every_time(
    tmp_path: Path, bad: str, caplog: pytest.LogCaptureFixture
) -> None:
    skips = SkipList.of([(PARTITION, BAD), (0, BAD)])
    with caplog.at_level(logging.WARNING, "partita.replay"):
        cold = _replay(_log(bad), tmp_path / "cold", skips)
    try:
        assert cold.digest() == _digest_without_bad(tmp_path / "expected")
        assert cold.position(LAST_APPLIED_POSITION) == 5
    finally:
        cold.close()
    warnings = [r.getMessage() for r in caplog.records if "NOT applying" in r.getMessage()]
    assert len(warnings) == 1
    assert f"offset {BAD}" in warnings[0] and "JOB_BATCH ACTIVATED" in warnings[0]


def test_a_skip_on_another_partition_does_not_help(tmp_path: Path) -> None:
    with pytest.raises(UnappliableRecordError):
        _replay(_log("garbage"), tmp_path / "p", SkipList.of([(PARTITION + 1, BAD)]))


def _standby(
    kafka: MemoryKafka, path: Path, monkeypatch: pytest.MonkeyPatch, skips: SkipList
) -> Standby:
    monkeypatch.setattr(
        standby_module.clients, "restore_consumer", lambda *_: MemoryConsumer(kafka)
    )
    monkeypatch.setattr(restorer_module, "restore_snapshot", lambda *_, **__: None)
    return Standby(
        access=KafkaAccess("unused:9092", KafkaRole.ENGINE),
        namespace="mem",
        topic=TOPIC,
        partition=PARTITION,
        path=path,
        engine=ENGINE,
        codec=CODEC,
        skips=skips,
    )


@pytest.mark.parametrize("bad", ["garbage", "unknown job"])
def test_a_standby_stops_once_and_stays_stopped(
    tmp_path: Path, bad: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    kafka = _log(bad)
    standby = _standby(kafka, tmp_path / "p", monkeypatch, NO_SKIPS)
    try:
        with caplog.at_level(logging.ERROR, "partita.standby"):
            assert standby.catch_up() == 0
            kafka.append(TOPIC, PARTITION, _variable(6), [])
            assert standby.catch_up() == 0
            assert standby.catch_up() == 0
        assert standby.stopped is not None and standby.stopped.offset == BAD
        stops = [r for r in caplog.records if "stopped" in r.getMessage()]
        assert len(stops) == 1 and f"offset {BAD}" in stops[0].getMessage()
        assert standby.db.position(LAST_APPLIED_POSITION) == -1  # the failed catch-up rolled back
    finally:
        standby.close()


def test_a_standby_leaves_out_a_skipped_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    standby = _standby(_log("garbage"), tmp_path / "p", monkeypatch, SkipList.of([(1, BAD)]))
    try:
        assert standby.catch_up() == 5
        assert standby.stopped is None
        assert standby.db.digest() == _digest_without_bad(tmp_path / "expected")
    finally:
        standby.close()


def _verify_setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Config, MemoryKafka]:
    """A live store that skipped the bad record (as the workers were told to)."""
    kafka = _log("garbage")
    config = Config(bootstrap_servers="unused:9092", namespace="mem", home=tmp_path)
    assert config.log_topic == TOPIC
    _replay(kafka, state_dir(tmp_path, "mem", PARTITION), SkipList.of([(PARTITION, BAD)])).close()
    monkeypatch.setattr(verify_module.clients, "restore_consumer", lambda *_: MemoryConsumer(kafka))
    return config, kafka


def test_verify_replay_names_the_record_it_cannot_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = _verify_setup(tmp_path, monkeypatch)
    with pytest.raises(UnappliableRecordError, match=f"partition {PARTITION}: .* offset {BAD}"):
        verify_replay(config, ENGINE, PARTITION, skips=NO_SKIPS)


def test_verify_replay_honours_the_skip_list_of_its_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config, _ = _verify_setup(tmp_path, monkeypatch)
    skipping = Config.from_env({"PARTITA_SKIP_RECORDS": f"{PARTITION}:{BAD}"})
    config = dataclasses.replace(config, skip_records=skipping.skip_records)
    result = verify_replay(config, ENGINE, PARTITION)
    assert result.equal and result.events == 5


def test_the_skip_list_parses_positions_and_names_a_bad_item() -> None:
    assert parse(" 2:1234, 0:7,,") == SkipList.of([(2, 1234), (0, 7)])
    assert str(parse("2:1234,0:7")) == "0:7,2:1234"
    assert parse("2:1234").offsets(2) == {1234} and not parse("2:1234").offsets(1)
    assert of_config(Config()) == NO_SKIPS and not NO_SKIPS
    for bad in ("2", "a:1", "2:-1", "1:2:3"):
        with pytest.raises(ConfigError, match="PARTITA_SKIP_RECORDS"):
            parse(bad)


def test_the_stopped_marker_round_trips_within_kafkas_metadata_limit() -> None:
    error = UnappliableRecordError("t.log", 0, 1, "JOB:X", "A\nB", "x" * 10_000)
    marker = encode(error)
    assert len(marker.encode()) < 1200 and marker.startswith("partita-stopped:1:JOB_X:A_B:")
    assert decode(marker) == StoppedMarker(1, "JOB_X", "A_B", "x" * 1000)
    assert decode(None) is None and decode("") is None and decode("something else") is None
    assert decode("partita-stopped:nope:A:B:c") is None

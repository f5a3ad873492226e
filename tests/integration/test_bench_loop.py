"""`partita bench loop` against the test broker: more commands than the backpressure limit
wait at once (the default run did, and waited its whole timeout), and the engine processes
each exactly once: a copy and its events on the bench's log, as the figures assume."""

from __future__ import annotations

from dataclasses import replace

import pytest

from partita.bench import loop
from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.security import kafka_access
from partita.protocol.enums import RecordType
from tests.support.worker_processes import committed_messages

pytestmark = pytest.mark.kafka

COMMANDS = 12_000
"""Over the default backpressure lag (PARTITA_BACKPRESSURE_LAG, 10,000)."""


def test_bench_loop_processes_every_command_once(config: Config, gc_restored: None) -> None:
    assert config.backpressure_lag < COMMANDS
    result = loop.run(config, commands=COMMANDS, keep_topics=True)
    assert result["commands"] == COMMANDS
    assert result["ratio"] == round(result["engine_records_per_s"] / result["raw_records_per_s"], 3)
    bench = replace(config, namespace=result["namespace"], partitions=1)
    log = [record for record, _ in committed_messages(bench, bench.log_topic, 0)]
    copies = [r for r in log if r.record_type is RecordType.COMMAND]
    events = [r for r in log if r.record_type is RecordType.EVENT]
    assert len(copies) == COMMANDS  # nothing turned away, nothing twice
    assert len(events) == COMMANDS * loop.EVENTS_PER_COMMAND
    assert not [r for r in log if r.record_type is RecordType.COMMAND_REJECTION]
    assert {e.source_record_position for e in events} == {c.position for c in copies}


def test_a_bench_deletes_its_topics_and_groups_when_it_ends(config: Config) -> None:
    result = loop.run(config, commands=200)
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    prefix = f"{result['namespace']}."
    assert not [t for t in admin.list_topics(timeout=30).topics if t.startswith(prefix)]
    groups = admin.list_consumer_groups(request_timeout=30).result().valid
    assert not [g.group_id for g in groups if g.group_id.startswith(prefix)]

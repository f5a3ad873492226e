"""`partita bench txn` against the test broker: the transactions it times are the ones it says
(their records, commit markers and sent offsets are on the cluster), every call is timed, and
its scratch topic goes when it ends."""

from __future__ import annotations

from dataclasses import replace

import pytest
from confluent_kafka import TopicPartition

from partita.bench import transactions
from partita.bench.scratch import delete_namespace
from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.clients import new_consumer
from partita.log.security import kafka_access

pytestmark = pytest.mark.kafka

TRANSACTIONS = 25
RECORDS = 3
WARM_UP = 20
"""Transactions of one write `transactions.run` makes before it times any."""


def test_bench_txn_times_the_transactions_it_writes(config: Config) -> None:
    result = transactions.run(config, transactions=TRANSACTIONS, records=RECORDS, keep_topics=True)
    namespace = result["namespace"]
    topic = f"{namespace}.txn"
    try:
        consumer = new_consumer(
            kafka_access(config, KafkaRole.OPERATOR), {"group.id": f"{namespace}.txn-group"}
        )
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
            (committed,) = consumer.committed([TopicPartition(topic, 0)], timeout=30)
        finally:
            consumer.close()
    finally:
        delete_namespace(replace(config, namespace=namespace))
    warm_up = WARM_UP * (RECORDS + 1)  # each transaction: its records and a commit marker
    timed = 2 * TRANSACTIONS * (2 * RECORDS + 1)  # two series of two writes
    plain = (TRANSACTIONS + WARM_UP) * RECORDS  # idempotent, no markers
    assert high == warm_up + timed + plain
    assert committed.offset == TRANSACTIONS  # the last offsets the second series sent
    assert set(result["ms"]) == {"begin", "first_write", "next_write", "commit", "cycle"}
    assert set(result["ms_with_offsets"]) == set(result["ms"]) | {"offsets"}
    for figures in (*result["ms"].values(), *result["ms_with_offsets"].values()):
        assert 0 < figures["p50"] <= figures["p90"] <= figures["p99"]
    cycle = result["ms"]["cycle"]["p50"]
    assert result["ms"]["first_write"]["p50"] <= cycle
    assert result["non_transactional_write_ms"]["p50"] > 0


def test_bench_txn_deletes_its_topic(config: Config) -> None:
    result = transactions.run(config, transactions=2, records=1)
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    prefix = f"{result['namespace']}."
    assert not [t for t in admin.list_topics(timeout=30).topics if t.startswith(prefix)]
    groups = admin.list_consumer_groups(request_timeout=30).result().valid
    assert not [g.group_id for g in groups if g.group_id.startswith(prefix)]

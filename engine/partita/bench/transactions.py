"""`partita bench txn`: what each call of a Kafka transaction costs on this cluster.

The engine's latency has a floor that is Kafka's, not the engine's: every hop of an instance
is a transaction. This benchmark times the calls of bare transactions, made with the engine's
own producer settings on one partition of a scratch topic, one after the other as a busy
partition makes them:

- `begin`: `begin_transaction` (local to the client);
- `first_write`: the first records of the transaction, produced and flushed. librdkafka must
  first add the partition to the transaction (AddPartitionsToTxn, sent after a 1 ms timer of
  its own), and a broker with `transaction.partition.verification.enable` checks it with the
  coordinator before it appends;
- `next_write`: as many records again in the same transaction, flushed: a produce round trip;
- `offsets` (second series only): `send_offsets_to_transaction` of the consumed offset to a
  consumer group, as the engine does every `PARTITA_OFFSETS_COMMIT_MS`;
- `commit`: `commit_transaction` (EndTxn);
- `cycle`: the whole transaction.

`non_transactional_write` flushes the same records through an idempotent producer without a
transaction, for comparison.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.cimpl import NewTopic

from partita.bench.scratch import scratch_namespace
from partita.config import Config, KafkaRole
from partita.demo import percentile
from partita.log import clients
from partita.log.admin import admin_client
from partita.log.security import kafka_access

_TIMEOUT_S = 30.0
_VALUE = b"x" * 150
"""About the size of an engine event."""


def run(
    config: Config,
    *,
    transactions: int = 500,
    records: int = 5,
    keep_topics: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Time `transactions` transactions of 2 x `records` records, then as many that also send
    offsets; p50/p90/p99 in ms per call."""
    with scratch_namespace(config, "txn", keep=keep_topics) as scratch:
        topic = f"{scratch.namespace}.txn"
        admin = admin_client(kafka_access(scratch, KafkaRole.OPERATOR))
        for future in admin.create_topics(
            [NewTopic(topic, 1, max(scratch.replication_factor, -1))], operation_timeout=_TIMEOUT_S
        ).values():
            future.result()
        access = kafka_access(scratch, KafkaRole.ENGINE)
        producer = clients.transactional_producer(access, scratch.namespace, 0)
        producer.init_transactions(_TIMEOUT_S)
        consumer = clients.new_consumer(
            access, {"group.id": f"{scratch.namespace}.txn-group", "enable.auto.commit": False}
        )
        try:
            _warm_up(producer, topic, records)
            progress(f"{transactions} transactions of 2 x {records} records...")
            plain = _series(producer, topic, transactions, records, None)
            progress(f"{transactions} transactions that also send offsets...")
            with_offsets = _series(producer, topic, transactions, records, consumer)
        finally:
            producer.flush(_TIMEOUT_S)
            clients.close_consumer(consumer)
        idempotent = _non_transactional(access, topic, transactions, records)
    return {
        "bench": "txn",
        "transactions": transactions,
        "records_per_write": records,
        "namespace": scratch.namespace,
        "ms": plain,
        "ms_with_offsets": with_offsets,
        "non_transactional_write_ms": idempotent,
    }


def _warm_up(producer: Producer, topic: str, records: int) -> None:
    """Connections, metadata and the coordinator's first answers, left out of the figures."""
    for _ in range(20):
        producer.begin_transaction()
        for _ in range(records):
            producer.produce(topic, _VALUE, partition=0)
        producer.flush(_TIMEOUT_S)
        producer.commit_transaction(_TIMEOUT_S)


def _series(
    producer: Producer, topic: str, transactions: int, records: int, consumer: Consumer | None
) -> dict[str, dict[str, float]]:
    calls: dict[str, list[float]] = {
        name: [] for name in ("begin", "first_write", "next_write", "offsets", "commit", "cycle")
    }
    if consumer is None:
        del calls["offsets"]
    clock = time.perf_counter
    for number in range(transactions):
        started = clock()
        producer.begin_transaction()
        begun = clock()
        for _ in range(records):
            producer.produce(topic, _VALUE, partition=0)
        producer.flush(_TIMEOUT_S)
        written = clock()
        for _ in range(records):
            producer.produce(topic, _VALUE, partition=0)
        producer.flush(_TIMEOUT_S)
        rewritten = clock()
        if consumer is not None:
            offsets = [TopicPartition(topic, 0, number + 1)]
            producer.send_offsets_to_transaction(
                offsets, consumer.consumer_group_metadata(), _TIMEOUT_S
            )
        sent = clock()
        producer.commit_transaction(_TIMEOUT_S)
        ended = clock()
        calls["begin"].append(begun - started)
        calls["first_write"].append(written - begun)
        calls["next_write"].append(rewritten - written)
        if consumer is not None:
            calls["offsets"].append(sent - rewritten)
        calls["commit"].append(ended - sent)
        calls["cycle"].append(ended - started)
    return {name: percentiles_ms(times) for name, times in calls.items()}


def _non_transactional(access: Any, topic: str, writes: int, records: int) -> dict[str, float]:
    producer = clients.new_producer(access, {"enable.idempotence": True, "linger.ms": 1})
    times: list[float] = []
    for number in range(writes + 20):
        started = time.perf_counter()
        for _ in range(records):
            producer.produce(topic, _VALUE, partition=0)
        producer.flush(_TIMEOUT_S)
        if number >= 20:  # the first ones connect
            times.append(time.perf_counter() - started)
    return percentiles_ms(times)


def percentiles_ms(seconds: list[float]) -> dict[str, float]:
    """p50, p90 and p99 of `seconds`, in ms to the µs."""
    ordered = sorted(seconds)
    return {
        name: round(percentile(ordered, fraction) * 1000, 3)
        for name, fraction in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
    }

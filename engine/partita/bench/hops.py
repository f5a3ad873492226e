"""Where a one-task instance's time goes, hop by hop, read back from the timestamps Kafka keeps
(for the order-demo workload: up to its first job).

Every producer stamps its records with the time it produced them (CreateTime), and the engine's
copy of a client command names the command's ingress offset. After a latency phase, the topics
tell for each instance:

- `create_pickup`: the client produced its create command -> the engine produced its copy to
  the log (the wait for the engine's next batch, and with predicted positions the batch's
  processing, which comes before the copy is produced);
- `job`: the engine produced the job's CREATED event -> the job worker produced its answer
  (the transaction's commit, the job's way to the worker, the task);
- `completion_pickup`: the job worker produced the answer -> the engine produced its copy;
- `create_to_completed`: the create command -> the engine produced the job's COMPLETED event.

The reply's way back (the last commit and the client's fetch) is the client's latency minus
`create_to_completed`. `transactions_per_s` and `ms_between_transactions` come from the gaps
commit markers leave in the log's offsets: how often the engine (or the relay) committed.

The raw journey's relay is measured the same way (`partita.bench.journey.journey_hops`), so
the two can be compared hop by hop. Timestamps have millisecond resolution, and every producer
must share a clock (they run on this machine in the benches).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

from confluent_kafka import KafkaError, Message, TopicPartition

from partita.config import Config, KafkaRole
from partita.log.clients import new_consumer
from partita.log.security import kafka_access
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RecordType, ValueType
from partita.protocol.headers import INGRESS_OFFSET, INTENT, VALUE_TYPE, header
from partita.protocol.intents import JobIntent
from partita.protocol.intents import ProcessInstanceCreationIntent as Creation

HOPS = ("create_pickup", "job", "completion_pickup", "create_to_completed")


def read_partition(config: Config, topic: str, partition: int = 0) -> list[Message]:
    """Every committed record of `topic`/`partition`, in offset order."""
    consumer = new_consumer(
        kafka_access(config, KafkaRole.OPERATOR),
        {
            "group.id": f"{config.namespace}.hops",  # assign only: never joins or commits
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        },
    )
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
        if high <= low:
            return []
        consumer.assign([TopicPartition(topic, partition, low)])
        out: list[Message] = []
        while True:
            batch = consumer.consume(10_000, 5.0)
            if not batch:
                return out
            for message in batch:
                error = message.error()
                if error is None:
                    out.append(message)
                elif error.code() == KafkaError._PARTITION_EOF:
                    return out
    finally:
        consumer.close()


def created_ms(message: Message) -> int:
    return int(message.timestamp()[1])


def _percentiles(values: list[int]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}

    def at(q: float) -> float:
        return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])

    return {
        "p50": at(0.5),
        "p90": at(0.9),
        "p99": at(0.99),
        "mean": round(sum(ordered) / len(ordered), 1),
    }


def transactions(log: Sequence[Message], since_ms: int) -> dict[str, Any]:
    """How often the log's writer committed from `since_ms` on: a commit marker takes an
    offset, so each gap in the committed offsets ends a transaction."""
    starts: list[int] = []
    previous = None
    for message in log:
        offset = int(message.offset() or 0)
        if previous is None or offset != previous + 1:
            starts.append(created_ms(message))
        previous = offset
    starts = [t for t in starts if t >= since_ms]
    if len(starts) < 2:
        return {}
    gaps = [b - a for a, b in pairwise(starts)]
    seconds = (starts[-1] - starts[0]) / 1000
    return {
        "transactions_per_s": round((len(starts) - 1) / max(seconds, 1e-3)),
        "ms_between_transactions": _percentiles(gaps),
    }


def summary(rows: list[dict[str, int]], log: Sequence[Message], since_ms: int) -> dict[str, Any]:
    hops: dict[str, Callable[[dict[str, int]], int]] = {
        "create_pickup": lambda r: r["copied"] - r["created"],
        "job": lambda r: r["answered"] - r["job"],
        "completion_pickup": lambda r: r["answer_copied"] - r["answered"],
        "create_to_completed": lambda r: r["completed"] - r["created"],
    }
    return {
        "instances": len(rows),
        **{name: _percentiles([hop(r) for r in rows]) for name, hop in hops.items()},
        **transactions(log, since_ms),
    }


def engine_hops(config: Config, since_ms: int, partition: int = 0) -> dict[str, Any]:
    """The hops of the instances created from `since_ms` on, on one partition, up to their
    first job (a one-task instance's only one)."""
    ingress = {
        int(m.offset() or 0): created_ms(m)
        for m in read_partition(config, config.commands_topic, partition)
    }
    log = read_partition(config, config.log_topic, partition)
    codec = RecordCodec()
    copies: dict[int, tuple[int, int]] = {}  # log offset -> (copy's time, command's time)
    instances: dict[int, dict[str, int]] = {}
    wanted = {
        (ValueType.PROCESS_INSTANCE_CREATION.value.encode(), Creation.CREATED.name.encode()),
        (ValueType.JOB.value.encode(), JobIntent.CREATED.name.encode()),
        (ValueType.JOB.value.encode(), JobIntent.COMPLETED.name.encode()),
    }
    for message in log:
        headers = message.headers()
        ingress_offset = header(headers, INGRESS_OFFSET)
        if ingress_offset is not None:
            produced = ingress.get(int(ingress_offset))
            if produced is not None:
                copies[int(message.offset() or 0)] = (created_ms(message), produced)
            continue
        if (header(headers, VALUE_TYPE), header(headers, INTENT)) not in wanted:
            continue
        record = codec.decode(message.value() or b"", offset=message.offset())
        if record.record_type is not RecordType.EVENT:
            continue
        value: Any = record.value
        copy = copies.get(record.source_record_position)
        if record.intent is Creation.CREATED:
            if copy is not None and copy[1] >= since_ms:
                instances[value.process_instance_key] = {"copied": copy[0], "created": copy[1]}
            continue
        row = instances.get(value.process_instance_key)
        if row is None:
            continue
        if record.intent is JobIntent.CREATED:
            row.setdefault("job", created_ms(message))
        elif copy is not None and "answered" not in row:
            row.update(answer_copied=copy[0], answered=copy[1], completed=created_ms(message))
    rows = [r for r in instances.values() if "completed" in r and "job" in r]
    return summary(rows, log, since_ms)

"""`partita bench loop`: the engine's processing loop against the physical limit of the stack.

Both sides run on one partition of a fresh namespace of the configured cluster, over the same
number of commands of the same size, pre-produced to an ingress topic as clients write them:

- engine: an in-process worker with a trivial processor (1 command -> 5 events; a new key per
  command) reading `<ns>.commands`, i.e. admission, the copy of the command into the log,
  header filtering, decoding, dispatch, encoding, one Kafka transaction per consumed batch with
  commands, with both offsets, the RocksDB commit after it;
- raw: a bare confluent-kafka transactional loop of the same shape (calling `produce` with
  positional arguments, as the engine does: the cheaper form): it consumes the commands
  from its own ingress topic and, per command, appends the command and 5 records of an event's
  size to its log, one transaction per consumed batch with the offsets; like the engine, it
  reads its log back and skips its own records by header, and a batch of only those commits
  nothing (its offsets ride on the next transaction).

records/s counts records consumed from ingress plus records produced (the copy and the
events), per second of the processing phase. `rounds` repeats the pair, each in a fresh
namespace: the raw loop's rate moves by a third from one run to the next on a shared machine,
so one ratio says little; the median of the rounds' ratios is reported, each round's beside it.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
from confluent_kafka import TopicPartition
from confluent_kafka.cimpl import NewTopic

from partita.bench.scratch import scratch_namespace
from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.clients import NOW, new_consumer, new_producer
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, load_specs
from partita.processing import Engine, ProcessingContext, banning
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import BpmnElementType
from partita.protocol.headers import COMMAND, INGRESS_OFFSET, RECORD_TYPE, header, record_headers
from partita.protocol.intents import ProcessInstanceCreationIntent as Creation
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.records import Record, command, event
from partita.protocol.values import ProcessInstanceCreationValue, ProcessInstanceValue
from partita.stream.worker import CONSUME_BATCH, Worker

EVENTS_PER_COMMAND = 5
RECORDS_PER_COMMAND = 2 + EVENTS_PER_COMMAND
"""Moved per command: consumed from ingress, its copy on the log, its events."""
_ELEMENT_EVENTS = (
    Instance.ELEMENT_ACTIVATING,
    Instance.ELEMENT_ACTIVATED,
    Instance.ELEMENT_COMPLETING,
    Instance.ELEMENT_COMPLETED,
)


def _trivial_create(record: Record, ctx: ProcessingContext) -> None:
    value = record.value
    assert isinstance(value, ProcessInstanceCreationValue)
    key = ctx.keys.next_key()
    created = msgspec.structs.replace(value, process_instance_key=key)
    ctx.append_event(Creation.CREATED, created, key, respond=True)
    element = ProcessInstanceValue(
        bpmn_process_id=value.bpmn_process_id,
        process_instance_key=key,
        element_id=value.bpmn_process_id,
        bpmn_element_type=BpmnElementType.PROCESS,
    )
    for intent in _ELEMENT_EVENTS:
        ctx.append_event(intent, element, key)


def bench_engine() -> Engine:
    engine = Engine()
    banning.register(engine)
    engine.processor(Creation.CREATE, _trivial_create)
    return engine


def bench_command(i: int) -> Record:
    """The `i`th client command of the bench: a creation with a small variables document."""
    value = ProcessInstanceCreationValue(bpmn_process_id="bench", variables=f'{{"i": {i}}}')
    return command(Creation.CREATE, value)


def _fill(config: Config, topic: str, values: list[tuple[bytes, Any]]) -> None:
    producer = new_producer(kafka_access(config, KafkaRole.CLIENT), {"linger.ms": 20})
    for value, headers in values:
        producer.produce(topic, value, partition=0, headers=headers)
        producer.poll(0)
    producer.flush(60)


def run_engine(config: Config, commands: int) -> dict[str, float]:
    codec = RecordCodec()
    records = [bench_command(i) for i in range(commands)]
    _fill(
        config,
        config.commands_topic,
        [(codec.encode(r), record_headers(r)) for r in records],
    )
    worker = Worker(config, bench_engine(), consume_batch=CONSUME_BATCH)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 600
    metrics = None
    while time.monotonic() < deadline:
        task = worker.tasks.get(0)
        if task is not None and task.processing is not None:
            metrics = task.processing.metrics
            if metrics.commands >= commands:
                break
        time.sleep(0.01)
    worker.stopping.set()
    thread.join(60)
    if metrics is None or metrics.commands < commands:
        raise RuntimeError("the engine did not process every command within 600 s")
    seconds = metrics.last_batch_committed - metrics.first_batch_started
    moved = commands * RECORDS_PER_COMMAND
    return {
        "seconds": round(seconds, 3),
        "records_per_s": round(moved / seconds),
        "commands_per_s": round(commands / seconds),
        "batches": metrics.batches,
        "predicted": metrics.predicted,
        "not_read_back": metrics.not_read_back,
    }


def run_raw(config: Config, commands: int) -> dict[str, float]:
    """The same shape of work with nothing but confluent-kafka."""
    codec = RecordCodec()
    topic, ingress = f"{config.namespace}.raw", f"{config.namespace}.raw.commands"
    access = kafka_access(config, KafkaRole.ENGINE)
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    replicas = 1 if config.replication_factor < 1 else config.replication_factor
    for created in admin.create_topics(
        [NewTopic(topic, 1, replicas), NewTopic(ingress, 1, replicas)]
    ).values():
        created.result()
    sample_event = event(
        Instance.ELEMENT_ACTIVATED,
        ProcessInstanceValue(bpmn_process_id="bench", process_instance_key=2251799813685249),
        2251799813685249,
    )
    event_value, event_headers = codec.encode(sample_event), record_headers(sample_event)
    _fill(
        config,
        ingress,
        [(codec.encode(r), record_headers(r)) for r in (bench_command(i) for i in range(commands))],
    )
    consumer = new_consumer(
        access,
        {
            "group.id": f"{config.namespace}.raw",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 10,
        },
    )
    producer = new_producer(
        access,
        {
            "transactional.id": f"{config.namespace}.raw",
            "linger.ms": 1,
            "retry.backoff.ms": 10,
        },
    )
    producer.init_transactions(60)
    consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(ingress, 0, 0)])
    consumed = 0
    started = 0.0
    offsets: dict[str, TopicPartition] = {}
    while consumed < commands:
        messages = consumer.consume(num_messages=CONSUME_BATCH, timeout=1.0)
        if not messages:
            continue
        if not started:
            started = time.monotonic()
        # like the engine, it reads its own log back and skips it by header
        batch_commands = [
            m
            for m in messages
            if m.topic() == ingress and header(m.headers(), RECORD_TYPE) == COMMAND
        ]
        offsets.update(  # the next offset of each topic read, the last message's wins
            (name, TopicPartition(name, 0, int(m.offset() or 0) + 1))
            for m in messages
            if (name := m.topic()) is not None
        )
        if not batch_commands:
            continue  # like the engine's read-only batches: their offsets ride on the next
        producer.begin_transaction()
        for message in batch_commands:  # positional arguments, as the engine calls it
            copy_headers = [
                *(message.headers() or []),
                (INGRESS_OFFSET, str(message.offset()).encode()),
            ]
            producer.produce(topic, message.value(), None, 0, None, None, NOW, copy_headers)
            for _ in range(EVENTS_PER_COMMAND):
                producer.produce(topic, event_value, None, 0, None, None, NOW, event_headers)
        producer.send_offsets_to_transaction(
            list(offsets.values()), consumer.consumer_group_metadata(), 30
        )
        producer.commit_transaction(30)
        consumed += len(batch_commands)
    seconds = time.monotonic() - started
    consumer.close()
    moved = commands * RECORDS_PER_COMMAND
    return {
        "seconds": round(seconds, 3),
        "records_per_s": round(moved / seconds),
        "commands_per_s": round(commands / seconds),
    }


def run(config: Config, commands: int = 20_000, *, keep_topics: bool = False) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="partita-bench-loop-") as home,
        scratch_namespace(  # the commands are all waiting at once: no backpressure
            config, "bench", keep=keep_topics, partitions=1, home=Path(home), backpressure_lag=0
        ) as bench_config,
    ):
        namespace = bench_config.namespace
        apply_topics(
            admin_client(kafka_access(bench_config, KafkaRole.OPERATOR)), load_specs(bench_config)
        )
        engine = run_engine(bench_config, commands)
        raw = run_raw(bench_config, commands)
    return {
        "bench": "loop",
        "commands": commands,
        "events_per_command": EVENTS_PER_COMMAND,
        "engine_records_per_s": engine["records_per_s"],
        "raw_records_per_s": raw["records_per_s"],
        "ratio": round(engine["records_per_s"] / raw["records_per_s"], 3),
        "engine_commands_per_s": engine["commands_per_s"],
        "engine_batches": engine["batches"],
        "engine_batches_predicted": engine["predicted"],
        "engine_batches_not_read_back": engine["not_read_back"],
        "namespace": namespace,
    }


def run_rounds(
    config: Config,
    commands: int = 20_000,
    rounds: int = 1,
    *,
    keep_topics: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """`run` `rounds` times: the medians, and every round's figures under `rounds_run`."""
    results = []
    for number in range(1, rounds + 1):
        results.append(run(config, commands, keep_topics=keep_topics))
        progress(
            f"round {number}/{rounds}: engine {results[-1]['engine_records_per_s']:,} records/s,"
            f" raw {results[-1]['raw_records_per_s']:,} records/s, ratio {results[-1]['ratio']}"
        )
    if rounds == 1:
        return results[0]
    median: dict[str, float] = {
        name: round(statistics.median(r[name] for r in results))
        for name in ("engine_records_per_s", "raw_records_per_s", "engine_commands_per_s")
    }
    median["ratio"] = round(statistics.median(r["ratio"] for r in results), 3)
    return {
        **results[-1],
        **median,
        "rounds": rounds,
        "ratios": [r["ratio"] for r in results],
        "rounds_run": [
            {name: r[name] for name in ("engine_records_per_s", "raw_records_per_s", "ratio")}
            for r in results
        ],
        "namespaces": [r["namespace"] for r in results],
    }

"""The raw journey of `partita bench e2e`: a one-task instance's way through Kafka with
nothing but confluent-kafka, at the engine's latency-phase rate, on the same broker.

A one-task instance created with an awaited result crosses Kafka like this:

1. the client writes its create command to the ingress topic;
2. the engine's first batch copies it into the log, then writes its events and the job, in one
   transaction with the consumed offsets;
3. the job worker, reading committed records, gets the job once that transaction's markers
   are written, and writes its completion to the ingress topic;
4. the engine's second batch: the copy, its events and the reply, in one transaction;
5. the client, reading committed records, gets the reply.

The raw journey puts a relay in the engine's place. It uses the engine's transactional producer
and consumer settings and makes the Kafka calls of a batch whose copies' positions are
predicted (`partita.stream.processing.transaction`), in the same order: produce the copies, then the
events and the job or the reply; send the offsets; wait for every delivery (where the engine checks
its copies' positions); commit. Nothing is processed before or between those calls, and the
relay reads its log back as the engine does. A bare job worker answers each job at once, and
the client times each journey from create to reply. Next to the engine's latency at the same
rate, it tells what the engine's work adds to what Kafka's transactions cost.

With `producers` above 1 the relay takes turns between that many transactional producers:
while one transaction's commit is under way (on a thread of its own), the next batch is written
by the next producer, and its commit starts once the one before it has ended. The engine writes
a partition with one producer, so `bench e2e` compares it with one; more shows what overlapping
the commits would take off Kafka's share.

`run` times the journeys (`partita bench journey`; `partita bench e2e` runs it at its latency
rate). Roles, each run in its own process like the engine's parties:

    python -m partita.bench.journey relay BOOTSTRAP NAMESPACE [PRODUCERS]
    python -m partita.bench.journey jobs BOOTSTRAP NAMESPACE

Each prints `ready` once it reads its topics and stops on SIGTERM.
"""

from __future__ import annotations

import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.cimpl import NewTopic

from partita.bench.hops import created_ms, read_partition, summary
from partita.bench.parties import Broker, Child, Progress
from partita.bench.procstats import usage
from partita.bench.scratch import scratch_namespace
from partita.client.connection import producer_config
from partita.config import Config, KafkaRole
from partita.demo import percentile
from partita.log.admin import admin_client
from partita.log.clients import (
    consume_available,
    group_consumer,
    new_consumer,
    new_producer,
    transactional_producer,
)
from partita.log.security import kafka_access
from partita.protocol.codec import RecordCodec
from partita.protocol.headers import INGRESS_OFFSET, Headers, header, record_headers
from partita.protocol.intents import JobIntent
from partita.protocol.intents import ProcessInstanceCreationIntent as Creation
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.records import Record, command, event
from partita.protocol.values import JobValue, ProcessInstanceCreationValue, ProcessInstanceValue
from partita.stream.worker import CONSUME_BATCH

EVENTS_PER_BATCH = 12
"""Log records the relay writes per command besides its copy: a one-task instance leaves 26
records on the log over its two commands (two copies, 24 events and follow-ups)."""
KIND, CORRELATION = "journeyKind", "journeyCorrelation"
CREATE, COMPLETE = b"create", b"complete"
_KEY = 2251799813685249


@dataclass(frozen=True, slots=True)
class Topics:
    inbound: str
    log: str
    jobs: str
    replies: str

    @classmethod
    def of(cls, namespace: str) -> Topics:
        return cls(
            *(f"{namespace}.journey.{name}" for name in ("commands", "log", "jobs", "replies"))
        )


def create_topics(config: Config) -> Topics:
    topics = Topics.of(config.namespace)
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    replicas = 1 if config.replication_factor < 1 else config.replication_factor
    names = (topics.inbound, topics.log, topics.jobs, topics.replies)
    for created in admin.create_topics([NewTopic(name, 1, replicas) for name in names]).values():
        created.result()
    return topics


def _encoded(record: Record) -> tuple[bytes, Headers]:
    return RecordCodec().encode(record), record_headers(record)


def _sample_records() -> dict[str, tuple[bytes, Headers]]:
    """Records of the sizes the engine writes on this journey."""
    instance = ProcessInstanceValue(
        bpmn_process_id="bench-one-task",
        process_instance_key=_KEY,
        element_id="task",
        flow_scope_key=_KEY,
    )
    job = JobValue(
        type="bench.task",
        process_instance_key=_KEY,
        bpmn_process_id="bench-one-task",
        element_id="task",
        element_instance_key=_KEY + 1,
        variables='{"n": 1}',
    )
    creation = ProcessInstanceCreationValue(bpmn_process_id="bench-one-task", variables='{"n": 1}')
    return {
        "create": _encoded(command(Creation.CREATE_WITH_AWAITING_RESULT, creation)),
        "event": _encoded(event(Instance.ELEMENT_ACTIVATED, instance, _KEY)),
        "job": _encoded(event(JobIntent.CREATED, job, _KEY + 2)),
        "complete": _encoded(command(JobIntent.COMPLETE, job, _KEY + 2)),
        "reply": _encoded(event(Creation.CREATED, creation, _KEY)),
    }


def _stop_on_sigterm() -> threading.Event:
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    return stopping


class _Committer:
    """Commits one transaction at a time on a thread of its own (librdkafka commits without
    holding the GIL), so that another producer writes the next batch meanwhile."""

    def __init__(self) -> None:
        self._idle = threading.Event()
        self._idle.set()
        self._error: BaseException | None = None

    def start(self, producer: Producer) -> None:
        """Commit `producer`'s transaction once the one before it has ended."""
        self.wait()
        self._idle.clear()
        threading.Thread(target=self._commit, args=(producer,), daemon=True).start()

    def _commit(self, producer: Producer) -> None:
        try:
            producer.commit_transaction(30)
            producer.poll(0)
        except BaseException as exc:  # handed to the relay's thread by `wait`
            self._error = exc
        finally:
            self._idle.set()

    def wait(self) -> None:
        """Until the last commit started has ended; raises what it raised."""
        self._idle.wait()
        error, self._error = self._error, None
        if error is not None:
            raise error


def relay(config: Config, producers: int = 1) -> None:
    """The engine's place on the journey, taking turns between `producers` transactional
    producers: see the module's text."""
    topics = Topics.of(config.namespace)
    access = kafka_access(config, KafkaRole.ENGINE)
    samples = _sample_records()
    event_value, event_headers = samples["event"]
    job_value, job_headers = samples["job"]
    reply_value, reply_headers = samples["reply"]
    consumer = group_consumer(access, f"{config.namespace}.journey")  # assign only: never joins
    turns = [
        transactional_producer(access, f"{config.namespace}.journey", n) for n in range(producers)
    ]
    for producer in turns:
        producer.init_transactions(60)
    committer = _Committer()
    consumer.assign([TopicPartition(topics.log, 0, 0), TopicPartition(topics.inbound, 0, 0)])
    stopping = _stop_on_sigterm()
    print("ready", flush=True)
    offsets: dict[str, TopicPartition] = {}
    turn = 0
    while not stopping.is_set():
        messages = consume_available(consumer, CONSUME_BATCH, 0.05)
        commands = [m for m in messages if m.error() is None and m.topic() == topics.inbound]
        offsets.update(
            (name, TopicPartition(name, 0, int(m.offset() or 0) + 1))
            for m in messages
            if m.error() is None and (name := m.topic()) is not None
        )
        if not commands:
            continue  # its own log read back: the offsets ride on the next transaction
        producer, turn = turns[turn], (turn + 1) % producers
        producer.begin_transaction()
        for message in commands:
            copy_headers = [
                *(message.headers() or []),
                (INGRESS_OFFSET, str(message.offset()).encode()),
            ]
            producer.produce(topics.log, message.value(), partition=0, headers=copy_headers)
        for message in commands:
            for _ in range(EVENTS_PER_BATCH):
                producer.produce(topics.log, event_value, partition=0, headers=event_headers)
            headers = message.headers()
            correlation = [(CORRELATION, header(headers, CORRELATION))]
            if header(headers, KIND) == CREATE:
                producer.produce(
                    topics.jobs, job_value, partition=0, headers=[*job_headers, *correlation]
                )
            else:
                producer.produce(
                    topics.replies, reply_value, partition=0, headers=[*reply_headers, *correlation]
                )
        producer.send_offsets_to_transaction(
            list(offsets.values()), consumer.consumer_group_metadata(), 30
        )
        producer.flush(30)  # every delivery: where the engine checks its copies' positions
        if producers == 1:
            producer.commit_transaction(30)  # as the engine does
            producer.poll(0)
        else:
            committer.start(producer)
    committer.wait()
    consumer.close()


def jobs(config: Config) -> None:
    """A job worker that completes each job at once, as the bench's job worker does."""
    topics = Topics.of(config.namespace)
    access = kafka_access(config, KafkaRole.JOB_WORKER)
    complete_value, complete_headers = _sample_records()["complete"]
    consumer = _committed_reader(config, KafkaRole.JOB_WORKER, "jobs")
    consumer.assign([TopicPartition(topics.jobs, 0, 0)])
    producer = new_producer(access, producer_config())
    stopping = _stop_on_sigterm()
    print("ready", flush=True)
    while not stopping.is_set():
        for message in consume_available(consumer, 500, 0.05):
            if message.error() is None:
                correlation = header(message.headers(), CORRELATION)
                producer.produce(
                    topics.inbound,
                    complete_value,
                    partition=0,
                    headers=[*complete_headers, (KIND, COMPLETE), (CORRELATION, correlation)],
                )
        producer.poll(0)
    producer.flush(10)
    consumer.close()


def _committed_reader(config: Config, role: KafkaRole, name: str) -> Consumer:
    """An assign-only consumer reading committed records, as the engine's clients do."""
    return new_consumer(
        kafka_access(config, role),
        {
            "group.id": f"{config.namespace}.journey.{name}",  # never joins or commits
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 10,
        },
    )


class Journeys:
    """The client's side: creations sent at a rate, each timed until its reply. The relay and
    the job worker must be running."""

    def __init__(self, config: Config) -> None:
        self.topics = Topics.of(config.namespace)
        self.value, self.headers = _sample_records()["create"]
        self.producer = new_producer(kafka_access(config, KafkaRole.CLIENT), producer_config())
        self.consumer = _committed_reader(config, KafkaRole.CLIENT, "client")
        self.consumer.assign([TopicPartition(self.topics.replies, 0, 0)])
        self.sent: dict[bytes, float] = {}
        self.latencies: list[float] = []
        self.count = 0

    def _collect(self, wait: float) -> None:
        for message in consume_available(self.consumer, 500, wait):
            if message.error() is None:
                began = self.sent.pop(header(message.headers(), CORRELATION) or b"", None)
                if began is not None:
                    self.latencies.append((time.monotonic() - began) * 1000)

    def run(self, instances: int, rate: float, timeout: float = 120) -> dict[str, Any]:
        """`instances` journeys at `rate` per second, until each is answered or `timeout`."""
        self.latencies = []
        started = time.monotonic()
        for n in range(instances):
            due = started + n / rate
            while (wait := due - time.monotonic()) > 0:
                self._collect(min(wait, 0.005))
            correlation = str(self.count).encode()
            self.count += 1
            self.sent[correlation] = time.monotonic()
            self.producer.produce(
                self.topics.inbound,
                self.value,
                partition=0,
                headers=[*self.headers, (KIND, CREATE), (CORRELATION, correlation)],
            )
            self.producer.poll(0)
        deadline = time.monotonic() + timeout
        while self.sent and time.monotonic() < deadline:
            self._collect(0.05)
        seconds = time.monotonic() - started
        latencies = sorted(self.latencies)
        return {
            "completed": len(latencies),
            "unanswered": len(self.sent),
            "seconds": round(seconds, 2),
            "latency_ms_p50": round(percentile(latencies, 0.50), 1),
            "latency_ms_p95": round(percentile(latencies, 0.95), 1),
            "latency_ms_p99": round(percentile(latencies, 0.99), 1),
        }

    def close(self) -> None:
        self.producer.flush(10)
        self.consumer.close()


def run(
    config: Config,
    instances: int,
    rate: float,
    *,
    progress: Progress,
    broker_pid: int | None = None,
    warm_up: int = 200,
    keep_topics: bool = False,
    producers: int = 1,
) -> dict[str, Any]:
    """`instances` journeys at `rate`, after `warm_up` untimed ones: the relay (taking turns
    between `producers` transactional producers) and the job worker in their own processes,
    the client in this one, on a fresh namespace of the configured cluster (deleted afterwards
    unless `keep_topics`). `broker_pid`: the local broker, whose CPU is sampled."""
    with (
        tempfile.TemporaryDirectory(prefix="partita-bench-journey-") as scratch,
        scratch_namespace(config, "journey", keep=keep_topics, home=Path(scratch)) as raw_config,
    ):
        create_topics(raw_config)
        cluster = [raw_config.bootstrap, raw_config.namespace]
        relaying, answering = children = [
            Child(
                f"raw journey {role}",
                [
                    sys.executable,
                    "-m",
                    "partita.bench.journey",
                    role,
                    *cluster,
                    *([str(producers)] if role == "relay" else []),
                ],
                Path(scratch) / f"journey-{role}.log",
                raw_config.kafka_env(),
            )
            for role in ("relay", "jobs")
        ]
        journeys = None
        try:
            for child in children:
                child.wait_for_line("ready", 120)
            journeys = Journeys(raw_config)
            progress(f"raw journey: warming up ({warm_up} instances)...")
            journeys.run(warm_up, rate)
            progress(f"raw journey: {instances} instances at {rate:g}/s through Kafka alone...")
            broker = Broker(broker_pid)
            before = relaying.sample(), answering.sample(), broker.sample()
            since_ms = int(time.time() * 1000)
            measured = journeys.run(instances, rate)
            seconds = measured["seconds"]
            measured["relay"] = usage(before[0], relaying.sample(), seconds)
            measured["job_worker"] = usage(before[1], answering.sample(), seconds)
            measured |= broker.usage(before[2], seconds)
        finally:
            if journeys is not None:
                journeys.close()
            for child in children:
                child.stop()
        measured["hops_ms"] = journey_hops(raw_config, Topics.of(raw_config.namespace), since_ms)
    return {
        "rate": rate,
        "producers": producers,
        "namespace": raw_config.namespace,
        **measured,
    }


def journey_hops(config: Config, topics: Topics, since_ms: int) -> dict[str, Any]:
    """The same hops for the raw journey's topics , matched by
    the correlation header each journey's records carry."""
    inbound = {int(m.offset() or 0): m for m in read_partition(config, topics.inbound)}
    rows: dict[bytes | None, dict[str, int]] = {}
    for message in inbound.values():
        kind = header(message.headers(), KIND)
        row = rows.setdefault(header(message.headers(), CORRELATION), {})
        row["created" if kind == CREATE else "answered"] = created_ms(message)
    log = read_partition(config, topics.log)
    for message in log:
        ingress_offset = header(message.headers(), INGRESS_OFFSET)
        if ingress_offset is None:
            continue
        source = inbound.get(int(ingress_offset))
        if source is None:
            continue
        row = rows.setdefault(header(source.headers(), CORRELATION), {})
        kind = header(source.headers(), KIND)
        if kind == CREATE:
            row["copied"] = created_ms(message)
        elif kind == COMPLETE:
            row["answer_copied"] = created_ms(message)
            row["completed"] = created_ms(message)  # the relay's events follow its copy at once
    for message in read_partition(config, topics.jobs):
        rows.setdefault(header(message.headers(), CORRELATION), {})["job"] = created_ms(message)
    needed = ("created", "copied", "job", "answered", "answer_copied", "completed")
    complete = [
        r for r in rows.values() if all(k in r for k in needed) and r["created"] >= since_ms
    ]
    return summary(complete, log, since_ms)


def main(argv: list[str]) -> int:
    role, bootstrap, namespace, *rest = argv
    config = Config.from_env().with_overrides(bootstrap_servers=bootstrap, namespace=namespace)
    if role == "relay":
        relay(config, int(rest[0]) if rest else 1)
    else:
        jobs(config)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Helpers for tests that run real `partita worker` processes against the real broker."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import (
    OFFSET_BEGINNING,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)

from partita.config import Config, KafkaRole
from partita.log.admin import admin_client
from partita.log.clients import new_consumer
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, load_specs
from partita.protocol.codec import RecordCodec
from partita.protocol.enums import RecordType
from partita.protocol.headers import ReplyTo, record_headers
from partita.protocol.intents import ProcessInstanceCreationIntent
from partita.protocol.records import Record, command
from partita.protocol.values import ProcessInstanceCreationValue
from tests.support.paths import ROOT

TEST_ENGINE = "tests.support.processors:build_engine"
BUILTIN_ENGINE = "partita.processing.builtin:build_engine"
CODEC = RecordCodec()


def clean_kafka_env() -> dict[str, str]:
    """This process's environment without a cluster or Kafka properties of its own, for a
    child that must reach the cluster only through what the test gives it."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PARTITA_KAFKA_CONFIG") and k != "KAFKA_BOOTSTRAP_SERVERS"
    }


def create_topics(config: Config) -> None:
    apply_topics(admin_client(kafka_access(config, KafkaRole.OPERATOR)), load_specs(config))


class WorkerProcess:
    """One `partita worker` in its own process, with its own home (its own "machine")."""

    def __init__(
        self,
        config: Config,
        home: Path,
        name: str = "worker",
        engine: str = TEST_ENGINE,
        env: dict[str, str] | None = None,
    ) -> None:
        self.env = {**os.environ, **(env or {})}
        self.config = config
        self.engine = engine
        self.home = home
        self.log = home / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def args(self) -> list[str]:
        return [
            "--bootstrap-servers",
            self.config.bootstrap,
            "--namespace",
            self.config.namespace,
            "--home",
            str(self.home),
            "--engine",
            self.engine,
        ]

    def start(self) -> WorkerProcess:
        self.home.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "partita.cli", "worker", *self.args()],
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
            )
        return self

    def signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        os.kill(self.process.pid, sig)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM and wait; returns the exit code."""
        assert self.process is not None
        if self.process.poll() is None:
            self.signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def verify_replay(self) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "partita.cli", "verify-replay", *self.args()],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def creation(n: int, process_id: str = "order", **variables: object) -> Record:
    value = ProcessInstanceCreationValue(
        bpmn_process_id=process_id, variables=json.dumps({"n": n, **variables})
    )
    return command(ProcessInstanceCreationIntent.CREATE, value)


def produce(
    config: Config,
    records: list[tuple[int, Record]],
    reply: bool = False,
    raw: list[tuple[int, bytes]] | None = None,
) -> None:
    producer = Producer({"bootstrap.servers": config.bootstrap, "linger.ms": 5})
    for i, (partition, record) in enumerate(records):
        headers = record_headers(record)
        if reply:
            headers = headers + ReplyTo(config.replies_topic, 0, f"corr-{i}".encode()).headers()
        producer.produce(
            config.commands_topic, CODEC.encode(record), partition=partition, headers=headers
        )
    for partition, value in raw or []:
        producer.produce(config.commands_topic, value, partition=partition)
    assert producer.flush(30) == 0


@dataclass
class Log:
    """Every committed record of the log topic, by partition, in offset order."""

    partitions: dict[int, list[Record]] = field(default_factory=lambda: defaultdict(list))
    raw_commands: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))

    def commands(self, partition: int) -> list[Record]:
        return [r for r in self.partitions[partition] if r.record_type is RecordType.COMMAND]

    def results_of(self, partition: int) -> dict[int, list[Record]]:
        """Events and rejections grouped by the position of the command they answer."""
        out: dict[int, list[Record]] = defaultdict(list)
        for record in self.partitions[partition]:
            if record.record_type is not RecordType.COMMAND:
                out[record.source_record_position].append(record)
        return out


def read_log(config: Config, topic: str | None = None) -> Log:
    topic = topic or config.log_topic
    consumer = new_consumer(
        kafka_access(config, KafkaRole.OPERATOR),
        {
            "group.id": "test-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        },
    )
    log = Log()
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        for partition in partitions:
            consumer.assign([TopicPartition(topic, partition, 0)])
            while True:
                message = consumer.poll(10)
                assert message is not None, f"no end of {topic}/{partition} within 10 s"
                error = message.error()
                if error is not None:
                    assert error.code() == KafkaError._PARTITION_EOF, error
                    break
                try:
                    record = CODEC.decode(message.value(), offset=message.offset())
                except Exception:
                    log.raw_commands[partition].append(message.offset())
                    continue
                log.partitions[partition].append(record)
    finally:
        consumer.close()
    return log


def committed_messages(config: Config, topic: str, partition: int) -> list[tuple[Record, Message]]:
    """Every committed record of `topic`/`partition` from its start, decoded, with its message
    (for headers), in offset order."""
    consumer = new_consumer(
        kafka_access(config, KafkaRole.OPERATOR),
        {
            "group.id": f"t-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        },
    )
    out = []
    try:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
        while True:
            msg = consumer.poll(10)
            assert msg is not None, f"no end of {topic}/{partition} within 10 s"
            error = msg.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                return out
            out.append((CODEC.decode(msg.value(), offset=msg.offset()), msg))
    finally:
        consumer.close()


def wait_until(
    predicate: Callable[[], bool],
    timeout: float,
    what: str,
    on_fail: Callable[[], str] = lambda: "",
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}\n{on_fail()}")


def unanswered(log: Log) -> list[tuple[int, int]]:
    """(partition, offset) of every command or undecodable record without a result."""
    missing = []
    for partition in set(log.partitions) | set(log.raw_commands):
        results = log.results_of(partition)
        offsets = [c.position for c in log.commands(partition)] + log.raw_commands[partition]
        missing += [(partition, offset) for offset in offsets if offset not in results]
    return missing


def wait_answered(
    config: Config, expected_commands: int, timeout: float, worker: WorkerProcess
) -> Log:
    """Wait until the log holds `expected_commands` commands and all are answered."""
    state: dict[str, Log] = {}

    def done() -> bool:
        log = read_log(config)
        state["log"] = log
        count = sum(len(log.commands(p)) + len(log.raw_commands[p]) for p in log.partitions)
        return count >= expected_commands and not unanswered(log)

    wait_until(done, timeout, f"{expected_commands} answered commands", worker.tail)
    return state["log"]


class Load:
    """Produces creation commands at a steady pace from a background thread."""

    def __init__(self, config: Config, per_tick: int = 10, tick: float = 0.05) -> None:
        import threading

        self.config = config
        self.per_tick = per_tick
        self.tick = tick
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Load:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def stop(self) -> int:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(30)
        return self.sent

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.config.bootstrap, "linger.ms": 5})
        while not self._stop.is_set():
            for _ in range(self.per_tick):
                record = creation(self.sent)
                producer.produce(
                    self.config.commands_topic,
                    CODEC.encode(record),
                    partition=self.sent % self.config.partitions,
                    headers=record_headers(record),
                )
                self.sent += 1
            producer.poll(0)
            time.sleep(self.tick)
        producer.flush(30)


def assert_exactly_once(log: Log, partitions: int) -> int:
    """Every creation command has exactly one CREATED and five results; no key twice.
    Returns the number of commands checked."""
    checked = 0
    keys: set[int] = set()
    for partition in range(partitions):
        results = log.results_of(partition)
        for cmd in log.commands(partition):
            answer = results.get(cmd.position, [])
            created = [r for r in answer if r.intent is ProcessInstanceCreationIntent.CREATED]
            assert len(created) == 1 and len(answer) == 5, (
                f"partition {partition} offset {cmd.position}: {len(created)} CREATED,"
                f" {len(answer)} results"
            )
            assert created[0].key not in keys, f"key {created[0].key} created twice"
            keys.add(created[0].key)
            checked += 1
        orphans = set(results) - {c.position for c in log.commands(partition)}
        assert not orphans, f"partition {partition}: results for unknown positions {orphans}"
    return checked


@contextlib.contextmanager
def engine_namespace(
    bootstrap: str, home: Path, prefix: str, env: dict[str, str] | None = None
) -> Iterator[Config]:
    """A fresh namespace with its topics and one built-in engine worker for the block; at the
    end the worker must stop cleanly and replay must rebuild its state exactly."""
    config = Config(
        bootstrap_servers=bootstrap, namespace=f"{prefix}{uuid.uuid4().hex[:8]}", home=home
    )
    create_topics(config)
    worker = WorkerProcess(config, home, engine=BUILTIN_ENGINE, env=env).start()
    try:
        yield config
    finally:
        assert worker.stop() == 0, worker.tail()
    verify = worker.verify_replay()
    assert verify.returncode == 0, verify.stdout + verify.stderr

"""`partita chaos`: sustained load while workers and the broker fail, then proof from the log.

On a broker of its own (started from the cached Kafka jars on free ports, in a scratch folder)
it runs engine workers (each with its own state folder, like separate machines), a job worker
and a steady stream of process instances (a job, a 0.2 s timer, a job). Every `fault_every`
seconds it injects one fault at random: kill, freeze or add/stop an engine worker, restart the
broker, kill the job worker (`partita.ops.chaos_fleet`, the processes and their faults).

Like every client, the load generator writes its commands to the ingress topic `<ns>.commands`;
only the engine writes the log. Meanwhile a hostile producer (`partita.ops.hostile`) writes, at a
low rate, records no client may send to ingress.

At the end it waits for the instances to finish, moves every partition to one worker, and
checks from the log: every instance it created completed exactly once (lost, duplicated), no job
completed twice, no command's events were committed twice and no client command was copied into
the log twice (a record of an aborted transaction that a read_committed reader saw would show
here, as events written twice; `aborted_records` counts the records only a read_uncommitted
reader finds), every hostile record got exactly one rejection and nothing else, no reply reached
the log or another namespace's topics, and `verify-replay` rebuilds every partition to the live
digest. Workers snapshot every `snapshot_records` log records and truncate the log behind their
snapshots (as in production), so cold restarts restore snapshots and the log start moves; the
tracker reads the log live as a downstream group of the workers (the log is never truncated
before it read a record).
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError

from partita.client import Client
from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.localkafka import KafkaDistribution, LocalBroker
from partita.log.admin import admin_client
from partita.log.clients import new_producer
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, job_topic_spec, load_specs
from partita.ops.chaos_fleet import ChaosFleet, free_port
from partita.ops.chaos_log import TRACKER_GROUP, LogTracker, replay_seen, uncommitted_offsets
from partita.ops.hostile import HostileProducer, other_namespace, records_in_namespace
from partita.processing.builtin import build_engine
from partita.protocol.codec import PRODUCER_MAX_BYTES, RecordCodec
from partita.protocol.headers import record_headers
from partita.protocol.intents import ProcessInstanceCreationIntent
from partita.protocol.records import command
from partita.protocol.values import ProcessInstanceCreationValue
from partita.stream.partition.task import state_dir
from partita.stream.replay.verify import verify_replay

Progress = Callable[[str], None]
BPMN = Path(__file__).resolve().parent / "chaos.bpmn"
JOB_TYPE = "chaos.task"
QUIET = logging.getLogger("partita.chaos.kafka")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False


@dataclass(frozen=True, slots=True)
class ChaosSettings:
    duration: float = 60.0
    rate: float = 20.0
    fault_every: float = 5.0
    min_faults: int = 0
    """The load goes on past `duration` until this many faults were injected (a slow machine
    takes longer per fault; the run still sees them all)."""
    partitions: int = 3
    max_workers: int = 3
    seed: int = 1
    settle_timeout: float = 180.0
    hostile_rate: float = 1.0
    """Hostile records per second written to ingress during the load (0: none)."""
    snapshot_records: int = 1000
    """PARTITA_SNAPSHOT_RECORDS of the workers: small, so snapshots and truncation happen."""
    truncate: bool = True
    """PARTITA_TRUNCATE of the workers."""


class ChaosRun:
    def __init__(self, settings: ChaosSettings, scratch: Path, progress: Progress) -> None:
        self.settings = settings
        self.scratch = scratch
        self.progress = progress
        self.broker = LocalBroker(
            scratch / "broker",
            free_port(),
            free_port(),
            internal_partitions=1,
            distribution=KafkaDistribution(Config.from_env().home),
        )
        self.config = Config(
            bootstrap_servers=self.broker.bootstrap,
            namespace="chaos",
            partitions=settings.partitions,
            home=scratch,
        )
        self.fleet = ChaosFleet(
            self.broker,
            scratch,
            namespace=self.config.namespace,
            job_type=JOB_TYPE,
            worker_env={
                "PARTITA_SNAPSHOT_RECORDS": str(settings.snapshot_records),
                "PARTITA_TRUNCATE": "true" if settings.truncate else "false",
                "PARTITA_DOWNSTREAM_GROUPS": TRACKER_GROUP,
            },
            max_workers=settings.max_workers,
            rng=random.Random(settings.seed),
            progress=progress,
        )
        self.delivered: set[int] = set()
        self.undelivered = 0
        self.hostile = HostileProducer(
            kafka_access(self.config, KafkaRole.CLIENT),
            self.config.namespace,
            self.config.commands_topic,
            settings.partitions,
            settings.hostile_rate,
            settings.seed,
        )

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        settings = self.settings
        self.progress(f"Starting a broker for the chaos run at {self.broker.bootstrap}...")
        self.broker.up(self.progress)
        specs = [*load_specs(self.config), job_topic_spec(self.config, JOB_TYPE)]
        specs += load_specs(other_namespace(self.config))  # what hostile reply headers name
        operator = kafka_access(self.config, KafkaRole.OPERATOR)
        admin = admin_client(operator, logger=QUIET)
        apply_topics(admin, specs)
        del admin  # an idle client would log every reconnection while the broker restarts
        self.fleet.start(workers=2)
        self._deploy()
        tracker = LogTracker(
            operator,
            self.config.log_topic,
            self.config.commands_topic,
            settings.partitions,
        )
        try:
            self._load_with_faults(tracker)
            lost = self._settle(tracker)
            replay = self._consolidate_and_verify(tracker)
            committed = tracker.findings.offsets
            starts, uncommitted = uncommitted_offsets(
                operator, self.config.log_topic, settings.partitions
            )
            elsewhere = records_in_namespace(operator, other_namespace(self.config))
        finally:
            tracker.close()
            self.fleet.kill_all()
            self.broker.down()
        # An aborted record the tracker (read_committed) saw would repeat events a retried
        # batch wrote again: `duplicates` counts it (events_written_twice); aborted records
        # themselves are the data records only a read_uncommitted reader finds.
        aborted = sum(len(uncommitted[p] - committed[p]) for p in uncommitted)
        duplicated = tracker.findings.duplicated()
        hostile = {
            "sent": len(self.hostile.sent),
            **tracker.findings.outcomes(self.hostile.sent),
            "undelivered": self.hostile.undelivered,
            "by_kind": self.hostile.by_kind(),
        }
        return {
            "instances": len(self.delivered),
            "undelivered": self.undelivered,
            "faults": sum(self.fleet.faults.values()),
            "faults_by_kind": dict(self.fleet.faults),
            "worker_crashes": self.fleet.crashes,
            "lost": len(lost),
            "duplicated": sum(duplicated.values()),
            "duplicates": duplicated,
            "aborted_records": aborted,
            "log_start": starts,
            "truncated_records": sum(starts.values()),
            "hostile": hostile,
            "replies_on_log": tracker.findings.replies_on_log,
            "records_in_other_namespace": elsewhere,
            "replay": replay,
        }

    def _deploy(self) -> None:
        """In its own frame: the client's idle producer is gone before the broker restarts."""
        with Client(self.config, timeout=120) as client:
            client.deploy(BPMN)

    def _load_with_faults(self, tracker: LogTracker) -> None:
        settings = self.settings
        codec = RecordCodec()
        producer = new_producer(
            kafka_access(self.config, KafkaRole.CLIENT),
            {
                "enable.idempotence": True,
                "message.timeout.ms": 600_000,  # outlast broker restarts
                "message.max.bytes": PRODUCER_MAX_BYTES,
                "linger.ms": 5,
                "logger": QUIET,  # the broker restarts on purpose: no connection noise
            },
        )

        def delivered(n: int) -> Callable[[KafkaError | None, Any], None]:
            def report(error: KafkaError | None, _message: Any) -> None:
                if error is None:
                    self.delivered.add(n)
                else:
                    self.undelivered += 1

            return report

        self.progress(
            f"Load: {settings.rate:g} instances/s for {settings.duration:g} s, a fault every"
            f" {settings.fault_every:g} s, {settings.hostile_rate:g} hostile records/s..."
        )
        self.hostile.start()
        started = time.monotonic()
        next_fault = started + settings.fault_every
        n = 0
        while (now := time.monotonic()) < started + settings.duration or (
            sum(self.fleet.faults.values()) < settings.min_faults
        ):
            while n < (now - started) * settings.rate:
                value = ProcessInstanceCreationValue(
                    bpmn_process_id="chaos", variables=json.dumps({"n": n})
                )
                record = command(ProcessInstanceCreationIntent.CREATE, value)
                producer.produce(
                    self.config.commands_topic,
                    codec.encode(record),
                    partition=n % settings.partitions,
                    headers=record_headers(record),
                    on_delivery=delivered(n),
                )
                n += 1
            producer.poll(0)
            if now >= next_fault:
                self.fleet.inject()
                next_fault = time.monotonic() + settings.fault_every
            self.fleet.supervise()
            tracker.poll(0.05)
        self.progress(f"Load done: {n} instances sent; waiting for Kafka to take them all...")
        remaining = producer.flush(300)
        self.hostile.stop()
        if remaining:
            raise PartitaError(f"{remaining} creation commands were never delivered to Kafka")

    def _settle(self, tracker: LogTracker) -> list[int]:
        """Wait until every delivered instance completed and every hostile record was
        answered (or the settle timeout)."""
        for worker in self.fleet.workers:
            worker.thaw()
        deadline = time.monotonic() + self.settings.settle_timeout
        findings = tracker.findings

        def pending() -> tuple[list[int], int]:
            return findings.lost(self.delivered), findings.outcomes(self.hostile.sent)["unanswered"]

        lost, unanswered = pending()
        while (lost or unanswered) and time.monotonic() < deadline:
            self.fleet.supervise()
            tracker.poll(0.5)
            lost, unanswered = pending()
        self.progress(
            f"Settled: {len(self.delivered) - len(lost)}/{len(self.delivered)} completed;"
            f" {len(self.hostile.sent) - unanswered}/{len(self.hostile.sent)} hostile records"
            " answered."
        )
        return lost

    def _consolidate_and_verify(self, tracker: LogTracker) -> str:
        """Move every partition to the first worker, stop it, and verify its replay twice:
        `verify-replay` (from a snapshot when the log was truncated) and every event the
        tracker saw, from the first (what truncation deleted included)."""
        first = self.fleet.consolidate()
        self.fleet.wait_for_owner(first, self.settings.partitions, tracker.poll)
        first.stop()
        self.fleet.job_worker.stop()
        config = Config(
            bootstrap_servers=self.config.bootstrap,
            namespace="chaos",
            partitions=self.settings.partitions,
            home=self.scratch / first.name,
        )
        tracker.drain()
        engine = build_engine()
        verdicts = []
        for partition in range(self.settings.partitions):
            result = verify_replay(config, engine, partition)
            live = state_dir(config.home, config.namespace, partition)
            events, equal = replay_seen(tracker.findings, engine, partition, live)
            verdicts += [result.equal, equal]
            self.progress(
                f"  verify-replay partition {partition}: {result.events} events,"
                f" {'equal' if result.equal else 'DIFFERENT'}; all {events} events seen from"
                f" offset 0: {'equal' if equal else 'DIFFERENT'}"
            )
        return "equal" if all(verdicts) else "DIFFERENT"


def run(settings: ChaosSettings, progress: Progress = print, keep: bool = False) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="partita-chaos-"))
    try:
        result = ChaosRun(settings, scratch, progress).run()
    except BaseException:
        progress(f"(logs kept in {scratch})")
        raise
    failed = not passed(result)
    if keep or failed or result["worker_crashes"]:
        progress(f"(logs kept in {scratch})")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return result


def passed(result: dict[str, Any]) -> bool:
    """Whether a chaos run's result shows nothing lost or duplicated (an aborted record seen
    is a duplicate), changed by a hostile record or written where it must not be, and replay
    equal."""
    hostile = result["hostile"]
    return (
        not result["lost"]
        and not result["duplicated"]
        and hostile["rejected"] == hostile["sent"]
        and not result["replies_on_log"]
        and not result["records_in_other_namespace"]
        and result["replay"] == "equal"
    )

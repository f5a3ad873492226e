"""`partita chaos`: sustained load while workers and the broker fail, then proof from the log.

On a broker of its own (started from the cached Kafka jars on free ports, in a scratch folder)
it runs engine workers (each with its own state folder, like separate machines), a job worker
and a steady stream of process instances (a job, a 0.2 s timer, a job). Every `fault_every`
seconds it injects one fault at random:

- kill: `kill -9` an engine worker and restart it, with its state or with an empty folder;
- freeze: SIGSTOP an engine worker for 3-9 s (past the 6 s session timeout: its partitions
  move and its late transactions are fenced), then SIGCONT;
- scale: add an engine worker, or stop one (SIGTERM), moving partitions;
- broker: stop the broker and start it again;
- job worker: `kill -9` the job worker and restart it.

Like every client, the load generator writes its commands to the ingress topic `<ns>.commands`;
only the engine writes the log. Meanwhile a hostile producer (`engine.ops.hostile`) writes, at a
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
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError

from engine.client import Client
from engine.config import Config, KafkaRole
from engine.errors import PartitaError
from engine.localkafka import KafkaDistribution, LocalBroker
from engine.log.admin import admin_client
from engine.log.clients import new_producer
from engine.log.security import kafka_access
from engine.log.topics import apply_topics, job_topic_spec, load_specs
from engine.ops.chaos_log import TRACKER_GROUP, LogTracker, replay_seen, uncommitted_offsets
from engine.ops.hostile import HostileProducer, other_namespace, records_in_namespace
from engine.processing.builtin import build_engine
from engine.protocol.codec import PRODUCER_MAX_BYTES, RecordCodec
from engine.protocol.headers import record_headers
from engine.protocol.intents import ProcessInstanceCreationIntent
from engine.protocol.records import command
from engine.protocol.values import ProcessInstanceCreationValue
from engine.stream.task import state_dir
from engine.stream.verify import verify_replay

Progress = Callable[[str], None]
BPMN = Path(__file__).resolve().parent / "chaos.bpmn"
JOB_TYPE = "chaos.task"
FAULTS = ("kill", "freeze", "scale", "broker", "job-worker")
QUIET = logging.getLogger("partita.chaos.kafka")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False


@dataclass(frozen=True, slots=True)
class ChaosSettings:
    duration: float = 60.0
    rate: float = 20.0
    fault_every: float = 5.0
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


class _Child:
    """A child process, restartable, with its log appended to one file."""

    def __init__(self, name: str, args: list[str], log: Path, env: dict[str, str]) -> None:
        self.name = name
        self.args = args
        self.log = log
        self.env = {**os.environ, **env}
        self.process: subprocess.Popen[bytes] | None = None
        self.frozen_until = 0.0

    def start(self) -> _Child:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.args, stdout=out, stderr=subprocess.STDOUT, env=self.env
            )
        return self

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            assert self.process is not None
            os.kill(self.process.pid, sig)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(10)

    def stop(self, timeout: float = 60) -> None:
        self.thaw()
        self.signal(signal.SIGTERM)
        if self.process is not None:
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def freeze(self, seconds: float) -> None:
        self.signal(signal.SIGSTOP)
        self.frozen_until = time.monotonic() + seconds

    def thaw(self) -> None:
        if self.frozen_until:
            self.signal(signal.SIGCONT)
            self.frozen_until = 0.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ChaosRun:
    def __init__(self, settings: ChaosSettings, scratch: Path, progress: Progress) -> None:
        self.settings = settings
        self.scratch = scratch
        self.progress = progress
        self.rng = random.Random(settings.seed)
        self.broker = LocalBroker(
            scratch / "broker",
            _free_port(),
            _free_port(),
            internal_partitions=1,
            distribution=KafkaDistribution(Config.from_env().home),
        )
        self.config = Config(
            bootstrap_servers=self.broker.bootstrap,
            namespace="chaos",
            partitions=settings.partitions,
            home=scratch,
        )
        self.workers: list[_Child] = []
        self.faults: Counter[str] = Counter()
        self.faults_since_broker = 0
        self.crashes = 0
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

    # -- processes ------------------------------------------------------------------------------

    def _engine_worker(self, index: int) -> _Child:
        home = self.scratch / f"worker-{index}"
        home.mkdir(exist_ok=True)
        cluster = ["--bootstrap-servers", self.config.bootstrap, "--namespace", "chaos"]
        python = [sys.executable, "-X", "faulthandler"]  # SIGABRT: every thread's stack
        return _Child(
            f"worker-{index}",
            [*python, "-m", "engine.cli", "worker", *cluster, "--home", str(home)],
            self.scratch / f"worker-{index}.log",
            {
                "PARTITA_SNAPSHOT_RECORDS": str(self.settings.snapshot_records),
                "PARTITA_TRUNCATE": "true" if self.settings.truncate else "false",
                "PARTITA_DOWNSTREAM_GROUPS": TRACKER_GROUP,
            },
        )

    def _job_worker(self) -> _Child:
        args = [self.config.bootstrap, "chaos", JOB_TYPE, "8"]
        return _Child(
            "job-worker",
            [sys.executable, "-m", "engine.bench.e2e_jobs", *args],
            self.scratch / "job-worker.log",
            {},
        )

    def _supervise(self) -> None:
        """Restart what died on its own (counted as crashes) and thaw what is due."""
        now = time.monotonic()
        for child in [*self.workers, self.job_worker]:
            if child.frozen_until and now >= child.frozen_until:
                child.thaw()
            if not child.alive():
                self.crashes += 1
                self.progress(f"  {child.name} exited on its own; restarting (see {child.log})")
                child.start()

    # -- faults ---------------------------------------------------------------------------------

    def _inject(self) -> None:
        kind = self.rng.choice(FAULTS)
        if sum(self.faults.values()) == 4:
            kind = "broker"  # every run restarts the broker at least once, as its fifth fault
        elif kind == "broker" and self.faults_since_broker < 4:
            kind = "kill"  # at least four other faults between broker restarts
        self.faults_since_broker = 0 if kind == "broker" else self.faults_since_broker + 1
        live = [w for w in self.workers if w.alive() and not w.frozen_until]
        if kind in ("kill", "freeze") and not live:
            kind = "scale"
        self.faults[kind] += 1
        if kind == "kill":
            victim = self.rng.choice(live)
            cold = self.rng.random() < 0.5
            self.progress(f"  fault: kill -9 {victim.name}, restart {'cold' if cold else 'warm'}")
            victim.kill()
            if cold:
                shutil.rmtree(self.scratch / victim.name, ignore_errors=True)
                (self.scratch / victim.name).mkdir()
            victim.start()
        elif kind == "freeze":
            victim = self.rng.choice(live)
            seconds = self.rng.uniform(3, 9)
            self.progress(f"  fault: freeze {victim.name} for {seconds:.1f} s")
            victim.freeze(seconds)
        elif kind == "scale":
            if len(self.workers) < self.settings.max_workers:
                worker = self._engine_worker(len(self.workers)).start()
                self.workers.append(worker)
                self.progress(f"  fault: add {worker.name} ({len(self.workers)} workers)")
            else:
                leaving = self.workers.pop()
                self.progress(f"  fault: stop {leaving.name} ({len(self.workers)} workers)")
                leaving.stop()
        elif kind == "broker":
            self.progress("  fault: restart the broker")
            self.broker.down()
            time.sleep(self.rng.uniform(1, 3))
            self.broker.up()
        else:
            self.progress("  fault: kill -9 the job worker, restart it")
            self.job_worker.kill()
            self.job_worker.start()

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
        self.workers = [self._engine_worker(i).start() for i in range(2)]
        self.job_worker = self._job_worker().start()
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
            for child in [*self.workers, self.job_worker]:
                child.thaw()
                child.kill()
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
            "faults": sum(self.faults.values()),
            "faults_by_kind": dict(self.faults),
            "worker_crashes": self.crashes,
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
        while (now := time.monotonic()) < started + settings.duration:
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
                self._inject()
                next_fault = time.monotonic() + settings.fault_every
            self._supervise()
            tracker.poll(0.05)
        self.progress(f"Load done: {n} instances sent; waiting for Kafka to take them all...")
        remaining = producer.flush(300)
        self.hostile.stop()
        if remaining:
            raise PartitaError(f"{remaining} creation commands were never delivered to Kafka")

    def _settle(self, tracker: LogTracker) -> list[int]:
        """Wait until every delivered instance completed and every hostile record was
        answered (or the settle timeout)."""
        for worker in self.workers:
            worker.thaw()
        deadline = time.monotonic() + self.settings.settle_timeout
        findings = tracker.findings

        def pending() -> tuple[list[int], int]:
            return findings.lost(self.delivered), findings.outcomes(self.hostile.sent)["unanswered"]

        lost, unanswered = pending()
        while (lost or unanswered) and time.monotonic() < deadline:
            self._supervise()
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
        first, *others = self.workers
        for worker in others:
            worker.stop()
        if not first.alive():
            first.start()
        self.workers = [first]
        self._wait_for_owner(first, tracker)
        first.stop()
        self.job_worker.stop()
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

    def _wait_for_owner(self, worker: _Child, tracker: LogTracker) -> None:
        """Until `worker` owns every partition, as its own log says. Meanwhile whatever exited
        is restarted (a worker may exit on an error after a broker restart); a worker that
        still does not own everything after `OWNER_TIMEOUT_S` is sent SIGABRT, so Python's
        faulthandler writes every thread's stack to its log, showing where it was stuck."""
        wanted = set(range(self.settings.partitions))
        deadline = time.monotonic() + OWNER_TIMEOUT_S
        while time.monotonic() < deadline:
            self._supervise()
            if owned(worker.log.read_text(errors="replace")) == wanted:
                tracker.poll(3.0)  # let it finish what it took over
                return
            tracker.poll(0.5)
        worker.signal(signal.SIGABRT)
        raise PartitaError(
            f"{worker.name} did not take every partition within {OWNER_TIMEOUT_S:g} s; its"
            f" threads' stacks are at the end of {worker.log}"
        )


_OWNERSHIP = re.compile(
    r"partita\.worker: (assigned|revoked) partitions \[([\d, ]*)\]|(Worker joining group)"
)
OWNER_TIMEOUT_S = 300.0
"""How long consolidation waits for the first worker to own every partition. After a broker
restart a worker may block for minutes before it rejoins, yet legitimately: each of its
partition tasks may wait on Kafka calls bounded at 30-90 s (a commit retried, a flush and an
abort, fencing in init_transactions), one task after the other."""


def owned(log: str) -> set[int]:
    """The partitions a worker owns according to its log: the last `assigned partitions`
    line minus those revoked since, empty again after the process (re)started. Only the
    worker's own lines count: other lines mention partitions too (librdkafka, refusals)."""
    partitions: set[int] = set()
    for match in _OWNERSHIP.finditer(log):
        kind, listed, restarted = match.groups()
        if restarted:
            partitions = set()
            continue
        numbers = {int(n) for n in listed.split(",") if n.strip()}
        partitions = numbers if kind == "assigned" else partitions - numbers
    return partitions


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

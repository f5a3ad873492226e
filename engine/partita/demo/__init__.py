"""The main job's demo: deploy `order-demo.bpmn`, run instances end to end with an engine
worker and a job worker, and report counts and create-to-complete latency."""

from __future__ import annotations

import json
import logging
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from partita.client import ActivatedJob, Client, JobWorker
from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.log.admin import admin_client
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, job_topic_spec
from partita.protocol.enums import RecordType
from partita.protocol.intents import ProcessInstanceCreationIntent
from partita.protocol.values import DeploymentValue, ProcessInstanceCreationValue

BPMN = Path(__file__).resolve().parent / "order-demo.bpmn"
PROCESS_ID = "order-demo"
JOB_TYPES = ("demo.reserve", "demo.review")


@dataclass(slots=True)
class DemoResult:
    instances: int
    completed: int
    rejected: int
    unanswered: int
    jobs_completed: int
    seconds: float
    instances_per_second: float
    latency_ms_p50: float
    latency_ms_p95: float
    latency_ms_p99: float
    latency_ms_max: float

    def json(self) -> str:
        return json.dumps(asdict(self))


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values (0 when empty)."""
    if not sorted_values:
        return 0.0
    rank = max(1, int(fraction * len(sorted_values) + 0.999999))
    return sorted_values[min(rank, len(sorted_values)) - 1]


class AwaitedCreations:
    """Instances created with CREATE_WITH_AWAITING_RESULT, each timed from its creation to
    its result reply (rejections counted apart). Used by the demo and `bench e2e`."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.sent: dict[bytes, float] = {}
        self.latencies_ms: list[float] = []
        self.rejected = 0

    def create(self, process_id: str, variables: dict[str, object]) -> None:
        value = ProcessInstanceCreationValue(
            bpmn_process_id=process_id, variables=json.dumps(variables)
        )
        correlation = self.client.submit(
            ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT, value
        )
        self.sent[correlation] = time.monotonic()

    def collect(self, timeout: float) -> None:
        """Take the replies that arrive within `timeout`."""
        for correlation, reply in self.client.results(timeout).items():
            began = self.sent.pop(correlation, None)
            if began is None:
                continue
            if reply.record_type is RecordType.COMMAND_REJECTION:
                self.rejected += 1
            else:
                self.latencies_ms.append((time.monotonic() - began) * 1000)

    def finish(self, timeout: float) -> list[float]:
        """Wait up to `timeout` for the outstanding results; the latencies, sorted."""
        self.client.flush()
        deadline = time.monotonic() + timeout
        while self.sent and time.monotonic() < deadline:
            self.collect(0.05)
        return sorted(self.latencies_ms)


def _job_worker(config: Config) -> JobWorker:
    worker = JobWorker(config, name="demo", client=Client(config, timeout=60))

    @worker.task("demo.reserve")
    def reserve(items: int) -> dict[str, object]:
        return {"reserved": items}

    @worker.task("demo.review")
    def review(order: dict[str, object], job: ActivatedJob) -> dict[str, object]:
        return {"reviewedBy": job.custom_headers.get("reviewer", "someone")}

    return worker


class EngineWorkerProcess:
    """`partita worker` in a child process for the demo's duration (its log in the home)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.log_path = config.home / "demo-worker.log"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> EngineWorkerProcess:
        self.config.home.mkdir(parents=True, exist_ok=True)
        args = [
            sys.executable,
            "-m",
            "partita.cli",
            "worker",
            "--bootstrap-servers",
            self.config.bootstrap,
            "--namespace",
            self.config.namespace,
            "--home",
            str(self.config.home),
        ]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        return self

    def __exit__(self, *_: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()


def run(
    config: Config,
    *,
    instances: int = 1000,
    rate: float = 100.0,
    progress: Callable[[str], None] = print,
) -> DemoResult:
    """Start an engine worker and a job worker, deploy, create `instances` at `rate` per
    second with CREATE_WITH_AWAITING_RESULT, and time each until its result arrives."""
    logging.getLogger("partita").setLevel(logging.WARNING)
    apply_topics(
        admin_client(kafka_access(config, KafkaRole.OPERATOR)),
        [job_topic_spec(config, t) for t in JOB_TYPES],
    )
    with EngineWorkerProcess(config) as engine_worker, Client(config, timeout=90) as client:
        progress(f"Starting an engine worker (log: {engine_worker.log_path}) and deploying...")
        deployment = client.deploy(BPMN).value
        assert isinstance(deployment, DeploymentValue)
        deployed = deployment.processes_metadata[0]
        progress(f"Deployed {deployed.bpmn_process_id} version {deployed.version}.")
        jobs = _job_worker(config)
        thread = threading.Thread(target=jobs.run, daemon=True)
        thread.start()
        if not jobs.ready.wait(60):  # its consumer groups have joined: jobs will flow
            raise PartitaError("the demo's job worker did not get its job topics within 60 s")
        try:
            result = _drive(client, instances, rate, progress)
        finally:
            jobs.stop()
            thread.join(30)
        result.jobs_completed = jobs.stats.completed
    return result


def _drive(
    client: Client, instances: int, rate: float, progress: Callable[[str], None]
) -> DemoResult:
    if instances < 1 or rate <= 0:
        raise PartitaError("the demo needs at least one instance and a positive rate")
    rng = random.Random(7)
    awaited = AwaitedCreations(client)
    started = time.monotonic()
    next_report = started + 2.0
    for n in range(instances):
        due = started + n / rate
        while (wait := due - time.monotonic()) > 0:
            awaited.collect(min(wait, 0.01))
        order = {"id": n, "items": rng.randint(1, 5), "total": rng.randint(10, 200)}
        awaited.create(PROCESS_ID, {"order": order})
        if time.monotonic() >= next_report:
            next_report += 2.0
            progress(f"  created {n + 1}/{instances}, completed {len(awaited.latencies_ms)}")
    latencies = awaited.finish(60)
    elapsed = time.monotonic() - started
    return DemoResult(
        instances=instances,
        completed=len(latencies),
        rejected=awaited.rejected,
        unanswered=len(awaited.sent),
        jobs_completed=0,
        seconds=round(elapsed, 2),
        instances_per_second=round(len(latencies) / elapsed, 1),
        latency_ms_p50=round(percentile(latencies, 0.50), 1),
        latency_ms_p95=round(percentile(latencies, 0.95), 1),
        latency_ms_p99=round(percentile(latencies, 0.99), 1),
        latency_ms_max=round(latencies[-1] if latencies else 0.0, 1),
    )

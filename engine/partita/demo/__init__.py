"""The main job's demo: deploy `order-demo.bpmn`, run instances end to end and report counts
and create-to-complete latency.

The parties run as `partita bench e2e` runs them: the engine worker (`partita worker`) and the
job worker (`python -m partita.demo.jobs`) each in a process of its own, this process doing
nothing but create instances and take their result replies, so that the demo's figures and the
benchmark's measure the same parties. As in `bench e2e`, the timed instances start once the
engine runs: one untimed instance per log partition completes first (`_first_instances`). The
summary says what the latency includes (`DemoResult.latency_includes`); an order-demo instance
is more work than bench's one-task instance (a gateway and variable mappings, and for one order
in five a second job)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from partita.bench.parties import Child
from partita.client import Client
from partita.config import Config, KafkaRole
from partita.config.settings import SUPERVISOR_PID
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
REVIEWED_ABOVE = 100
"""Orders whose total is above this take the second service task (`order-demo.bpmn`)."""
LARGE_ORDERS = 0.2
"""The share of the demo's orders above `REVIEWED_ABOVE`: most orders are small and take one
job, as in a shop, so the demo's p50 is an order whose way through the engine is bench e2e's
one-task instance's (two transactions, one job) plus a gateway and variable mappings."""
ONE_JOB, TWO_JOBS = "one job", "two jobs"
"""The demo's two paths: an order takes `reserve-stock`, and a large one `review-order` too."""
FIRST_ORDER = {"id": -1, "items": 1, "total": REVIEWED_ABOVE + 1}
"""The order of the untimed first instances (`_first_instances`): it takes both tasks."""
JOBS_OF_FIRST_INSTANCES = 2
READY_TIMEOUT_S = 60.0
"""How long the job worker waits for its job topics' partitions before it gives up."""

_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


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
    one_job: dict[str, float]
    """Orders that took one job (`reserve-stock`): how many, p50 and p99 of their latency."""
    two_jobs: dict[str, float]
    """Orders above `REVIEWED_ABOVE` that also took `review-order`: how many, p50 and p99."""
    engine_worker_pid: int
    job_worker_pid: int
    """The process that did the jobs (it reported this pid itself), never the demo's."""
    cpus: int
    broker_on_this_machine: bool

    def json(self) -> str:
        return json.dumps(asdict(self))

    def latency_includes(self) -> str:
        """What the latency figures measure, and what shared the machine while they were
        taken: a reader compares them with `bench e2e` or another machine only knowing both."""
        sharing = "the engine worker, the job worker, this load generator"
        sharing += " and the Kafka broker" if self.broker_on_this_machine else ""
        elsewhere = "" if self.broker_on_this_machine else " (the Kafka broker runs elsewhere)"
        return (
            "from sending each create command to taking its result reply in this process,"
            f" through the engine worker process (pid {self.engine_worker_pid}), the one or two"
            f" jobs pushed to and done by the job-worker process (pid {self.job_worker_pid}),"
            " and the reply, timed once one untimed instance per log partition has completed;"
            f" {sharing} share this machine's {self.cpus} cores{elsewhere}"
        )


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values (0 when empty)."""
    if not sorted_values:
        return 0.0
    rank = max(1, int(fraction * len(sorted_values) + 0.999999))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def orders(instances: int) -> Iterator[dict[str, int]]:
    """The orders the demo creates, the same on every run (seeded): a share `LARGE_ORDERS` of
    them above `REVIEWED_ABOVE`."""
    rng = random.Random(7)
    for n in range(instances):
        large = rng.random() < LARGE_ORDERS
        low, high = (REVIEWED_ABOVE + 1, 2 * REVIEWED_ABOVE) if large else (10, REVIEWED_ABOVE)
        yield {"id": n, "items": rng.randint(1, 5), "total": rng.randint(low, high)}


class AwaitedCreations:
    """Instances created with CREATE_WITH_AWAITING_RESULT, each timed from its creation to
    its result reply (rejections counted apart). Used by the demo and `bench e2e`."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.sent: dict[bytes, float] = {}
        self.latencies_ms: list[float] = []
        self.rejected = 0
        self.paths: dict[bytes, str] = {}
        self.latencies_ms_by_path: dict[str, list[float]] = {}
        """The latencies of the instances created with a `path` (e.g. the jobs they take)."""

    def create(
        self,
        process_id: str,
        variables: dict[str, object],
        *,
        partition: int | None = None,
        path: str | None = None,
    ) -> None:
        """Submit one creation (on `partition` of the log, by default the client's choice);
        its latency also counts under `path` when one is given."""
        value = ProcessInstanceCreationValue(
            bpmn_process_id=process_id, variables=json.dumps(variables)
        )
        correlation = self.client.submit(
            ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT, value, partition=partition
        )
        self.sent[correlation] = time.monotonic()
        if path is not None:
            self.paths[correlation] = path

    def collect(self, timeout: float) -> None:
        """Take the replies that arrive within `timeout`."""
        for correlation, reply in self.client.results(timeout).items():
            began = self.sent.pop(correlation, None)
            if began is None:
                continue
            path = self.paths.pop(correlation, None)
            if reply.record_type is RecordType.COMMAND_REJECTION:
                self.rejected += 1
                continue
            latency = (time.monotonic() - began) * 1000
            self.latencies_ms.append(latency)
            if path is not None:
                self.latencies_ms_by_path.setdefault(path, []).append(latency)

    def finish(self, timeout: float) -> list[float]:
        """Wait up to `timeout` for the outstanding results; the latencies, sorted."""
        self.client.flush()
        deadline = time.monotonic() + timeout
        while self.sent and time.monotonic() < deadline:
            self.collect(0.05)
        return sorted(self.latencies_ms)


def start_engine_worker(config: Config) -> Child:
    """`partita worker` in a child process, its log in the home; it stops when this process
    dies (the supervisor's mechanism), and the caller stops it with `stop`."""
    config.home.mkdir(parents=True, exist_ok=True)
    cluster = ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]
    return Child(
        "engine worker",
        [sys.executable, "-m", "partita.cli", "worker", *cluster, "--home", str(config.home)],
        config.home / "demo-worker.log",
        # the worker stops when this process is gone (as under --processes): a killed demo
        # leaves no engine worker behind
        {**config.kafka_env(), SUPERVISOR_PID.env: str(os.getpid())},
    )


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log written)"


def _check_running(*children: Child) -> None:
    """Raise, with the end of its log, when one of the demo's processes has exited: both run
    until the demo stops them, so an exit is a failure."""
    for child in children:
        code = child.process.poll()
        if code is not None:
            raise PartitaError(
                f"the demo's {child.name} exited (code {code}); the end of {child.log}:\n"
                + _log_tail(child.log)
            )


def _stopped_job_worker(child: Child) -> dict[str, int]:
    """The counts the job worker printed when it stopped (`partita.demo.jobs`)."""
    assert child.process.stdout is not None
    lines = child.process.stdout.read().strip().splitlines()
    try:
        counts = json.loads(lines[-1])
        return {"pid": int(counts["pid"]), "completed": int(counts["completed"])}
    except (IndexError, ValueError, KeyError, TypeError):
        raise PartitaError(
            f"the demo's job worker stopped without its counts (exit {child.process.returncode});"
            f" the end of {child.log}:\n" + _log_tail(child.log)
        ) from None


def _broker_on_this_machine(bootstrap: str) -> bool:
    hosts = {address.strip().rsplit(":", 1)[0] for address in bootstrap.split(",")}
    return hosts <= _LOCAL_HOSTS


def run(
    config: Config,
    *,
    instances: int = 1000,
    rate: float = 100.0,
    progress: Callable[[str], None] = print,
) -> DemoResult:
    """Start an engine worker and a job worker, each in its own process, deploy, create
    `instances` at `rate` per second with CREATE_WITH_AWAITING_RESULT from this process, and
    time each until its result arrives.

    Both processes are stopped before this returns or raises (Ctrl-C included); their output
    goes to logs in the home and is shown only when one of them fails."""
    if instances < 1 or rate <= 0:
        raise PartitaError("the demo needs at least one instance and a positive rate")
    logging.getLogger("partita").setLevel(logging.WARNING)
    apply_topics(
        admin_client(kafka_access(config, KafkaRole.OPERATOR)),
        [job_topic_spec(config, t) for t in JOB_TYPES],
    )
    with contextlib.ExitStack() as stack:
        engine_worker = start_engine_worker(config)
        stack.callback(engine_worker.stop)
        job_worker = Child(
            "job worker",
            [
                *(sys.executable, "-m", "partita.demo.jobs"),
                *(config.bootstrap, config.namespace, str(os.getpid())),
            ],
            config.home / "demo-job-worker.log",
            config.kafka_env(),
        )
        stack.callback(job_worker.stop)
        client = stack.enter_context(Client(config, timeout=90))
        progress(
            f"Started an engine worker (log: {engine_worker.log}) and a job worker"
            f" (log: {job_worker.log}); deploying..."
        )
        try:
            deployment = client.deploy(BPMN).value
        except PartitaError:
            _check_running(engine_worker)
            raise
        assert isinstance(deployment, DeploymentValue)
        deployed = deployment.processes_metadata[0]
        progress(f"Deployed {deployed.bpmn_process_id} version {deployed.version}.")
        job_worker.wait_for_line("ready", READY_TIMEOUT_S + 30)
        untimed = _first_instances(client, engine_worker, job_worker)
        progress(
            f"Every log partition answered (one untimed instance each); creating {instances}"
            f" instances at {rate:g}/s..."
        )
        awaited, seconds = _drive(client, instances, rate, progress, engine_worker, job_worker)
    jobs = _stopped_job_worker(job_worker)
    latencies = sorted(awaited.latencies_ms)
    return DemoResult(
        instances=instances,
        completed=len(latencies),
        rejected=awaited.rejected,
        unanswered=len(awaited.sent),
        jobs_completed=jobs["completed"] - untimed * JOBS_OF_FIRST_INSTANCES,
        seconds=round(seconds, 2),
        instances_per_second=round(len(latencies) / seconds, 1),
        latency_ms_p50=round(percentile(latencies, 0.50), 1),
        latency_ms_p95=round(percentile(latencies, 0.95), 1),
        latency_ms_p99=round(percentile(latencies, 0.99), 1),
        latency_ms_max=round(latencies[-1] if latencies else 0.0, 1),
        one_job=_path_figures(awaited, ONE_JOB),
        two_jobs=_path_figures(awaited, TWO_JOBS),
        engine_worker_pid=engine_worker.process.pid,
        job_worker_pid=jobs["pid"],
        cpus=os.cpu_count() or 1,
        broker_on_this_machine=_broker_on_this_machine(config.bootstrap),
    )


def _path_figures(awaited: AwaitedCreations, path: str) -> dict[str, float]:
    latencies = sorted(awaited.latencies_ms_by_path.get(path, []))
    return {
        "instances": len(latencies),
        "latency_ms_p50": round(percentile(latencies, 0.50), 1),
        "latency_ms_p99": round(percentile(latencies, 0.99), 1),
    }


def _first_instances(client: Client, engine_worker: Child, job_worker: Child) -> int:
    """Create one instance on each log partition and wait for all their results; how many.
    Once they are done, the engine worker processes every partition and has pushed jobs of
    both types, and the job worker has done them: the timed instances do not wait for the
    start of either (a partition still opening, a first produce to a new topic), which is no
    part of the latency an instance has once the engine runs. Their jobs are not counted."""
    first = AwaitedCreations(client)
    for partition in range(client.partition_count):
        first.create(PROCESS_ID, {"order": FIRST_ORDER}, partition=partition)
    deadline = time.monotonic() + 90
    while first.sent and time.monotonic() < deadline:
        first.finish(min(2.0, deadline - time.monotonic()))
        _check_running(engine_worker, job_worker)
    if first.sent or first.rejected:
        raise PartitaError(
            f"{len(first.sent)} of the {client.partition_count} first instances (one per log"
            f" partition) got no result within 90 s and {first.rejected} were rejected; the"
            f" engine worker's log ({engine_worker.log}) may say why"
        )
    return client.partition_count


def _drive(
    client: Client,
    instances: int,
    rate: float,
    progress: Callable[[str], None],
    *children: Child,
) -> tuple[AwaitedCreations, float]:
    """Create the instances at `rate`, then wait up to 60 s for their results; every two
    seconds, say how far it got and make sure the demo's processes still run. The creations
    and the seconds from the first creation to the last result."""
    awaited = AwaitedCreations(client)
    started = time.monotonic()
    next_report = started + 2.0
    for n, order in enumerate(orders(instances)):
        due = started + n / rate
        while (wait := due - time.monotonic()) > 0:
            awaited.collect(min(wait, 0.01))
        path = TWO_JOBS if order["total"] > REVIEWED_ABOVE else ONE_JOB
        awaited.create(PROCESS_ID, {"order": order}, path=path)
        if time.monotonic() >= next_report:
            next_report += 2.0
            _check_running(*children)
            progress(f"  created {n + 1}/{instances}, completed {len(awaited.latencies_ms)}")
    deadline = time.monotonic() + 60
    while awaited.sent and time.monotonic() < deadline:
        awaited.finish(min(2.0, deadline - time.monotonic()))
        _check_running(*children)
    return awaited, time.monotonic() - started

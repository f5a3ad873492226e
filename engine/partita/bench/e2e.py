"""`partita bench e2e`: the engine end to end, with every party in its own process.

On a fresh namespace of the configured cluster (one log partition by default) it starts a
`partita worker` (with `workers` above 1: `partita worker --processes W`, a supervisor and W
worker processes over the partitions), a push job worker process and a load-generator
process, deploys a workload and measures, for each workload:

- saturation: instances created as fast as the engine takes them (at most `in_flight`
  unanswered): completed instances/s (and per partition), log records/s;
- latency: instances created at a fixed rate (default 200/s; 20/s for `typical`, whose
  instances are ten times the work), create-to-complete p50/p95/p99;
- CPU (% of one core) and peak RSS of the engine worker (with several processes: summed over
  the supervisor and its children), the job worker and the load generator, and of the broker
  when it is the one `partita kafka up` started from this home (on a shared machine the
  broker's CPU is part of the engine's cost);
- replay: the partition's events applied to an empty store, events/s;

then, on the same broker, the raw confluent-kafka transactional loop of `bench loop`, and the
ratio of the engine's log records/s to it; and for one-task, the raw journey: the instance's
way through Kafka at the same rate with nothing but confluent-kafka (`partita.bench.journey`),
and the engine's latency minus it. The load generator and the job worker are clients:
they write their commands to `<ns>.commands`, and the engine copies each into the log before
its events, so log records/s counts those copies too. Workloads: `one-task` (start, service
task, end) and `typical` (Zeebe's benchmark shape: ten service tasks and two PT0.1S timers).

`scaling` puts runs of several (partitions, workers) configurations side by side, each
configuration's figures relative to the first (1 partition, 1 process).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from partita import demo
from partita.bench import journey, loop
from partita.bench.hops import engine_hops
from partita.bench.parties import Broker, Child, Progress
from partita.bench.procstats import usage
from partita.bench.replaying import replay_partition
from partita.bench.scratch import scratch_namespace
from partita.client import Client
from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.log.admin import admin_client
from partita.log.clients import engine_group, new_consumer
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, job_topic_spec, load_specs

_HERE = Path(__file__).resolve().parent
JOB_TYPE = "bench.task"


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    process_id: str
    bpmn: Path
    job_types: tuple[str, ...] = (JOB_TYPE,)
    job_worker: str = "partita.bench.e2e_jobs"
    """The module run as the job worker: `partita.bench.e2e_jobs` (BOOTSTRAP NAMESPACE
    JOB_TYPE CONCURRENCY) or the demo's (`partita.demo.jobs`: BOOTSTRAP NAMESPACE PARENT_PID)."""


WORKLOADS = {
    "one-task": Workload("one-task", "bench-one-task", _HERE / "one-task.bpmn"),
    "typical": Workload("typical", "bench-typical", _HERE / "typical.bpmn"),
    # the demo's own process, orders and job worker: the demo's latency, measured as bench
    # measures, without the demo's process around it
    "order-demo": Workload(
        "order-demo", demo.PROCESS_ID, demo.BPMN, demo.JOB_TYPES, "partita.demo.jobs"
    ),
}


def _log_end(config: Config) -> int:
    """Records on the log so far (read_uncommitted: the true end), all partitions."""
    consumer = new_consumer(kafka_access(config, KafkaRole.OPERATOR), {"group.id": "bench-e2e"})
    try:
        total = 0
        for partition in range(config.partitions):
            _, high = consumer.get_watermark_offsets(
                TopicPartition(config.log_topic, partition), timeout=30, cached=False
            )
            total += int(high)
        return total
    finally:
        consumer.close()


def wait_for_stable_group(
    config: Config, workers: int, progress: Progress, timeout: float = 120
) -> None:
    """Until the engine group is stable with `workers` members sharing every log partition.
    Loaded earlier, a partition can move while instances await their results; the new owner
    does not know them (awaited results live in memory, as in Zeebe), so their creators wait
    out their timeout and the saturation figure measures that wait."""
    admin = admin_client(kafka_access(config, KafkaRole.OPERATOR))
    group = engine_group(config.namespace)
    wanted = set(range(config.partitions))
    progress(f"waiting for {workers} engine worker(s) to share {len(wanted)} partition(s)...")
    seen = "nothing yet"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            description = admin.describe_consumer_groups([group], request_timeout=10)[
                group
            ].result()
        except KafkaException as exc:
            seen = exc.args[0].str()
        else:
            members = description.members or []
            owned = {
                tp.partition
                for member in members
                for tp in member.assignment.topic_partitions or []
                if tp.topic == config.log_topic
            }
            seen = f"{description.state.name}, {len(members)} member(s), partitions {sorted(owned)}"
            stable = description.state.name == "STABLE"
            if stable and len(members) == workers and owned == wanted:
                return
        time.sleep(0.5)
    raise PartitaError(f"the engine group {group} did not settle within {timeout:g} s: {seen}")


def _load(config: Config, workload: Workload, instances: int, rate: float, in_flight: int) -> Any:
    args = [
        sys.executable,
        "-m",
        "partita.bench.e2e_load",
        config.bootstrap,
        config.namespace,
        workload.process_id,
        str(instances),
        str(rate),
        str(in_flight),
    ]
    result = subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
        env={**os.environ, **config.kafka_env()},
    )
    if result.returncode != 0:
        raise PartitaError(f"the load generator failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_workload(  # noqa: PLR0917 - the benchmark's knobs, spelled out
    config: Config,
    workload: Workload,
    instances: int,
    rate: float,
    latency_instances: int,
    in_flight: int,
    job_concurrency: int,
    progress: Progress,
    workers: int = 1,
    broker_pid: int | None = None,
) -> dict[str, Any]:
    home = config.home
    broker = Broker(broker_pid)
    apply_topics(
        admin_client(kafka_access(config, KafkaRole.OPERATOR)),
        [*load_specs(config), *(job_topic_spec(config, t) for t in workload.job_types)],
    )
    cluster = ["--bootstrap-servers", config.bootstrap, "--namespace", config.namespace]
    processes = ["--processes", str(workers)] if workers > 1 else []
    engine_worker = Child(
        "engine worker",
        [sys.executable, "-m", "partita.cli", "worker", *cluster, "--home", str(home), *processes],
        home / "engine-worker.log",
        {**config.kafka_env(), "PARTITA_TRUNCATE": "false"},  # the whole log stays (replay)
        tree=workers > 1,
    )
    if workload.job_worker == "partita.bench.e2e_jobs":
        job_args = [JOB_TYPE, str(job_concurrency)]
    else:
        job_args = [str(os.getpid())]
    jobs = Child(
        "job worker",
        [
            *(sys.executable, "-m", workload.job_worker),
            *(config.bootstrap, config.namespace, *job_args),
        ],
        home / "job-worker.log",
        config.kafka_env(),
    )
    try:
        jobs.wait_for_line("ready", 120)
        wait_for_stable_group(config, workers, progress)
        with Client(config, timeout=120) as client:
            client.deploy(workload.bpmn)
        progress(f"[{workload.name}] warming up (200 instances)...")
        _load(config, workload, 200, 0, in_flight)

        progress(f"[{workload.name}] saturation: {instances} instances, {in_flight} in flight...")
        log_before, engine_before, jobs_before, broker_before = (
            _log_end(config),
            engine_worker.sample(),
            jobs.sample(),
            broker.sample(),
        )
        saturated = _load(config, workload, instances, 0, in_flight)
        seconds = saturated["seconds"]
        records = _log_end(config) - log_before
        saturation = {
            **saturated,
            "instances_per_s_per_partition": round(
                saturated["instances_per_s"] / config.partitions, 1
            ),
            "log_records_per_s": round(records / seconds),
            "engine_worker": usage(engine_before, engine_worker.sample(), seconds),
            "job_worker": usage(jobs_before, jobs.sample(), seconds),
            **broker.usage(broker_before, seconds),
        }

        progress(f"[{workload.name}] latency: {latency_instances} instances at {rate:g}/s...")
        latency_since_ms = int(time.time() * 1000)
        engine_before, jobs_before = engine_worker.sample(), jobs.sample()
        broker_before = broker.sample()
        latency = _load(config, workload, latency_instances, rate, in_flight)
        latency["engine_worker"] = usage(engine_before, engine_worker.sample(), latency["seconds"])
        latency["job_worker"] = usage(jobs_before, jobs.sample(), latency["seconds"])
        latency |= broker.usage(broker_before, latency["seconds"])
    finally:
        jobs.stop()
        engine_worker.stop()
    if workload.name in ("one-task", "order-demo"):
        progress(f"[{workload.name}] the latency phase's hops, from the records' timestamps...")
        latency["hops_ms"] = engine_hops(config, latency_since_ms)
    progress(f"[{workload.name}] replaying partition 0 into an empty store...")
    return {
        "namespace": config.namespace,
        "saturation": saturation,
        "fixed_rate": latency,
        "replay": replay_partition(config, 0),
    }


def run(
    config: Config,
    *,
    workloads: list[str],
    instances: int = 5000,
    rate: float = 200.0,
    typical_rate: float = 20.0,
    latency_instances: int = 3000,
    partitions: int = 1,
    workers: int = 1,
    in_flight: int = 500,
    job_concurrency: int = 8,
    baseline_commands: int = 20_000,
    progress: Progress = print,
    broker_pid: int | None = None,
    raw_journey: bool = True,
    keep_topics: bool = False,
) -> dict[str, Any]:
    """`broker_pid`: the broker's process, when it runs on this machine (its CPU is sampled).
    `raw_journey`: with the one-task workload, also time its instances' way through Kafka at
    the same rate with nothing but confluent-kafka (`partita.bench.journey`). Each workload
    runs in a namespace of its own, deleted afterwards unless `keep_topics`."""
    out: dict[str, Any] = {
        "bench": "e2e",
        "partitions": partitions,
        "workers": workers,
        "rate": rate,
        "typical_rate": typical_rate,
        "cpus": os.cpu_count(),
    }
    with tempfile.TemporaryDirectory(prefix="partita-bench-e2e-") as scratch:
        for name in workloads:
            if name not in WORKLOADS:
                raise PartitaError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
            home = Path(scratch) / name
            home.mkdir()
            with scratch_namespace(
                config, "e2e", keep=keep_topics, partitions=partitions, home=home
            ) as bench_config:
                out[name] = run_workload(
                    bench_config,
                    WORKLOADS[name],
                    instances,
                    typical_rate if name == "typical" else rate,
                    latency_instances,
                    in_flight,
                    job_concurrency,
                    progress,
                    workers,
                    broker_pid,
                )
        progress(f"Raw confluent-kafka transactional loop: {baseline_commands} commands...")
        with scratch_namespace(
            config, "raw", keep=keep_topics, partitions=1, home=Path(scratch)
        ) as raw_config:
            apply_topics(
                admin_client(kafka_access(raw_config, KafkaRole.OPERATOR)), load_specs(raw_config)
            )
            raw = loop.run_raw(raw_config, baseline_commands)
    out["raw_loop_records_per_s"] = raw["records_per_s"]
    for name in workloads:
        engine_rate = out[name]["saturation"]["log_records_per_s"] / partitions
        out[name]["log_records_per_s_vs_raw_loop"] = round(engine_rate / raw["records_per_s"], 3)
    if raw_journey and "one-task" in workloads:
        measured = out["one-task"]["fixed_rate"]
        out["one-task"]["raw_journey"] = through_kafka = journey.run(
            replace(config, partitions=1),
            latency_instances,
            rate,
            progress=progress,
            broker_pid=broker_pid,
            keep_topics=keep_topics,
        )
        out["one-task"]["fixed_rate_minus_raw_journey_ms"] = {
            name: round(measured[name] - through_kafka[name], 1)
            for name in ("latency_ms_p50", "latency_ms_p95", "latency_ms_p99")
        }
    return out


def side_by_side(
    runs: Mapping[str, list[dict[str, Any]]],
    workloads: list[str],
    configs: Mapping[str, Config],
    environments: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """Several runs of `run` per configuration (e.g. plaintext and SASL_SSL, or the pure-Python
    and the compiled codec, alternated in one invocation) as one document: every run, the
    median figures per configuration and workload, and each configuration's figures relative
    to the first."""
    medians = _medians(runs, workloads, _COMPARED)
    return {
        "bench": "e2e-compared",
        "configurations": {name: configs[name].kafka_env() or "plaintext" for name in configs},
        "environments": {name: dict((environments or {}).get(name, {})) for name in configs},
        "bootstrap": {name: configs[name].bootstrap for name in configs},
        "medians": medians,
        "relative_to_main": _relative(medians),
        "runs": runs,
    }


def scaling(
    runs: Mapping[str, list[dict[str, Any]]],
    workloads: list[str],
    setups: Mapping[str, tuple[int, int]],
) -> dict[str, Any]:
    """Runs of `run` per (partitions, workers) configuration as one document: every run, the
    median figures per configuration and workload, and each configuration's figures relative to
    the first (the scaling factor, e.g. 2 partitions and 2 processes over 1 and 1)."""
    medians = _medians(runs, workloads, _SCALED)
    return {
        "bench": "e2e-scaling",
        "configurations": {
            name: {"partitions": partitions, "workers": workers}
            for name, (partitions, workers) in setups.items()
        },
        "medians": medians,
        "relative_to_first": _relative(medians),
        "runs": runs,
    }


def _medians(
    runs: Mapping[str, list[dict[str, Any]]],
    workloads: list[str],
    figures: Mapping[str, tuple[str, ...]],
) -> dict[str, dict[str, dict[str, float]]]:
    medians: dict[str, dict[str, dict[str, float]]] = {}
    for name, results in runs.items():
        medians[name] = {
            workload: {
                figure: statistics.median(_figure(result[workload], path) for result in results)
                for figure, path in figures.items()
            }
            for workload in workloads
        }
    return medians


def _relative(
    medians: Mapping[str, dict[str, dict[str, float]]],
) -> dict[str, dict[str, dict[str, float]]]:
    """Each configuration's medians divided by the first configuration's."""
    main = next(iter(medians.values()))
    return {
        name: {
            workload: {
                figure: round(value / main[workload][figure], 3) if main[workload][figure] else 0.0
                for figure, value in figures.items()
            }
            for workload, figures in per_workload.items()
        }
        for name, per_workload in medians.items()
    }


_COMPARED = {
    "saturation_instances_per_s": ("saturation", "instances_per_s"),
    "saturation_engine_cpu_percent": ("saturation", "engine_worker", "cpu_percent"),
    "fixed_rate_p50_ms": ("fixed_rate", "latency_ms_p50"),
    "fixed_rate_p99_ms": ("fixed_rate", "latency_ms_p99"),
    "fixed_rate_engine_cpu_percent": ("fixed_rate", "engine_worker", "cpu_percent"),
    "replay_events_per_s": ("replay", "events_per_s"),
}
"""The figures `side_by_side` compares: path of each in a workload's result."""

_SCALED = {**_COMPARED, "saturation_log_records_per_s": ("saturation", "log_records_per_s")}
"""The figures `scaling` compares."""


def _figure(result: Mapping[str, Any], path: tuple[str, ...]) -> float:
    value: Any = result
    for key in path:
        value = value[key]
    return float(value)

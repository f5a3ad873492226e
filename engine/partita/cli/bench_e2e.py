"""`partita bench e2e`: the engine end to end in separate processes, in rounds, alone or side by
side (two clusters, two codecs, or 1 against N partitions and processes)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from partita.cli.common import (
    Subcommands,
    add_command,
    build_config,
    progress,
    unwinds_on_sigterm,
)
from partita.config import Config
from partita.errors import ConfigError

E2E_EXAMPLES = """examples:
  partita bench e2e                         both workloads, one partition
  partita bench e2e --workload one-task --instances 20000 --rate 100
  partita bench journey --rate 200          Kafka alone: a one-task instance's journey
  partita bench e2e --partitions 3          one engine worker owns all three (default 1)
  partita bench e2e --workload order-demo --partitions 3 --rate 100
                                            the demo process, measured as bench measures
  partita bench e2e --partitions 2 --workers 2   two worker processes, a partition each
  partita bench e2e --workload one-task --scaling   1 partition/1 process, then 2/2, side by side
  partita bench e2e --workload one-task --rounds 2 \\
      --compare-kafka-config .partita/kafka-secure/clients/admin.properties
                                            plaintext vs SASL_SSL, alternating
  partita bench e2e --workload one-task --rounds 2 --compare-codec
                                            pure-Python vs compiled codec, alternating"""


def local_broker_pid(config: Config) -> int | None:
    """The pid of the broker `partita kafka up` started from the config's home, when it is the
    cluster the config names; None for any other cluster."""
    from partita.cli.kafka import local_broker

    status = local_broker(config).status()
    return status.pid if status.running and status.bootstrap == config.bootstrap else None


@unwinds_on_sigterm
def cmd_bench_e2e(args: argparse.Namespace) -> int:
    from partita.bench import e2e

    config = build_config(args)
    workloads = ["one-task", "typical"] if args.workload == "both" else [args.workload]
    partitions = args.partitions or 1  # the cluster flag; one partition unless asked
    workers = args.workers or 1
    configs = {"main": config}
    setups = {"main": (partitions, workers)}
    environments: dict[str, dict[str, str]] = {"main": {}}
    if sum((args.scaling, args.compare_kafka_config is not None, args.compare_codec)) > 1:
        raise ConfigError("use one of --scaling, --compare-kafka-config and --compare-codec")
    if args.baseline_commands < 1:  # the engine's log rate is printed as a share of the loop's
        raise ConfigError(
            f"--baseline-commands takes a count of at least 1, not {args.baseline_commands}"
        )
    if args.compare_codec:  # every process of the run (engine, jobs, load, replay) uses it
        environments = {
            "pure-python": {"PARTITA_NATIVE": "off"},
            "compiled": {"PARTITA_NATIVE": "on"},
        }
        configs = dict.fromkeys(environments, config)
        setups = dict.fromkeys(environments, setups["main"])
    elif args.scaling:
        partitions = args.partitions or 2
        workers = args.workers or partitions
        setups = {"1x1": (1, 1), f"{partitions}x{workers}": (partitions, workers)}
        configs = dict.fromkeys(setups, config)
    elif args.compare_kafka_config is not None:
        configs["compared"] = Config.from_env(kafka_config=args.compare_kafka_config)
        setups["compared"] = setups["main"]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in configs}
    for round_number in range(1, args.rounds + 1):
        for name, each in configs.items():
            each_partitions, each_workers = setups[name]
            progress(
                f"End to end at {each.bootstrap} ({name}, round {round_number}/{args.rounds}):"
                f" {', '.join(workloads)} on {each_partitions} partition(s) and"
                f" {each_workers} engine worker process(es); job worker and load generator in"
                " their own processes"
            )
            with _environment(environments.get(name, {})):
                result = e2e.run(
                    each,
                    workloads=workloads,
                    instances=args.instances,
                    rate=args.rate,
                    typical_rate=args.typical_rate,
                    latency_instances=args.latency_instances,
                    partitions=each_partitions,
                    workers=each_workers,
                    in_flight=args.in_flight,
                    job_concurrency=args.job_concurrency,
                    baseline_commands=args.baseline_commands,
                    progress=progress,
                    broker_pid=local_broker_pid(each),
                    raw_journey=not args.no_raw_journey,
                    keep_topics=args.keep_topics,
                )
            runs[name].append(result)
    if args.scaling:
        result = e2e.scaling(runs, workloads, setups)
        _say_scaling(result, workloads)
        print(json.dumps(result))
    elif len(configs) == 1 and args.rounds == 1:
        print(json.dumps(runs["main"][0]))
    else:
        print(json.dumps(e2e.side_by_side(runs, workloads, configs, environments)))
    return 0


@contextlib.contextmanager
def _environment(variables: dict[str, str]) -> Iterator[None]:
    """`variables` set in this process's environment (which the bench's children inherit) for
    the block, then restored."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _say_scaling(result: dict[str, Any], workloads: list[str]) -> None:
    """The scaling figures as lines a reader takes in at a glance (stderr; JSON on stdout)."""
    first = next(iter(result["medians"]))
    for workload in workloads:
        for name, medians in result["medians"].items():
            figures = medians[workload]
            factor = result["relative_to_first"][name][workload]["saturation_instances_per_s"]
            progress(
                f"[{workload}] {name} (partitions x processes): saturation"
                f" {figures['saturation_instances_per_s']:g} instances/s"
                f" ({figures['saturation_log_records_per_s']:g} log records/s, engine"
                f" {figures['saturation_engine_cpu_percent']:g} % of a core), fixed rate p50"
                f" {figures['fixed_rate_p50_ms']:g} ms p99 {figures['fixed_rate_p99_ms']:g} ms;"
                f" x{factor:g} the saturation of {first}"
            )


def register(benches: Subcommands) -> None:
    """Add `partita bench e2e`."""
    e2e_bench = add_command(
        benches,
        "e2e",
        cmd_bench_e2e,
        "the engine end to end: saturation, latency at a rate, CPU/RSS, replay, raw baseline",
        examples=E2E_EXAMPLES,
        local=True,
    )
    e2e_bench.add_argument(
        "--workload",
        choices=["one-task", "typical", "order-demo", "both"],
        default="both",
        help="one-task (start, task, end), typical (10 tasks, 2 timers), order-demo (the demo's"
        " process, orders and job worker), or both one-task and typical (default)",
    )
    e2e_bench.add_argument(
        "--instances", type=int, default=5000, help="instances at saturation (default: 5000)"
    )
    e2e_bench.add_argument(
        "--rate", type=float, default=200.0, help="fixed rate of the latency phase (200/s)"
    )
    e2e_bench.add_argument(
        "--typical-rate",
        type=float,
        default=20.0,
        help="fixed rate of the typical workload's latency phase (20/s)",
    )
    e2e_bench.add_argument(
        "--latency-instances",
        type=int,
        default=3000,
        help="instances of the latency phase (default: 3000)",
    )
    e2e_bench.add_argument(
        "--in-flight",
        type=int,
        default=500,
        help="unanswered creations at saturation (default: 500)",
    )
    e2e_bench.add_argument(
        "--job-concurrency", type=int, default=8, help="job worker tasks at once (default: 8)"
    )
    e2e_bench.add_argument(
        "--compare-kafka-config",
        type=Path,
        metavar="FILE",
        help="also run every round against the cluster and security of this Kafka client"
        " properties file (e.g. a SASL_SSL broker) and print both side by side",
    )
    e2e_bench.add_argument(
        "--compare-codec",
        action="store_true",
        help="run every round with the pure-Python codec (PARTITA_NATIVE=off), then with the"
        " compiled one (on), and print both side by side",
    )
    e2e_bench.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="repeat the run (alternating with --compare-kafka-config or --compare-codec),"
        " default 1",
    )
    e2e_bench.add_argument(
        "--workers",
        type=int,
        help="engine worker processes (`partita worker --processes W`); default 1, with"
        " --scaling as many as partitions",
    )
    e2e_bench.add_argument(
        "--scaling",
        action="store_true",
        help="run 1 partition with 1 process, then --partitions (default 2) with --workers, and"
        " print both with the second's figures relative to the first",
    )
    e2e_bench.add_argument(
        "--no-raw-journey",
        action="store_true",
        help="skip the one-task instance's journey through Kafka alone at --rate (the latency"
        " baseline printed next to the engine's)",
    )
    e2e_bench.add_argument(
        "--baseline-commands",
        type=int,
        default=20_000,
        help="commands through the raw transactional loop (default: 20000)",
    )
    add_keep_topics(e2e_bench)


def add_keep_topics(parser: argparse.ArgumentParser) -> None:
    """`--keep-topics`, for every bench that writes to a scratch namespace."""
    parser.add_argument(
        "--keep-topics",
        action="store_true",
        help="keep the benchmark's topics and groups (namespace printed in the result) instead"
        " of deleting them when it ends",
    )

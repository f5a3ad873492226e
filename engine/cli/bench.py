"""`partita bench ...`: each benchmark prints one JSON line of measured figures."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.cli.common import Subcommands, add_command, add_group, build_config, progress
from engine.config import Config
from engine.errors import ConfigError

BENCH_EXAMPLES = """examples:
  partita bench codec                  no broker needed
  partita bench state                  no broker needed
  partita bench e2e                    the engine end to end, on the local broker
  partita bench recovery --instances 10000
  partita bench txn                    what each Kafka transaction call costs on this cluster

Each prints one JSON line of measured figures on stdout; progress goes to stderr.
"""

CODEC_EXAMPLES = """examples:
  partita bench codec
  partita bench codec --rounds 31 --batch 10000
"""

STATE_EXAMPLES = """examples:
  partita bench state
  partita bench state --operations 1000000
"""

LOOP_EXAMPLES = """examples:
  partita bench loop                       20000 commands on the local broker
  partita bench loop --commands 100000 --bootstrap-servers kafka:9092
"""

RECOVERY_EXAMPLES = """examples:
  partita bench recovery                   10,000 and then 100,000 in-flight instances
  partita bench recovery --instances 1000,10000
"""

CORRELATION_EXAMPLES = """examples:
  partita bench correlation                1000 waiting instances, 200 messages/s
  partita bench correlation --instances 5000 --rate 1000

Exit code 1 unless every waiting instance continued.
"""

JOURNEY_EXAMPLES = """examples:
  partita bench journey                    3000 journeys at 200/s on the local broker
  partita bench journey --rate 20 --instances 1000

A relay in the engine's place makes the engine's Kafka calls in its order (copies, events and
job or reply, offsets, every delivery, commit) with no processing, and a bare job worker
answers each job: what Kafka's transactions alone cost a one-task instance. `partita bench e2e`
prints it next to the engine's latency. Exit code 1 unless every journey was answered.
"""

TXN_EXAMPLES = """examples:
  partita bench txn                        500 transactions on the local broker
  partita bench txn --transactions 2000 --records 20 --bootstrap-servers kafka:9092

Times begin, the first write of a transaction (the partition is added to it first), a second
write, sending offsets and the commit, in ms (p50/p90/p99): the floor every transactional hop
of an instance pays on this cluster, whatever the engine does.
"""

E2E_EXAMPLES = """examples:
  partita bench e2e                         both workloads, one partition
  partita bench e2e --workload one-task --instances 20000 --rate 100
  partita bench journey --rate 200          Kafka alone: a one-task instance's journey
  partita bench e2e --partitions 3          one engine worker owns all three (default 1)
  partita bench e2e --partitions 2 --workers 2   two worker processes, a partition each
  partita bench e2e --workload one-task --scaling   1 partition/1 process, then 2/2, side by side
  partita bench e2e --workload one-task --rounds 2 \\
      --compare-kafka-config .partita/kafka-secure/clients/admin.properties
                                            plaintext vs SASL_SSL, alternating
  partita bench e2e --workload one-task --rounds 2 --compare-codec
                                            pure-Python vs compiled codec, alternating"""


def cmd_bench_codec(args: argparse.Namespace) -> int:
    from engine.bench import codec

    progress(f"Timing encode/decode: {args.rounds} rounds x {args.batch} records each...")
    print(json.dumps(codec.run(rounds=args.rounds, batch=args.batch)))
    return 0


def cmd_bench_state(args: argparse.Namespace) -> int:
    from engine.bench import state

    progress(f"Timing the state store with {args.operations} operations...")
    print(json.dumps(state.run(operations=args.operations)))
    return 0


def cmd_bench_recovery(args: argparse.Namespace) -> int:
    from engine.bench import recovery

    sizes = [int(n) for n in str(args.instances).split(",") if n.strip()]
    print(
        json.dumps(recovery.run(build_config(args), sizes, progress, keep_topics=args.keep_topics))
    )
    return 0


def cmd_bench_correlation(args: argparse.Namespace) -> int:
    from engine.bench import correlation

    config = build_config(args)
    result = correlation.run(config, instances=args.instances, rate=args.rate, progress=progress)
    print(json.dumps(result))
    return 0 if result["continued"] == args.instances else 1


def cmd_bench_loop(args: argparse.Namespace) -> int:
    from engine.bench import loop

    config = build_config(args)
    progress(
        f"Engine loop vs raw transactional loop, {args.commands} commands x"
        f" {loop.EVENTS_PER_COMMAND} events on one partition at {config.bootstrap}..."
    )
    print(json.dumps(loop.run(config, commands=args.commands, keep_topics=args.keep_topics)))
    return 0


def cmd_bench_journey(args: argparse.Namespace) -> int:
    from engine.bench import journey

    config = build_config(args)
    progress(
        f"A one-task instance's journey through Kafka alone at {config.bootstrap}:"
        f" {args.instances} at {args.rate:g}/s"
    )
    result = journey.run(
        config,
        args.instances,
        args.rate,
        progress=progress,
        broker_pid=_local_broker_pid(config),
        keep_topics=args.keep_topics,
    )
    print(json.dumps({"bench": "journey", **result}))
    return 0 if result["unanswered"] == 0 else 1


def cmd_bench_txn(args: argparse.Namespace) -> int:
    from engine.bench import transactions

    config = build_config(args)
    progress(f"The calls of a Kafka transaction at {config.bootstrap}, one partition")
    result = transactions.run(
        config,
        transactions=args.transactions,
        records=args.records,
        keep_topics=args.keep_topics,
        progress=progress,
    )
    print(json.dumps(result))
    return 0


def _local_broker_pid(config: Config) -> int | None:
    """The pid of the broker `partita kafka up` started from the config's home, when it is the
    cluster the config names; None for any other cluster."""
    from engine.cli.kafka import local_broker

    status = local_broker(config).status()
    return status.pid if status.running and status.bootstrap == config.bootstrap else None


def cmd_bench_e2e(args: argparse.Namespace) -> int:
    from engine.bench import e2e

    config = build_config(args)
    workloads = ["one-task", "typical"] if args.workload == "both" else [args.workload]
    partitions = args.partitions or 1  # the cluster flag; one partition unless asked
    workers = args.workers or 1
    configs = {"main": config}
    setups = {"main": (partitions, workers)}
    environments: dict[str, dict[str, str]] = {"main": {}}
    if sum((args.scaling, args.compare_kafka_config is not None, args.compare_codec)) > 1:
        raise ConfigError("use one of --scaling, --compare-kafka-config and --compare-codec")
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
                    broker_pid=_local_broker_pid(each),
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


def register(commands: Subcommands) -> None:
    """Add `partita bench` and its benchmarks."""
    _, benches = add_group(
        commands,
        "bench",
        "benchmarks; each prints one JSON line",
        examples=BENCH_EXAMPLES,
        dest="bench_command",
        metavar="BENCH",
    )
    codec_bench = add_command(
        benches,
        "codec",
        cmd_bench_codec,
        "encode/decode microseconds per record (median)",
        description="Median encode and decode time per record of a typical job record and a"
        " process instance record, with the Avro single-object codec.",
        examples=CODEC_EXAMPLES,
        cluster=False,
    )
    codec_bench.add_argument("--rounds", type=int, default=15, help="rounds (default: 15)")
    codec_bench.add_argument(
        "--batch", type=int, default=2000, help="records per round (default: 2000)"
    )
    state_bench = add_command(
        benches,
        "state",
        cmd_bench_state,
        "state store get/put/scan per second and commits of 1,000-op batches",
        description="Throughput of the partition state store through the batch overlay.",
        examples=STATE_EXAMPLES,
        cluster=False,
    )
    state_bench.add_argument(
        "--operations", type=int, default=200_000, help="operations (default: 200000)"
    )
    loop_bench = add_command(
        benches,
        "loop",
        cmd_bench_loop,
        "engine processing loop vs a raw transactional loop (needs Kafka)",
        examples=LOOP_EXAMPLES,
        local=True,
    )
    loop_bench.add_argument(
        "--commands", type=int, default=20_000, help="commands to process (default: 20000)"
    )
    recovery_bench = add_command(
        benches,
        "recovery",
        cmd_bench_recovery,
        "snapshot size and time, restore time, failover cold/warm/standby (needs Kafka)",
        examples=RECOVERY_EXAMPLES,
        local=True,
    )
    recovery_bench.add_argument(
        "--instances",
        default="10000,100000",
        help="in-flight instance counts, comma-separated (default: 10000,100000)",
    )
    correlation_bench = add_command(
        benches,
        "correlation",
        cmd_bench_correlation,
        "publish -> waiting instance continues, latency percentiles (needs Kafka)",
        examples=CORRELATION_EXAMPLES,
        local=True,
    )
    correlation_bench.add_argument(
        "--instances", type=int, default=1000, help="waiting instances (default: 1000)"
    )
    correlation_bench.add_argument(
        "--rate", type=float, default=200.0, help="messages per second (default: 200)"
    )
    journey_bench = add_command(
        benches,
        "journey",
        cmd_bench_journey,
        "a one-task instance's way through Kafka alone: latency at a rate (needs Kafka)",
        examples=JOURNEY_EXAMPLES,
        local=True,
    )
    journey_bench.add_argument(
        "--instances", type=int, default=3000, help="journeys to time (default: 3000)"
    )
    journey_bench.add_argument(
        "--rate", type=float, default=200.0, help="journeys started per second (default: 200)"
    )
    txn_bench = add_command(
        benches,
        "txn",
        cmd_bench_txn,
        "what each call of a Kafka transaction costs: the latency floor (needs Kafka)",
        examples=TXN_EXAMPLES,
        local=True,
    )
    txn_bench.add_argument(
        "--transactions", type=int, default=500, help="transactions per series (default: 500)"
    )
    txn_bench.add_argument(
        "--records", type=int, default=5, help="records per write, two writes each (default: 5)"
    )
    for bench in (loop_bench, recovery_bench, journey_bench, txn_bench):
        _add_keep_topics(bench)
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
        choices=["one-task", "typical", "both"],
        default="both",
        help="one-task (start, task, end), typical (10 tasks, 2 timers), or both (default)",
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
    _add_keep_topics(e2e_bench)


def _add_keep_topics(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep-topics",
        action="store_true",
        help="keep the benchmark's topics and groups (namespace printed in the result) instead"
        " of deleting them when it ends",
    )

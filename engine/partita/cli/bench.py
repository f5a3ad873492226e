"""`partita bench ...`: each benchmark prints one JSON line of measured figures."""

from __future__ import annotations

import argparse
import json

from partita.cli import bench_e2e, bench_gateway
from partita.cli.bench_e2e import add_keep_topics, local_broker_pid
from partita.cli.common import (
    Subcommands,
    add_command,
    add_group,
    build_config,
    progress,
    unwinds_on_sigterm,
)
from partita.errors import ConfigError

BENCH_EXAMPLES = """examples:
  partita bench codec                  no broker needed
  partita bench state                  no broker needed
  partita bench cpu                    the engine's CPU per command, no broker needed
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
  partita bench loop --rounds 5            five pairs alternated: the median ratio, and each
"""

CPU_EXAMPLES = """examples:
  partita bench cpu                        60000 commands in batches of 2000
  partita bench cpu --commands 200000 --batch 500

The engine side of `partita bench loop` without Kafka: what the engine's own work costs per
command, steady where the loop's figures swing with the broker. Compare two checkouts by
running it in each (e.g. a `git worktree`), alternated.
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
  partita bench journey --producers 2     the relay takes turns between 2 producers

A relay in the engine's place makes the engine's Kafka calls in its order (copies, events and
job or reply, offsets, every delivery, commit) with no processing, and a bare job worker
answers each job: what Kafka's transactions alone cost a one-task instance. `partita bench e2e`
prints it next to the engine's latency. With --producers 2 the relay writes each batch with the
producer whose commit is not under way: what overlapping the commits would take off Kafka's
share (the engine writes a partition with one). Exit code 1 unless every journey was answered.
"""

TXN_EXAMPLES = """examples:
  partita bench txn                        500 transactions on the local broker
  partita bench txn --transactions 2000 --records 20 --bootstrap-servers kafka:9092

Times begin, the first write of a transaction (the partition is added to it first), a second
write, sending offsets and the commit, in ms (p50/p90/p99): the floor every transactional hop
of an instance pays on this cluster, whatever the engine does.
"""


def cmd_bench_codec(args: argparse.Namespace) -> int:
    from partita.bench import codec

    progress(f"Timing encode/decode: {args.rounds} rounds x {args.batch} records each...")
    print(json.dumps(codec.run(rounds=args.rounds, batch=args.batch)))
    return 0


def cmd_bench_state(args: argparse.Namespace) -> int:
    from partita.bench import state

    progress(f"Timing the state store with {args.operations} operations...")
    print(json.dumps(state.run(operations=args.operations)))
    return 0


@unwinds_on_sigterm
def cmd_bench_recovery(args: argparse.Namespace) -> int:
    from partita.bench import recovery

    sizes = [int(n) for n in str(args.instances).split(",") if n.strip()]
    print(
        json.dumps(recovery.run(build_config(args), sizes, progress, keep_topics=args.keep_topics))
    )
    return 0


def cmd_bench_correlation(args: argparse.Namespace) -> int:
    from partita.bench import correlation

    config = build_config(args)
    result = correlation.run(config, instances=args.instances, rate=args.rate, progress=progress)
    print(json.dumps(result))
    return 0 if result["continued"] == args.instances else 1


def cmd_bench_loop(args: argparse.Namespace) -> int:
    from partita.bench import loop

    config = build_config(args)
    progress(
        f"Engine loop vs raw transactional loop, {args.commands} commands x"
        f" {loop.EVENTS_PER_COMMAND} events on one partition at {config.bootstrap}..."
    )
    if args.rounds < 1:
        raise ConfigError(f"--rounds takes a count of at least 1, not {args.rounds}")
    result = loop.run_rounds(
        config, args.commands, args.rounds, keep_topics=args.keep_topics, progress=progress
    )
    print(json.dumps(result))
    return 0


def cmd_bench_cpu(args: argparse.Namespace) -> int:
    from partita.bench import cpu

    try:
        result = cpu.run(args.commands, args.batch, progress=progress)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    print(json.dumps(result))
    return 0


@unwinds_on_sigterm
def cmd_bench_journey(args: argparse.Namespace) -> int:
    from partita.bench import journey

    if args.producers < 1:
        raise ConfigError(f"--producers takes a count of at least 1, not {args.producers}")
    config = build_config(args)
    progress(
        f"A one-task instance's journey through Kafka alone at {config.bootstrap}:"
        f" {args.instances} at {args.rate:g}/s, {args.producers} transactional producer(s)"
    )
    result = journey.run(
        config,
        args.instances,
        args.rate,
        progress=progress,
        broker_pid=local_broker_pid(config),
        keep_topics=args.keep_topics,
        producers=args.producers,
    )
    print(json.dumps({"bench": "journey", **result}))
    return 0 if result["unanswered"] == 0 else 1


def cmd_bench_txn(args: argparse.Namespace) -> int:
    from partita.bench import transactions

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
    loop_bench.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the engine and the raw loop this many times, alternated, and report the"
        " medians (default: 1)",
    )
    cpu_bench = add_command(
        benches,
        "cpu",
        cmd_bench_cpu,
        "the engine's CPU per command on its batch path, without Kafka",
        description="The engine side of `partita bench loop` (1 command -> 5 events) fed from"
        " memory over a producer double: microseconds of engine work per command.",
        examples=CPU_EXAMPLES,
        cluster=False,
    )
    cpu_bench.add_argument(
        "--commands", type=int, default=60_000, help="commands to process (default: 60000)"
    )
    cpu_bench.add_argument(
        "--batch", type=int, default=2000, help="commands per batch (default: 2000)"
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
    journey_bench.add_argument(
        "--producers",
        type=int,
        default=1,
        help="transactional producers the relay takes turns between, committing one while the"
        " next writes (default: 1, as the engine)",
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
        add_keep_topics(bench)
    bench_e2e.register(benches)
    bench_gateway.register(benches)

"""`partita up` (broker, topics and the demo: the quickest start) and `partita demo` (the demo
order process end to end, with counts and latency percentiles)."""

from __future__ import annotations

import argparse
import textwrap

from partita.cli.common import (
    Subcommands,
    add_command,
    build_config,
    progress,
    unwinds_on_sigterm,
)
from partita.cli.kafka import cmd_kafka_up, local_broker
from partita.cli.topics import cmd_topics_apply

UP_EXAMPLES = """examples:
  partita up                          local broker, topics, then 1000 demo instances
  partita up --no-demo                only the broker and the topics
  partita up --instances 200 --rate 50
  partita up --bootstrap-servers kafka:9092 --no-demo   topics on an existing cluster
"""

DEMO_EXAMPLES = """examples:
  partita demo                        1000 instances at 100/s; prints counts, latency and JSON
  partita demo --instances 5000 --rate 500
  partita demo --bootstrap-servers kafka:9092 --namespace demo

It starts its own engine worker and job worker, each in a process of its own, and stops them
when it ends (Ctrl-C included); exit code 1 if an instance did not complete.
"""


def cmd_up(args: argparse.Namespace) -> int:
    """Broker (unless external) + topics, then the demo (unless --no-demo), then next steps."""
    config = build_config(args)
    starts_broker = False
    if config.uses_local_broker:
        starts_broker = not local_broker(config).status().running
        cmd_kafka_up(args)
    cmd_topics_apply(args)
    if not args.no_demo:
        print()
        cmd_demo(args, broker_just_started=starts_broker)
    print(
        "\nPartita is ready.\n"
        f"  Kafka:     {config.bootstrap}\n"
        f"  Log topic: {config.log_topic} ({config.partitions} partitions)\n"
        "Next: `partita worker` to process the log, `partita deploy FILE`, `partita create ID`,"
        " `partita kafka down` to stop the broker."
    )
    return 0


@unwinds_on_sigterm
def cmd_demo(args: argparse.Namespace, *, broker_just_started: bool = False) -> int:
    """Deploy the demo order process and run instances end to end; print counts and latency.
    `broker_just_started`: the summary says that a broker started a moment ago makes the
    figures higher than they are on a warm one (its first runs measured 2-4 times a warm
    broker's p50 on a 2-core machine)."""
    from partita import demo

    config = build_config(args)
    progress(
        f"Demo: {args.instances} instances of {demo.PROCESS_ID} at {args.rate:g}/s, an engine"
        " worker and a push job worker, each in its own process..."
    )
    result = demo.run(config, instances=args.instances, rate=args.rate, progress=progress)
    note = f"Latency {result.latency_includes()}."
    if broker_just_started:
        note += (
            " The Kafka broker started a moment ago, and a new broker is slower for its first"
            " minute or so: these figures are above a warm broker's (`partita demo` runs the"
            " demo again)."
        )
    includes = textwrap.fill(note, 100, initial_indent="  ", subsequent_indent="  ")
    print(
        f"Demo: {result.completed}/{result.instances} instances completed"
        f" ({result.rejected} rejected, {result.unanswered} unanswered),"
        f" {result.jobs_completed} jobs, {result.seconds:.1f} s,"
        f" {result.instances_per_second:g} instances/s\n"
        f"Create-to-complete latency ms: p50 {result.latency_ms_p50:g},"
        f" p95 {result.latency_ms_p95:g}, p99 {result.latency_ms_p99:g},"
        f" max {result.latency_ms_max:g}\n"
        f"  {_path_line(result.one_job)} with one job (reserve-stock),"
        f" {_path_line(result.two_jobs)} with two (and review-order)\n{includes}"
    )
    print(result.json())
    return 0 if result.completed == result.instances else 1


def _path_line(figures: dict[str, float]) -> str:
    return (
        f"p50 {figures['latency_ms_p50']:g}, p99 {figures['latency_ms_p99']:g}"
        f" for the {figures['instances']:g} orders"
    )


def register(commands: Subcommands) -> None:
    """Add `partita up` and `partita demo`."""
    up = add_command(
        commands,
        "up",
        cmd_up,
        "start the local broker (unless external), apply the topics and run the demo",
        examples=UP_EXAMPLES,
        local=True,
    )
    up.add_argument("--no-demo", action="store_true", help="skip the demo run")
    demo = add_command(
        commands,
        "demo",
        cmd_demo,
        "run the demo order process end to end and print counts and latency percentiles",
        examples=DEMO_EXAMPLES,
        local=True,
    )
    for parser in (up, demo):
        parser.add_argument(
            "--instances", type=int, default=1000, help="demo instances to run (1000)"
        )
        parser.add_argument(
            "--rate", type=float, default=100.0, help="instances started per second (100)"
        )

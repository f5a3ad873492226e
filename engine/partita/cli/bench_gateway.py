"""`partita bench gateway`: what the gateway adds, Partita's own client side by side with
Zeebe-style gRPC and REST clients through `partita gateway`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from partita.cli.common import (
    Subcommands,
    add_command,
    build_config,
    progress,
    unwinds_on_sigterm,
)
from partita.errors import ConfigError

EXAMPLES = """examples:
  partita bench gateway                     every path, one partition, 200 instances/s
  partita bench gateway --partitions 3 --rate 100
  partita bench gateway --paths native grpc-stream
  partita bench gateway --rounds 3          medians of 3 rounds, every other one in reverse order
  partita bench gateway --slot 0            the paths' latency phases one after another

Paths: native (Partita's client and push job worker), grpc (CreateProcessInstanceWithResult and
a pyzeebe-style long-polling worker), grpc-stream (the same with a job stream), rest (REST
create with awaitCompletion, REST activation and completion). Each prints saturation and
latency at --rate; the gateway paths also their p50 and p99 as a ratio to native's. At --rate
the paths take turns in slots of --slot seconds, all running at once, each sending only in its
own slots, so that a machine slow for a while is slow for every path alike. First the floor:
what an empty gRPC call and an empty HTTP request cost their server's CPU on this machine, set
beside the gateway's CPU per instance."""


@unwinds_on_sigterm
def cmd_bench_gateway(args: argparse.Namespace) -> int:
    from partita.bench import gateway

    if args.rounds < 1:
        raise ConfigError(f"--rounds takes a count of at least 1, not {args.rounds}")
    if not 0 <= args.slot <= 60:
        raise ConfigError(
            f"--slot takes seconds from 0 to 60 (0: one path after another), not {args.slot}"
        )
    config = build_config(args)
    partitions = args.partitions or 1
    progress(
        f"The gateway's overhead at {config.bootstrap}: {', '.join(args.paths)} on {partitions}"
        " partition(s); engine worker, gateway, job workers and load in their own processes"
    )
    result = gateway.run(
        config,
        instances=args.instances,
        rate=args.rate,
        latency_instances=args.latency_instances,
        in_flight=args.in_flight,
        partitions=partitions,
        paths=tuple(args.paths),
        keep_topics=args.keep_topics,
        progress=progress,
        rounds=args.rounds,
        slot_s=args.slot,
    )
    _say(result)
    print(json.dumps(result))
    return 0


def _say(result: dict[str, Any]) -> None:
    """One line per path a reader takes in at a glance (stderr; JSON on stdout)."""
    floor = result["floor"]
    progress(
        "floor (an empty request, the server's CPU):"
        f" gRPC {floor['grpc']['server_cpu_us_per_request']} us,"
        f" HTTP {floor['http']['server_cpu_us_per_request']} us"
    )
    rounds = result.get("rounds")
    if rounds:
        progress(f"medians of {rounds} rounds:")
    for path, figures in result["paths"].items():
        saturated, fixed = figures["saturation"], figures["fixed_rate"]
        ratio = figures.get("vs_native")
        versus = f" ({ratio['p50']}x / {ratio['p99']}x native)" if ratio else ""
        if rounds and ratio:
            each = ", ".join(f"{r['vs_native']['p50']}x" for r in figures["rounds"])
            versus += f"; p50 ratio by round {each}"
        progress(
            f"{path:>12}: {saturated['instances_per_s']:,.0f} instances/s saturated;"
            f" at {result['rate']:g}/s p50 {fixed['latency_ms_p50']} ms,"
            f" p99 {fixed['latency_ms_p99']} ms{versus}"
        )
        cpu = figures.get("gateway_cpu")
        if cpu:
            progress(
                f"{'':>14}the gateway's CPU {cpu['ms_per_instance']} ms per instance;"
                f" the floor of its {cpu['requests_per_instance']} requests"
                f" {cpu['floor_ms_per_instance']} ms"
            )


PATHS = ("native", "grpc", "grpc-stream", "rest")
"""`partita.bench.gateway.PATHS`, written out: importing the bench would slow every --help."""


def register(benches: Subcommands) -> None:
    from partita.cli.bench_e2e import add_keep_topics

    bench = add_command(
        benches,
        "gateway",
        cmd_bench_gateway,
        "the gateway's overhead: native client vs gRPC and REST clients (needs Kafka)",
        examples=EXAMPLES,
        local=True,
    )
    bench.add_argument(
        "--instances", type=int, default=2000, help="instances at saturation (default: 2000)"
    )
    bench.add_argument(
        "--rate", type=float, default=200.0, help="instances per second (default: 200)"
    )
    bench.add_argument(
        "--latency-instances",
        type=int,
        default=2000,
        help="instances at --rate (default: 2000)",
    )
    bench.add_argument(
        "--in-flight", type=int, default=200, help="unanswered creations at most (default: 200)"
    )
    bench.add_argument(
        "--paths",
        nargs="+",
        choices=PATHS,
        default=list(PATHS),
        help="the paths to measure, in order (default: all)",
    )
    bench.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure the paths this many times, in reverse order every other round, and"
        " print medians (default: 1)",
    )
    bench.add_argument(
        "--slot",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="at --rate the paths take turns in slots this long; 0: one path after another"
        " (default: 1)",
    )
    add_keep_topics(bench)

"""The `partita` command line: `main` (the `partita` entry point) and `build_parser`.

`partita.cli.common` holds what every command shares (the Config from flags and environment,
progress output, flag groups, `add_command`, the exit codes of failures); each other module is
one group of commands: `up` (up, demo), `kafka`, `topics`, `worker` (worker, verify-replay),
`client` (deploy, create, cancel, jobs, publish, incidents resolve), `tasks` (user tasks),
`gateway`, `ops` (tail, status, export, acls, chaos), `analytics` (analytics, instances,
incidents list) and `bench`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from partita import __version__
from partita.cli import analytics, bench, client, gateway, kafka, ops, tasks, topics, up, worker
from partita.cli.common import ExamplesFormatter, run_command

__all__ = ["build_parser", "main"]

EXAMPLES = """examples:
  partita up                               local broker, topics and the demo: the quickest start
  partita worker                           process the log (leave it running)
  partita deploy examples/order-pricing.bpmn
  partita create order-pricing --vars '{"amount": 20}'
  partita status                           partitions, owners, lag, snapshots
  partita kafka down                       stop the local broker
  partita COMMAND --help                   a command's flags and examples

Configuration is PARTITA_* variables or flags (docs/configuration.md).
"""


def build_parser() -> argparse.ArgumentParser:
    """The parser of every `partita` command; a parsed command's function is `args.func`."""
    parser = argparse.ArgumentParser(
        prog="partita",
        description="Partita: a Zeebe-style BPMN workflow engine whose log is Apache Kafka.",
        epilog=EXAMPLES,
        formatter_class=ExamplesFormatter,
    )
    parser.add_argument("--version", action="version", version=f"partita {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # In the order `partita --help` lists them.
    up.register(commands)
    kafka.register(commands)
    topics.register(commands)
    worker.register_verify_replay(commands)
    client.register(commands)
    tasks.register(commands)
    ops.register(commands)
    analytics.register(commands)
    gateway.register(commands)
    bench.register(commands)
    worker.register_worker(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `partita` with `argv` (default: the process's arguments) and return its exit code."""
    return run_command(build_parser().parse_args(argv))

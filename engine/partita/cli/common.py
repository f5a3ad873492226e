"""What every `partita` command shares: the Config built from its flags and the environment,
progress output, the cluster and local-broker flag groups, the helpers that add a command or a
group of commands to the parser, and how a command's failure becomes an exit code.

Command modules (`partita.cli.kafka`, `partita.cli.client`, ...) import the heavy parts of the
engine (the Kafka client, RocksDB, the BPMN parser, faust) inside their command functions, not
at the top of the module. That is deliberate and the only reason for those function-level
imports: building the parser must stay cheap, so that `partita --help`, `partita COMMAND
--help` and a mistyped flag answer at once instead of loading the whole engine first.

Every command and group of commands is added through `add_command` or `add_group`, which
require an `examples:` block for its `--help` (tests/unit/cli/test_help.py walks the parser).
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeAlias

from partita.config import Config
from partita.config import settings as s
from partita.errors import PartitaError

Command: TypeAlias = Callable[[argparse.Namespace], int]
"""A command's function: it gets the parsed flags and returns the exit code."""

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What `add_subparsers` returns: the place commands are added to."""

EXAMPLES_HEADING = "examples:"
_P = ParamSpec("_P")


class ExamplesFormatter(argparse.HelpFormatter):
    """Wraps a description to the terminal like argparse's default, but prints an `examples:`
    epilog as written, so its command lines and their aligned notes stay on their lines."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith(EXAMPLES_HEADING):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def progress(message: str) -> None:
    """Say what is going on, on stderr, so that stdout keeps only a command's result."""
    print(message, file=sys.stderr, flush=True)


def build_config(args: argparse.Namespace) -> Config:
    """The Config of a command: PARTITA_* variables (and the Kafka properties file), overridden
    by whichever of the cluster and local-broker flags the command has and the user gave."""
    return Config.from_env(kafka_config=getattr(args, "kafka_config", None)).with_overrides(
        bootstrap_servers=getattr(args, "bootstrap_servers", None),
        namespace=getattr(args, "namespace", None),
        partitions=getattr(args, "partitions", None),
        home=getattr(args, "home", None),
        kafka_port=getattr(args, "port", None),
        controller_port=getattr(args, "controller_port", None),
    )


def add_cluster_flags(parser: argparse.ArgumentParser) -> None:
    """--bootstrap-servers, --namespace, --kafka-config and --partitions (see `build_config`)."""
    group = parser.add_argument_group("cluster (flags override PARTITA_* variables)")
    group.add_argument(
        "--bootstrap-servers",
        metavar="HOST:PORT",
        help=s.BOOTSTRAP_SERVERS.flag_help("use this existing cluster; no local broker is started"),
    )
    group.add_argument("--namespace", help=s.NAMESPACE.flag_help("topic prefix"))
    group.add_argument(
        "--kafka-config",
        metavar="FILE",
        type=Path,
        help=s.KAFKA_CONFIG.flag_help(
            "Kafka client properties (security.protocol, sasl.*, ssl.*) for every client;"
            " see docs/security.md"
        ),
    )
    group.add_argument(
        "--partitions",
        type=int,
        help=s.PARTITIONS.flag_help("partitions of the log topic"),
    )


def add_local_flags(parser: argparse.ArgumentParser) -> None:
    """--port, --controller-port and --home: where the local broker listens and keeps its data."""
    group = parser.add_argument_group("local broker")
    group.add_argument("--port", type=int, help=s.KAFKA_PORT.flag_help("client port on 127.0.0.1"))
    group.add_argument(
        "--controller-port",
        type=int,
        help=s.CONTROLLER_PORT.flag_help("KRaft controller port"),
    )
    group.add_argument(
        "--home",
        type=Path,
        help=s.HOME.flag_help("folder for jars and broker data"),
    )


def add_command(
    commands: Subcommands,
    name: str,
    func: Command,
    help_text: str,
    *,
    examples: str,
    local: bool = False,
    cluster: bool = True,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """Add the command `name` running `func`, with the cluster flags (unless `cluster` is
    false) and the local-broker flags (if `local`). Its `--help` shows `description` (default:
    `help_text`) and then `examples`, which must start with an `examples:` block."""
    if not examples.startswith(EXAMPLES_HEADING):
        raise ValueError(f"the examples of `{name}` must start with {EXAMPLES_HEADING!r}")
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=help_text,
        description=help_text if description is None else description,
        epilog=examples,
        formatter_class=ExamplesFormatter,
    )
    if cluster:
        add_cluster_flags(parser)
    if local:
        add_local_flags(parser)
    parser.set_defaults(func=func)
    return parser


def add_group(
    commands: Subcommands,
    name: str,
    help_text: str,
    *,
    examples: str,
    dest: str,
    metavar: str = "ACTION",
    required: bool = True,
    description: str | None = None,
) -> tuple[argparse.ArgumentParser, Subcommands]:
    """Add the group `name` (`partita kafka`, `partita jobs`, ...) and return its parser and the
    place its actions are added to; the chosen action's name is stored as `dest`."""
    if not examples.startswith(EXAMPLES_HEADING):
        raise ValueError(f"the examples of `{name}` must start with {EXAMPLES_HEADING!r}")
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=help_text,
        description=description,
        epilog=examples,
        formatter_class=ExamplesFormatter,
    )
    actions = parser.add_subparsers(dest=dest, metavar=metavar, required=required)
    return parser, actions


def unwinds_on_sigterm(command: Callable[_P, int]) -> Callable[_P, int]:
    """For a command that starts processes of its own (the demo, the benchmarks): while it
    runs, SIGTERM raises SystemExit(143), so the `finally` blocks that stop those processes
    run. SIGTERM's default would end this process alone and leave them running."""

    def terminate(*_: object) -> None:
        raise SystemExit(143)

    @functools.wraps(command)
    def wrapped(*args: _P.args, **kwargs: _P.kwargs) -> int:
        previous = signal.signal(signal.SIGTERM, terminate)
        try:
            return command(*args, **kwargs)
        finally:
            signal.signal(signal.SIGTERM, previous)

    return wrapped


def run_command(args: argparse.Namespace) -> int:
    """Run the parsed command and return its exit code. A PartitaError prints `partita: error:
    <what to do>` and gives 1, Ctrl-C gives 130, and a reader that stops reading early
    (`partita tail | head -1`) ends the command quietly with 0: no traceback for any of them."""
    try:
        return int(args.func(args))
    except PartitaError as exc:
        print(f"partita: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("partita: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader has what it wants
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0

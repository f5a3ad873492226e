"""`partita worker` (a partition worker: join the engine group and process the log) and
`partita verify-replay` (rebuild each partition's state from the log and compare digests)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from partita.cli.common import Subcommands, add_command, build_config, progress
from partita.config import Config, KafkaRole
from partita.errors import ConfigError
from partita.log.security import kafka_access

BUILTIN_ENGINE = "partita.processing.builtin:build_engine"

WORKER_EXAMPLES = """examples:
  partita worker                                  the built-in engine, local broker
  KAFKA_BOOTSTRAP_SERVERS=kafka:9092 PARTITA_NAMESPACE=orders partita worker
  PARTITA_DOWNSTREAM_GROUPS=partita.analytics,partita.export partita worker
  partita worker --max-commands-in-batch 500 --log-level debug
  partita worker --processes auto                 one process per core (at most one per partition)
  partita worker --processes 2 --namespace orders

Run as many as you like: the group <ns>.engine spreads the log's partitions over them.
Ctrl-C or SIGTERM stops it after the running batch. With --processes N a supervisor runs N
worker processes, prefixes their lines with [worker-<i>] and restarts one that crashes.
See docs/internals/worker.md.
"""

VERIFY_EXAMPLES = """examples:
  partita verify-replay                     every partition; exit code 1 if one differs
  partita verify-replay --partition 2
  partita verify-replay --engine mypackage.engine:build_engine   with your own appliers
"""


def cmd_worker(args: argparse.Namespace) -> int:
    from partita.stream.supervisor import follow_supervisor
    from partita.stream.worker import Worker, load_engine

    config = build_config(args)
    processes = _processes(args.processes, config)
    if processes > 1:
        return _supervise(args, config, processes)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    worker = Worker(
        config, load_engine(args.engine), max_commands_in_batch=args.max_commands_in_batch
    )
    worker.install_signal_handlers()
    follow_supervisor(worker.stopping.set)
    progress(
        f"Worker joining group {config.namespace}.engine on {config.log_topic} at"
        f" {config.bootstrap} (state in {config.home / 'state' / config.namespace})"
    )
    worker.run()
    progress("Worker stopped.")
    return 0


def _processes(value: str, config: Config) -> int:
    """`--processes`: a count, or `auto` (the cores, at most one per log partition)."""
    if value != "auto":
        try:
            count = int(value)
        except ValueError:
            count = 0
        if count < 1:
            raise ConfigError(f"--processes takes a count of at least 1 or auto, not {value!r}")
        return count
    cores = os.cpu_count() or 1
    partitions = _log_partitions(config)
    if partitions is None:
        progress(f"--processes auto: the log's partition count is unknown; {cores} (the cores)")
        return cores
    return max(1, min(cores, partitions))


def _log_partitions(config: Config) -> int | None:
    """The log topic's partition count from the cluster's metadata; None if it cannot say."""
    from confluent_kafka import KafkaException

    from partita.log.admin import admin_client

    try:
        metadata = admin_client(kafka_access(config, KafkaRole.ENGINE)).list_topics(
            config.log_topic, timeout=10
        )
    except KafkaException:
        return None
    topic = metadata.topics.get(config.log_topic)
    if topic is None or topic.error is not None or not topic.partitions:
        return None
    return len(topic.partitions)


def _supervise(args: argparse.Namespace, config: Config, processes: int) -> int:
    from partita.stream.supervisor import Supervisor

    if config.standby:  # a standby holds the store a sibling on this home must open
        raise ConfigError(
            "PARTITA_STANDBY=true needs one worker process per home: with --processes the"
            " workers share the home's state stores. Use --processes 1, or run several"
            " `partita worker` with a --home each"
        )
    supervisor = Supervisor(child_command(args), processes)
    supervisor.install_signal_handlers()
    progress(
        f"Supervisor starting {processes} worker processes in group {config.namespace}.engine on"
        f" {config.log_topic} at {config.bootstrap} (state in"
        f" {config.home / 'state' / config.namespace})"
    )
    return supervisor.run()


def child_command(args: argparse.Namespace) -> list[str]:
    """The `partita worker` command a supervised child runs: these flags without --processes."""
    command = [sys.executable, "-m", "partita.cli", "worker"]
    flags = {
        "--bootstrap-servers": args.bootstrap_servers,
        "--namespace": args.namespace,
        "--kafka-config": args.kafka_config,
        "--partitions": args.partitions,
        "--port": args.port,
        "--controller-port": args.controller_port,
        "--home": args.home,
        "--engine": args.engine,
        "--max-commands-in-batch": args.max_commands_in_batch,
        "--log-level": args.log_level,
    }
    for flag, value in flags.items():
        if value is not None:
            command += [flag, str(value)]
    return command


def cmd_verify_replay(args: argparse.Namespace) -> int:
    from partita.log.admin import admin_client
    from partita.stream.errors import UnappliableRecordError
    from partita.stream.replay.verify import verify_replay
    from partita.stream.worker import load_engine

    config = build_config(args)
    engine = load_engine(args.engine)
    if args.partition is not None:
        partitions = [args.partition]
    else:
        operator = kafka_access(config, KafkaRole.OPERATOR)
        topic = admin_client(operator).list_topics(config.log_topic, timeout=30)
        partitions = sorted(topic.topics[config.log_topic].partitions)
    different = 0
    for partition in partitions:
        try:
            result = verify_replay(config, engine, partition)
        except UnappliableRecordError as error:  # say so, and check the other partitions
            print(f"partition {partition}: STOPPED: {error}")
            different += 1
            continue
        verdict = "equal" if result.equal else "DIFFERENT"
        print(
            f"partition {partition}: live {result.live_digest[:16]} replayed"
            f" {result.replayed_digest[:16]} at position {result.position}"
            f" ({result.events} events): {verdict}"
        )
        different += not result.equal
    return 1 if different else 0


def register_verify_replay(commands: Subcommands) -> None:
    """Add `partita verify-replay`."""
    verify = add_command(
        commands,
        "verify-replay",
        cmd_verify_replay,
        "rebuild partition state from the log and compare its digest with the live store",
        examples=VERIFY_EXAMPLES,
        local=True,
    )
    verify.add_argument("--partition", type=int, help="only this partition (default: all)")
    verify.add_argument(
        "--engine",
        default=BUILTIN_ENGINE,
        metavar="MODULE:FUNCTION",
        help="factory of the appliers to replay with (default: the built-in engine)",
    )


def register_worker(commands: Subcommands) -> None:
    """Add `partita worker` (last in `partita --help`, hence apart from verify-replay)."""
    worker = add_command(
        commands,
        "worker",
        cmd_worker,
        "run a partition worker: join the engine group and process the log's commands",
        examples=WORKER_EXAMPLES,
        local=True,
    )
    worker.add_argument(
        "--engine",
        default=BUILTIN_ENGINE,
        metavar="MODULE:FUNCTION",
        help="factory of the processors and appliers to run (default: the built-in engine)",
    )
    worker.add_argument(
        "--max-commands-in-batch",
        type=int,
        default=100,
        help="commands (a command and its follow-ups) processed per batch (default: 100)",
    )
    worker.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"]
    )
    worker.add_argument(
        "--processes",
        default="1",
        metavar="N|auto",
        help="worker processes under one supervisor, each its own group member; auto: one per"
        " core, at most one per log partition (default: 1, no supervisor)",
    )

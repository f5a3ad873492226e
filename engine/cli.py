"""The `partita` command line. Every subcommand reads one Config (environment + flags)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from engine import __version__, cli_analytics, cli_bench, cli_client, cli_ops
from engine.config import Config, KafkaRole
from engine.errors import PartitaError
from engine.log.security import kafka_access

if TYPE_CHECKING:
    from engine.localkafka import LocalBroker
    from engine.localkafka.secure import SecureLocalBroker


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _config(args: argparse.Namespace) -> Config:
    return Config.from_env(kafka_config=getattr(args, "kafka_config", None)).with_overrides(
        bootstrap_servers=getattr(args, "bootstrap_servers", None),
        namespace=getattr(args, "namespace", None),
        partitions=getattr(args, "partitions", None),
        home=getattr(args, "home", None),
        kafka_port=getattr(args, "port", None),
        controller_port=getattr(args, "controller_port", None),
    )


def _local_broker(config: Config) -> LocalBroker:
    from engine.localkafka import LocalBroker

    return LocalBroker(config.home, config.kafka_port, config.controller_port)


def _secure_broker(args: argparse.Namespace) -> SecureLocalBroker:
    """The secured local broker of `--secure`: always local (KAFKA_BOOTSTRAP_SERVERS and
    PARTITA_KAFKA_CONFIG do not apply), on its own ports unless the flags name others."""
    import os
    from pathlib import Path

    from engine.config import default_home
    from engine.localkafka.secure import (
        DEFAULT_MTLS_PORT,
        DEFAULT_SASL_SSL_PORT,
        DEFAULT_SECURE_CONTROLLER_PORT,
        SecureLocalBroker,
    )

    home = args.home or (
        Path(os.environ["PARTITA_HOME"]) if os.environ.get("PARTITA_HOME") else None
    )
    return SecureLocalBroker(
        home.expanduser().resolve() if home else default_home(),
        args.port or DEFAULT_SASL_SSL_PORT,
        args.controller_port or DEFAULT_SECURE_CONTROLLER_PORT,
        mtls_port=args.mtls_port or DEFAULT_MTLS_PORT,
    )


# -- kafka ------------------------------------------------------------------------------------


def cmd_kafka_up(args: argparse.Namespace) -> int:
    if getattr(args, "secure", False):
        return _kafka_up_secure(args)
    config = _config(args)
    if not config.uses_local_broker:
        from engine.log.admin import wait_for_metadata

        wait_for_metadata(kafka_access(config, KafkaRole.OPERATOR), timeout=15.0)
        print(f"Using the existing Kafka cluster at {config.bootstrap}; nothing started.")
        return 0
    status = _local_broker(config).up(_progress)
    if status.reused:
        print(f"Kafka is already running at {status.bootstrap} (pid {status.pid}); reusing it.")
    else:
        print(
            f"Kafka is running at {status.bootstrap} (pid {status.pid},"
            f" started in {status.started_in_s:.1f} s). Log: {status.log_file}"
        )
    print(f"bootstrap.servers={status.bootstrap}")
    return 0


def _kafka_up_secure(args: argparse.Namespace) -> int:
    from engine.localkafka.secure import describe

    broker = _secure_broker(args)
    status = broker.up(_progress)
    if status.reused:
        print(f"Secured Kafka is already running (pid {status.pid}); reusing it.")
    else:
        print(
            f"Secured Kafka is running (pid {status.pid}, started in"
            f" {status.started_in_s:.1f} s). Log: {status.log_file}"
        )
    print(describe(broker.endpoints()))
    print(f"PARTITA_KAFKA_CONFIG={broker.clients.admin}")
    return 0


def cmd_kafka_down(args: argparse.Namespace) -> int:
    if getattr(args, "secure", False):
        stopped = _secure_broker(args).down(wipe=args.wipe)
        print("Secured Kafka stopped." if stopped else "No secured local Kafka broker was running.")
        if args.wipe:
            print("Secured broker data, users, CA, certificates and client files deleted.")
        return 0
    config = _config(args)
    if not config.uses_local_broker:
        print(f"KAFKA_BOOTSTRAP_SERVERS points at {config.bootstrap}; no local broker to stop.")
        return 0
    stopped = _local_broker(config).down(wipe=args.wipe)
    print("Kafka stopped." if stopped else "No local Kafka broker was running.")
    if args.wipe:
        print("Local broker data deleted.")
    return 0


def cmd_kafka_status(args: argparse.Namespace) -> int:
    if getattr(args, "secure", False):
        return _kafka_status_secure(args)
    config = _config(args)
    if not config.uses_local_broker:
        from engine.log.admin import answers_metadata

        up = answers_metadata(kafka_access(config, KafkaRole.OPERATOR))
        print(f"external cluster {config.bootstrap}: {'reachable' if up else 'NOT reachable'}")
        return 0 if up else 1
    status = _local_broker(config).status()
    if status.running:
        print(f"running at {status.bootstrap} (pid {status.pid}); log: {status.log_file}")
        return 0
    if status.pid is not None:
        print(f"process {status.pid} exists but does not answer at {status.bootstrap}")
        return 1
    print(f"not running (would listen on {status.bootstrap}); start it with `partita kafka up`")
    return 3


def _kafka_status_secure(args: argparse.Namespace) -> int:
    broker = _secure_broker(args)
    status = broker.status()
    if status.running:
        print(
            f"secured broker running (pid {status.pid}), SASL_SSL at {status.bootstrap};"
            f" client files in {broker.clients.folder}; log: {status.log_file}"
        )
        return 0
    if status.pid is not None:
        print(f"process {status.pid} exists but does not answer at {status.bootstrap}")
        return 1
    print(
        f"secured broker not running (would listen on {status.bootstrap});"
        " start it with `partita kafka up --secure`"
    )
    return 3


# -- topics -----------------------------------------------------------------------------------


def cmd_topics_apply(args: argparse.Namespace) -> int:
    from engine.log.admin import admin_client, wait_for_metadata
    from engine.log.topics import apply_topics, export_topic_specs, job_topic_spec, load_specs

    config = _config(args)
    access = kafka_access(config, KafkaRole.OPERATOR)
    wait_for_metadata(access, timeout=15.0)
    specs = load_specs(config)
    specs += [job_topic_spec(config, t) for t in getattr(args, "job_types", None) or ()]
    if getattr(args, "export", False):
        specs += export_topic_specs(config)
    outcomes = apply_topics(admin_client(access), specs)
    for spec in specs:
        print(f"{outcomes[spec.name].value:8} {spec.name} ({spec.partitions} partitions)")
    return 0


# -- up (the main job) ------------------------------------------------------------------------


def cmd_up(args: argparse.Namespace) -> int:
    """Broker (unless external) + topics, then the demo (unless --no-demo), then next steps."""
    config = _config(args)
    if config.uses_local_broker:
        cmd_kafka_up(args)
    cmd_topics_apply(args)
    if not args.no_demo:
        print()
        cmd_demo(args)
    print(
        "\nPartita is ready.\n"
        f"  Kafka:     {config.bootstrap}\n"
        f"  Log topic: {config.log_topic} ({config.partitions} partitions)\n"
        "Next: `partita worker` to process the log, `partita deploy FILE`, `partita create ID`,"
        " `partita kafka down` to stop the broker."
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Deploy the demo order process and run instances end to end; print counts and latency."""
    from engine import demo

    config = _config(args)
    _progress(
        f"Demo: {args.instances} instances of {demo.PROCESS_ID} at {args.rate:g}/s, an engine"
        " worker and a job worker (push)..."
    )
    result = demo.run(config, instances=args.instances, rate=args.rate, progress=_progress)
    print(
        f"Demo: {result.completed}/{result.instances} instances completed"
        f" ({result.rejected} rejected, {result.unanswered} unanswered),"
        f" {result.jobs_completed} jobs, {result.seconds:.1f} s,"
        f" {result.instances_per_second:g} instances/s\n"
        f"Create-to-complete latency ms: p50 {result.latency_ms_p50:g},"
        f" p95 {result.latency_ms_p95:g}, p99 {result.latency_ms_p99:g},"
        f" max {result.latency_ms_max:g}"
    )
    print(result.json())
    return 0 if result.completed == result.instances else 1


def cmd_worker(args: argparse.Namespace) -> int:
    import logging

    from engine.stream.worker import Worker, load_engine

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = _config(args)
    worker = Worker(
        config, load_engine(args.engine), max_commands_in_batch=args.max_commands_in_batch
    )
    worker.install_signal_handlers()
    _progress(
        f"Worker joining group {config.namespace}.engine on {config.log_topic} at"
        f" {config.bootstrap} (state in {config.home / 'state' / config.namespace})"
    )
    worker.run()
    _progress("Worker stopped.")
    return 0


def cmd_verify_replay(args: argparse.Namespace) -> int:
    from engine.log.admin import admin_client
    from engine.stream.errors import UnappliableRecordError
    from engine.stream.verify import verify_replay
    from engine.stream.worker import load_engine

    config = _config(args)
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


# -- parser -----------------------------------------------------------------------------------


def _add_cluster_flags(parser: argparse.ArgumentParser) -> None:
    from pathlib import Path

    group = parser.add_argument_group("cluster (flags override PARTITA_* variables)")
    group.add_argument(
        "--bootstrap-servers",
        metavar="HOST:PORT",
        help="use this existing cluster; no local broker is started (KAFKA_BOOTSTRAP_SERVERS)",
    )
    group.add_argument("--namespace", help="topic prefix (PARTITA_NAMESPACE, default: partita)")
    group.add_argument(
        "--kafka-config",
        metavar="FILE",
        type=Path,
        help="Kafka client properties (security.protocol, sasl.*, ssl.*) for every client"
        " (PARTITA_KAFKA_CONFIG; see docs/security.md)",
    )
    group.add_argument(
        "--partitions",
        type=int,
        help="partitions of the log topic (PARTITA_PARTITIONS, default: 3)",
    )


def _add_local_flags(parser: argparse.ArgumentParser) -> None:
    from pathlib import Path

    group = parser.add_argument_group("local broker")
    group.add_argument(
        "--port", type=int, help="client port on 127.0.0.1 (PARTITA_KAFKA_PORT, default: 9092)"
    )
    group.add_argument(
        "--controller-port",
        type=int,
        help="KRaft controller port (PARTITA_CONTROLLER_PORT, default: 9093)",
    )
    group.add_argument(
        "--home",
        type=Path,
        help="folder for jars and broker data (PARTITA_HOME, default: .partita)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="partita",
        description="Partita: a Zeebe-style BPMN workflow engine whose log is Apache Kafka.",
    )
    parser.add_argument("--version", action="version", version=f"partita {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(
        sub: argparse._SubParsersAction,  # type: ignore[type-arg]
        name: str,
        func: Callable[[argparse.Namespace], int],
        help_text: str,
        *,
        local: bool = False,
    ) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(name, help=help_text, description=help_text)
        _add_cluster_flags(p)
        if local:
            _add_local_flags(p)
        p.set_defaults(func=func)
        return p

    up = add(
        commands,
        "up",
        cmd_up,
        "start the local broker (unless external), apply the topics and run the demo",
        local=True,
    )
    up.add_argument("--no-demo", action="store_true", help="skip the demo run")
    demo = add(
        commands,
        "demo",
        cmd_demo,
        "run the demo order process end to end and print counts and latency percentiles",
        local=True,
    )
    for p in (up, demo):
        p.add_argument("--instances", type=int, default=1000, help="demo instances to run (1000)")
        p.add_argument(
            "--rate", type=float, default=100.0, help="instances started per second (100)"
        )

    kafka = commands.add_parser("kafka", help="manage the local Kafka broker (no Docker needed)")
    kafka_commands = kafka.add_subparsers(dest="kafka_command", metavar="ACTION", required=True)
    kafka_up = add(
        kafka_commands,
        "up",
        cmd_kafka_up,
        "start the local broker, or reuse the running one",
        local=True,
    )
    down = add(kafka_commands, "down", cmd_kafka_down, "stop the local broker cleanly", local=True)
    down.add_argument("--wipe", action="store_true", help="also delete the broker's data")
    kafka_status = add(
        kafka_commands,
        "status",
        cmd_kafka_status,
        "say whether the broker runs and where",
        local=True,
    )
    for p in (kafka_up, down, kafka_status):
        secure = p.add_argument_group("secured local broker")
        secure.add_argument(
            "--secure",
            action="store_true",
            help="the secured broker instead (<home>/kafka-secure: SASL_SSL on --port, default"
            " 9094; mTLS on --mtls-port; controller on --controller-port, default 9096; ACLs"
            " enforced); it is always local, KAFKA_BOOTSTRAP_SERVERS does not apply",
        )
        secure.add_argument(
            "--mtls-port",
            type=int,
            help="with --secure: the port of the TLS listener with client certificates (9095)",
        )

    topics = commands.add_parser("topics", help="Partita's topics (declared in topics/topics.toml)")
    topic_commands = topics.add_subparsers(dest="topics_command", metavar="ACTION", required=True)
    apply = add(
        topic_commands,
        "apply",
        cmd_topics_apply,
        "create missing topics; refuse conflicting ones",
        local=True,
    )
    apply.add_argument(
        "--job-type",
        dest="job_types",
        action="append",
        metavar="TYPE",
        help="also create <ns>.jobs.TYPE, so jobs of TYPE are pushed (repeatable)",
    )
    apply.add_argument(
        "--export",
        action="store_true",
        help="also create the topics of `partita export` (<ns>.export.<value-type>)",
    )

    verify = add(
        commands,
        "verify-replay",
        cmd_verify_replay,
        "rebuild partition state from the log and compare its digest with the live store",
        local=True,
    )
    verify.add_argument("--partition", type=int, help="only this partition (default: all)")
    verify.add_argument(
        "--engine",
        default="engine.processing.builtin:build_engine",
        metavar="MODULE:FUNCTION",
        help="factory of the appliers to replay with (default: the built-in engine)",
    )

    cli_client.register(commands, add)
    cli_ops.register(commands, add)
    cli_analytics.register(commands, add)

    cli_bench.register(commands, add)

    worker = add(
        commands,
        "worker",
        cmd_worker,
        "run a partition worker: join the engine group and process the log's commands",
        local=True,
    )
    worker.add_argument(
        "--engine",
        default="engine.processing.builtin:build_engine",
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except PartitaError as exc:
        print(f"partita: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("partita: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `partita acls ... | head -1`: the reader has what it wants
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())

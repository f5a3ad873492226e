"""`partita kafka up | down | status`: the local Kafka broker (no Docker needed), plaintext or
`--secure`; against an external cluster they only check it answers."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from partita.cli.common import Subcommands, add_command, add_group, build_config, progress
from partita.config import Config, KafkaRole, default_home
from partita.config.settings import HOME
from partita.log.security import kafka_access

if TYPE_CHECKING:
    from partita.localkafka import LocalBroker
    from partita.localkafka.secure import SecureLocalBroker

KAFKA_EXAMPLES = """examples:
  partita kafka up                 start the local broker on 127.0.0.1:9092 (or reuse it)
  partita kafka status             is it running, and where
  partita kafka down --wipe        stop it and delete its data
  partita kafka up --secure        the secured broker (SASL_SSL, mTLS, ACLs) next to it
"""

UP_EXAMPLES = """examples:
  partita kafka up                           127.0.0.1:9092, data in .partita/kafka
  partita kafka up --port 19092 --controller-port 19093 --home /tmp/partita
  partita kafka up --secure                  prints its addresses and client properties files
  partita kafka up --bootstrap-servers kafka:9092   only waits until that cluster answers
"""

DOWN_EXAMPLES = """examples:
  partita kafka down                   stop the local broker, keep its data
  partita kafka down --wipe            stop it and delete its data (a fresh log next time)
  partita kafka down --secure --wipe   the secured broker, with its users and certificates
"""

STATUS_EXAMPLES = """examples:
  partita kafka status                                  exit code 0 running, 3 not running
  partita kafka status --secure
  partita kafka status --bootstrap-servers kafka:9092   0 if that cluster answers, else 1
"""


def local_broker(config: Config) -> LocalBroker:
    """The plaintext local broker the config names (ports and home)."""
    from partita.localkafka import LocalBroker

    return LocalBroker(config.home, config.kafka_port, config.controller_port)


def _secure_broker(args: argparse.Namespace) -> SecureLocalBroker:
    """The secured local broker of `--secure`: always local (KAFKA_BOOTSTRAP_SERVERS and
    PARTITA_KAFKA_CONFIG do not apply), on its own ports unless the flags name others."""
    from partita.localkafka.secure import (
        DEFAULT_MTLS_PORT,
        DEFAULT_SASL_SSL_PORT,
        DEFAULT_SECURE_CONTROLLER_PORT,
        SecureLocalBroker,
    )

    home = args.home or HOME.read()
    return SecureLocalBroker(
        home.expanduser().resolve() if home else default_home(),
        args.port or DEFAULT_SASL_SSL_PORT,
        args.controller_port or DEFAULT_SECURE_CONTROLLER_PORT,
        mtls_port=args.mtls_port or DEFAULT_MTLS_PORT,
    )


def cmd_kafka_up(args: argparse.Namespace) -> int:
    if getattr(args, "secure", False):
        return _kafka_up_secure(args)
    config = build_config(args)
    if not config.uses_local_broker:
        from partita.log.admin import wait_for_metadata

        wait_for_metadata(kafka_access(config, KafkaRole.OPERATOR), timeout=15.0)
        print(f"Using the existing Kafka cluster at {config.bootstrap}; nothing started.")
        return 0
    status = local_broker(config).up(progress)
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
    from partita.localkafka.secure import describe

    broker = _secure_broker(args)
    status = broker.up(progress)
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
    config = build_config(args)
    if not config.uses_local_broker:
        print(f"KAFKA_BOOTSTRAP_SERVERS points at {config.bootstrap}; no local broker to stop.")
        return 0
    stopped = local_broker(config).down(wipe=args.wipe)
    print("Kafka stopped." if stopped else "No local Kafka broker was running.")
    if args.wipe:
        print("Local broker data deleted.")
    return 0


def cmd_kafka_status(args: argparse.Namespace) -> int:
    if getattr(args, "secure", False):
        return _kafka_status_secure(args)
    config = build_config(args)
    if not config.uses_local_broker:
        from partita.log.admin import answers_metadata

        up = answers_metadata(kafka_access(config, KafkaRole.OPERATOR))
        print(f"external cluster {config.bootstrap}: {'reachable' if up else 'NOT reachable'}")
        return 0 if up else 1
    status = local_broker(config).status()
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


def register(commands: Subcommands) -> None:
    """Add `partita kafka` and its actions."""
    _, actions = add_group(
        commands,
        "kafka",
        "manage the local Kafka broker (no Docker needed)",
        examples=KAFKA_EXAMPLES,
        dest="kafka_command",
    )
    up = add_command(
        actions,
        "up",
        cmd_kafka_up,
        "start the local broker, or reuse the running one",
        examples=UP_EXAMPLES,
        local=True,
    )
    down = add_command(
        actions,
        "down",
        cmd_kafka_down,
        "stop the local broker cleanly",
        examples=DOWN_EXAMPLES,
        local=True,
    )
    down.add_argument("--wipe", action="store_true", help="also delete the broker's data")
    status = add_command(
        actions,
        "status",
        cmd_kafka_status,
        "say whether the broker runs and where",
        examples=STATUS_EXAMPLES,
        local=True,
    )
    for parser in (up, down, status):
        secure = parser.add_argument_group("secured local broker")
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

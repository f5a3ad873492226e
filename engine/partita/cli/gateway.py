"""`partita gateway`: serve Zeebe's gRPC API and the Camunda 8.8 REST API in front of the log."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from partita.cli.common import Subcommands, add_command, build_config, progress
from partita.config.settings import GATEWAY_GRPC, GATEWAY_PROTOCOL_JAR, GATEWAY_REST

EXAMPLES = """\
examples:
  partita gateway                          gRPC on 127.0.0.1:26500, REST on 127.0.0.1:8080
  ZEEBE_ADDRESS=127.0.0.1:26500 zbctl status --insecure
  partita gateway --grpc 0.0.0.0:26500 --rest off
  partita gateway --prepare                generate the gRPC stubs now, then exit
  PARTITA_GATEWAY_PROTOCOL_JAR=zeebe-gateway-protocol-8.8.9.jar partita gateway   # offline

Clients connect as to Zeebe: pyzeebe, zbctl, the Java clients and the Node SDK to the gRPC
address (plaintext), camunda-client-java 8.8, c8ctl and Modeler to http://<rest address>.
The first start fetches io.camunda:zeebe-gateway-protocol from Maven Central (or the local Maven
repository) and generates the gRPC stubs into $PARTITA_HOME/zeebe-gateway-protocol/
(docs/zeebe-clients.md says why they are not shipped). Run several gateways side by side for
more throughput or availability: they share nothing but Kafka.
"""


def cmd_gateway(args: argparse.Namespace) -> int:
    from partita.gateway import server, stubs  # the gateway extra: grpcio, aiohttp

    config = build_config(args)
    jar = args.protocol_jar or GATEWAY_PROTOCOL_JAR.read()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.prepare:
        stubs.load(config.home, jar, progress)
        return 0
    listeners = server.Listeners(
        grpc=server.address(args.grpc or GATEWAY_GRPC.read(), "--grpc"),
        rest=server.address(args.rest or GATEWAY_REST.read(), "--rest"),
    )
    server.serve(config, listeners, jar)
    return 0


def register(commands: Subcommands) -> None:
    """Add `partita gateway`."""
    gateway = add_command(
        commands,
        "gateway",
        cmd_gateway,
        "serve Zeebe's gRPC API and the Camunda 8.8 REST API to Zeebe's clients",
        examples=EXAMPLES,
    )
    gateway.add_argument(
        "--grpc", metavar="HOST:PORT", help=GATEWAY_GRPC.flag_help("the gRPC address, or off")
    )
    gateway.add_argument(
        "--rest", metavar="HOST:PORT", help=GATEWAY_REST.flag_help("the REST address, or off")
    )
    gateway.add_argument(
        "--protocol-jar",
        type=Path,
        metavar="JAR",
        help=GATEWAY_PROTOCOL_JAR.flag_help("a local zeebe-gateway-protocol jar"),
    )
    gateway.add_argument(
        "--prepare",
        action="store_true",
        help="generate the gRPC stubs (fetching the protocol jar if needed), then exit",
    )

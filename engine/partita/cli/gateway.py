"""`partita gateway`: serve Zeebe's gRPC API and the Camunda 8.8 REST API in front of the log."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from partita.cli.common import Subcommands, add_command, build_config, progress
from partita.config import settings_gateway as gs
from partita.errors import PartitaError

EXAMPLES = """\
examples:
  partita gateway                          gRPC on 127.0.0.1:26500, REST on 127.0.0.1:8080
  ZEEBE_ADDRESS=127.0.0.1:26500 zbctl status --insecure
  partita gateway --grpc 0.0.0.0:26500 --rest off
  partita gateway --prepare                generate the gRPC stubs now, then exit
  PARTITA_GATEWAY_PROTOCOL_JAR=zeebe-gateway-protocol-8.8.9.jar partita gateway   # offline
  partita gateway --tls-cert gw.pem --tls-key gw-key.pem     grpcs:// and https://
  PARTITA_GATEWAY_TOKEN=$(openssl rand -hex 24) partita gateway   # Authorization: Bearer
  partita gateway --hash-password alice    a users-file line; the password on standard input
  PARTITA_GATEWAY_USERS=users.txt partita gateway          # Authorization: Basic
  PARTITA_GATEWAY_JWKS=https://idp/jwks.json PARTITA_GATEWAY_JWT_ISSUER=https://idp \\
    PARTITA_GATEWAY_JWT_AUDIENCE=zeebe-api partita gateway  # OAuth tokens (JWT)

Clients connect as to Zeebe: pyzeebe, zbctl, the Java clients and the Node SDK to the gRPC
address (plaintext), camunda-client-java 8.8, c8ctl and Modeler to http://<rest address>.
The first start fetches io.camunda:zeebe-gateway-protocol from Maven Central (or the local Maven
repository) and generates the gRPC stubs into $PARTITA_HOME/zeebe-gateway-protocol/
(docs/zeebe-clients.md says why they are not shipped). Run several gateways side by side for
more throughput or availability: they share nothing but Kafka.
"""


def cmd_gateway(args: argparse.Namespace) -> int:
    from partita.gateway import auth, security, server, stubs  # the gateway extra

    config = build_config(args)
    jar = args.protocol_jar or gs.GATEWAY_PROTOCOL_JAR.read()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.prepare:
        stubs.load(config.home, jar, progress)
        return 0
    if args.hash_password:
        password = sys.stdin.readline().rstrip("\n")
        if not password:
            raise PartitaError("--hash-password reads the password from standard input: none")
        print(f"{args.hash_password}:{auth.hash_password(password)}")
        return 0
    users = gs.GATEWAY_USERS.read()
    listeners = server.Listeners(
        grpc=server.address(args.grpc or gs.GATEWAY_GRPC.read(), "--grpc"),
        rest=server.address(args.rest or gs.GATEWAY_REST.read(), "--rest"),
        tls=security.Tls.from_settings(
            args.tls_cert or gs.GATEWAY_TLS_CERT.read(),
            args.tls_key or gs.GATEWAY_TLS_KEY.read(),
            args.tls_client_ca or gs.GATEWAY_TLS_CLIENT_CA.read(),
        ),
        authenticator=auth.Authenticator(
            users=auth.read_users(users) if users is not None else None,
            token=gs.GATEWAY_TOKEN.read(),
            jwks=gs.GATEWAY_JWKS.read(),
            issuer=gs.GATEWAY_JWT_ISSUER.read(),
            audience=gs.GATEWAY_JWT_AUDIENCE.read(),
        ),
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
        "--grpc", metavar="HOST:PORT", help=gs.GATEWAY_GRPC.flag_help("the gRPC address, or off")
    )
    gateway.add_argument(
        "--rest", metavar="HOST:PORT", help=gs.GATEWAY_REST.flag_help("the REST address, or off")
    )
    gateway.add_argument(
        "--protocol-jar",
        type=Path,
        metavar="JAR",
        help=gs.GATEWAY_PROTOCOL_JAR.flag_help("a local zeebe-gateway-protocol jar"),
    )
    for flag, setting, text in (
        ("--tls-cert", gs.GATEWAY_TLS_CERT, "PEM certificate: serve TLS"),
        ("--tls-key", gs.GATEWAY_TLS_KEY, "its PEM private key"),
        ("--tls-client-ca", gs.GATEWAY_TLS_CLIENT_CA, "require client certificates of this CA"),
    ):
        gateway.add_argument(flag, type=Path, metavar="PEM", help=setting.flag_help(text))
    gateway.add_argument(
        "--hash-password",
        metavar="NAME",
        help="print a users-file line for NAME with the password read from standard input,"
        " then exit (PARTITA_GATEWAY_USERS)",
    )
    gateway.add_argument(
        "--prepare",
        action="store_true",
        help="generate the gRPC stubs (fetching the protocol jar if needed), then exit",
    )

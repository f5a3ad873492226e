"""The settings of `partita gateway` (its listeners, stubs, TLS and client authentication), in
the one table of `partita.config.settings` (`SETTINGS` lists them after the analytics')."""

from __future__ import annotations

from typing import Any

from partita.config.parsers import parse_optional_str, parse_path, parse_str
from partita.config.settings import Setting

GATEWAY = "Gateway for Zeebe's clients (`partita gateway`)"

GATEWAY_GRPC = Setting(
    "PARTITA_GATEWAY_GRPC",
    parse_str,
    "127.0.0.1:26500",
    "`host:port` where the gateway serves Zeebe's gRPC API (`ZEEBE_ADDRESS` of the clients);"
    " `off` serves none",
    GATEWAY,
    flag="--grpc",
    readers="gateway",
)
GATEWAY_REST = Setting(
    "PARTITA_GATEWAY_REST",
    parse_str,
    "127.0.0.1:8080",
    "`host:port` where the gateway serves the Camunda 8.8 REST API under `/v2`"
    " (`CAMUNDA_REST_ADDRESS`, Modeler's cluster URL); `off` serves none",
    GATEWAY,
    flag="--rest",
    readers="gateway",
)
GATEWAY_PROTOCOL_JAR = Setting(
    "PARTITA_GATEWAY_PROTOCOL_JAR",
    parse_path,
    "",
    "a local copy of `io.camunda:zeebe-gateway-protocol` (its jar), for a machine that cannot"
    " reach Maven Central: the gateway generates its gRPC stubs from the `gateway.proto` in it,"
    " once, into `$PARTITA_HOME/zeebe-gateway-protocol/`",
    GATEWAY,
    flag="--protocol-jar",
    readers="gateway",
    shown_default="unset: the local Maven repository, else Maven Central",
)
GATEWAY_TLS_CERT = Setting(
    "PARTITA_GATEWAY_TLS_CERT",
    parse_path,
    "",
    "a PEM certificate (chain) for both listeners: with `PARTITA_GATEWAY_TLS_KEY` they serve"
    " TLS only (`grpcs`, `https`)",
    GATEWAY,
    flag="--tls-cert",
    readers="gateway",
    shown_default="unset: plaintext",
)
GATEWAY_TLS_KEY = Setting(
    "PARTITA_GATEWAY_TLS_KEY",
    parse_path,
    "",
    "the PEM private key of `PARTITA_GATEWAY_TLS_CERT`",
    GATEWAY,
    flag="--tls-key",
    readers="gateway",
    shown_default="unset",
)
GATEWAY_TLS_CLIENT_CA = Setting(
    "PARTITA_GATEWAY_TLS_CLIENT_CA",
    parse_path,
    "",
    "PEM certificates of the authorities whose client certificates the listeners require"
    " (mutual TLS); needs the two above",
    GATEWAY,
    flag="--tls-client-ca",
    readers="gateway",
    shown_default="unset: no client certificate asked",
)
GATEWAY_USERS = Setting(
    "PARTITA_GATEWAY_USERS",
    parse_path,
    "",
    "a file of `name:pbkdf2_sha256$...` lines (`partita gateway --hash-password` prints one):"
    " every request needs `Authorization: Basic` with one of them",
    GATEWAY,
    readers="gateway",
    shown_default="unset",
)
GATEWAY_TOKEN = Setting(
    "PARTITA_GATEWAY_TOKEN",
    parse_optional_str,
    "",
    "a static token (16+ characters): every request needs `Authorization: Bearer <token>`",
    GATEWAY,
    readers="gateway",
    shown_default="unset",
)
GATEWAY_JWKS = Setting(
    "PARTITA_GATEWAY_JWKS",
    parse_optional_str,
    "",
    "a JWKS file or URL: every request needs `Authorization: Bearer <JWT>` signed by one of its"
    " keys, from `PARTITA_GATEWAY_JWT_ISSUER` for `PARTITA_GATEWAY_JWT_AUDIENCE` (OAuth, as"
    " Zeebe's and Camunda's clients send it)",
    GATEWAY,
    readers="gateway",
    shown_default="unset: no authentication unless a users file or token is set",
)
GATEWAY_JWT_ISSUER = Setting(
    "PARTITA_GATEWAY_JWT_ISSUER",
    parse_optional_str,
    "",
    "the `iss` a JWT must have",
    GATEWAY,
    readers="gateway",
    shown_default="unset",
)
GATEWAY_JWT_AUDIENCE = Setting(
    "PARTITA_GATEWAY_JWT_AUDIENCE",
    parse_optional_str,
    "",
    "the `aud` a JWT must name",
    GATEWAY,
    readers="gateway",
    shown_default="unset",
)

GATEWAY_SETTINGS: tuple[Setting[Any], ...] = (
    GATEWAY_GRPC,
    GATEWAY_REST,
    GATEWAY_PROTOCOL_JAR,
    GATEWAY_TLS_CERT,
    GATEWAY_TLS_KEY,
    GATEWAY_TLS_CLIENT_CA,
    GATEWAY_USERS,
    GATEWAY_TOKEN,
    GATEWAY_JWKS,
    GATEWAY_JWT_ISSUER,
    GATEWAY_JWT_AUDIENCE,
)

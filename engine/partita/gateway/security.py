"""TLS for both listeners and the gRPC side of client authentication.

`Tls` turns the PEM files of the settings into gRPC server credentials and an `ssl.SSLContext`
for aiohttp (client certificates required when a client CA is given). `AuthInterceptor` asks the
`Authenticator` about each call's `authorization` metadata before any handler runs, and ends a
refused call UNAUTHENTICATED with its type intact (unary or streaming); the health service stays
open, as load balancers probe it without credentials.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from partita.errors import ConfigError
from partita.gateway.auth import Authenticator
from partita.gateway.errors import GatewayError

_OPEN = ("/grpc.health.v1.Health/",)


@dataclass(frozen=True)
class Tls:
    cert: Path
    key: Path
    client_ca: Path | None = None

    @staticmethod
    def from_settings(cert: Path | None, key: Path | None, client_ca: Path | None) -> Tls | None:
        if cert is None and key is None:
            if client_ca is not None:
                raise ConfigError("PARTITA_GATEWAY_TLS_CLIENT_CA needs a certificate and key")
            return None
        if cert is None or key is None:
            raise ConfigError("TLS needs both PARTITA_GATEWAY_TLS_CERT and PARTITA_GATEWAY_TLS_KEY")
        for path in (cert, key, client_ca):
            if path is not None and not path.is_file():
                raise ConfigError(f"gateway TLS: {path} is not a readable file")
        return Tls(cert, key, client_ca)

    def grpc_credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials(
            [(self.key.read_bytes(), self.cert.read_bytes())],
            root_certificates=self.client_ca.read_bytes() if self.client_ca else None,
            require_client_auth=self.client_ca is not None,
        )

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert, self.key)
        if self.client_ca is not None:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(self.client_ca)
        return context


class AuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, authenticator: Authenticator) -> None:
        self.authenticator = authenticator

    async def intercept_service(
        self,
        continuation: Callable[[Any], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if handler is None or details.method.startswith(_OPEN):
            return handler
        metadata = dict(details.invocation_metadata or ())
        try:
            await self.authenticator.check(metadata.get("authorization"))
        except GatewayError as error:
            return _refusing(handler, error.message)
        return handler


def _refusing(handler: grpc.RpcMethodHandler, message: str) -> grpc.RpcMethodHandler:
    code = grpc.StatusCode.UNAUTHENTICATED
    options = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_stream is not None:

        async def refuse_stream(
            request: Any, context: grpc.aio.ServicerContext
        ) -> AsyncIterator[Any]:
            await context.abort(code, message)
            yield  # an async generator, as the method it stands for

        return grpc.unary_stream_rpc_method_handler(refuse_stream, **options)

    async def refuse(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(code, message)

    return grpc.unary_unary_rpc_method_handler(refuse, **options)

"""`partita gateway`: both client APIs in one asyncio loop, over one Kafka connection.

The gRPC server (grpc.aio) and the REST server (aiohttp) share the loop (uvloop's when it is
installed), one `AsyncClient` (one producer, one reply consumer, every request in flight on it)
and one `JobWaker`. The gateway holds no state a restart loses; several run side by side, each
with its own reply partition.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from partita.client.aio import AsyncClient
from partita.config import Config, KafkaRole
from partita.errors import ConfigError
from partita.gateway.auth import Authenticator
from partita.gateway.grpc_api import GatewayService, register
from partita.gateway.operations import Operations
from partita.gateway.rest_api import start_rest
from partita.gateway.security import AuthInterceptor, Tls
from partita.gateway.streams import JobStreams
from partita.gateway.stubs import load
from partita.gateway.waker import JobWaker, Parked
from partita.log.admin import admin_client

_LOG = logging.getLogger("partita.gateway")
SERVICE = "gateway_protocol.Gateway"
_MAX_MESSAGE_BYTES = 4 << 20
"""The largest gRPC message either way, as Zeebe's gateway (4 MiB)."""
_GRPC_OPTIONS = [
    ("grpc.so_reuseport", 0),  # a second gateway on a taken port fails instead of sharing it
    ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
    # Zeebe's clients ping every 45 s without data: allow it rather than answer GOAWAY
    ("grpc.http2.min_ping_interval_without_data_ms", 30_000),
    ("grpc.keepalive_permit_without_calls", 1),
]


@dataclass(frozen=True)
class Listeners:
    grpc: str | None
    """`host:port`, or None for no gRPC."""
    rest: str | None
    tls: Tls | None = None
    authenticator: Authenticator = field(default_factory=Authenticator)


def address(text: str, what: str) -> str | None:
    """`host:port` checked, or None for `off`."""
    if text.strip().lower() == "off":
        return None
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ConfigError(f"{what}: expected host:port or off, not {text!r}")
    return text


class Gateway:
    def __init__(self, config: Config, listeners: Listeners, jar: Path | None = None) -> None:
        self.config = config
        self.listeners = listeners
        self.jar = jar
        self.stopping = asyncio.Event()
        self.bound: dict[str, int] = {}
        """The ports actually bound, by protocol (port 0 in a listener picks a free one)."""

    async def run(self, ready: Callable[[Gateway], None] = lambda _: None) -> None:
        stubs = await asyncio.to_thread(load, self.config.home, self.jar, _LOG.info)
        client = await AsyncClient.connect(self.config, retry_for=0, role=KafkaRole.GATEWAY)
        parked = Parked()
        waker = JobWaker(
            client.connection.access,
            self.config.log_topic,
            client.connection.partition_count,
            parked,
        )
        streams = JobStreams(
            self.config, client.connection.access, client, f"gateway-{uuid.uuid4().hex[:8]}"
        )
        operations = Operations(client, parked, streams)
        admin = admin_client(client.connection.access)
        server = None
        rest = None
        try:
            if self.listeners.grpc is not None:
                authenticator = self.listeners.authenticator
                # without authentication no call is checked: an interceptor would only cost
                # every call an extra coroutine
                interceptors = (
                    [AuthInterceptor(authenticator)] if authenticator.mode != "none" else []
                )
                server = grpc.aio.server(options=_GRPC_OPTIONS, interceptors=interceptors)
                service = GatewayService(stubs, operations, admin, self.config)
                register(server, service, stubs)
                health_service = health.aio.HealthServicer()
                health_pb2_grpc.add_HealthServicer_to_server(health_service, server)
                tls = self.listeners.tls
                port = (
                    server.add_secure_port(self.listeners.grpc, tls.grpc_credentials())
                    if tls is not None
                    else server.add_insecure_port(self.listeners.grpc)
                )
                if port == 0:
                    raise ConfigError(f"gRPC: cannot listen on {self.listeners.grpc}")
                self.bound["grpc"] = port
                await server.start()
                for name in ("", SERVICE):
                    await health_service.set(name, health_pb2.HealthCheckResponse.SERVING)
                _LOG.info(
                    "Zeebe gRPC API on %s", self.listeners.grpc.rsplit(":", 1)[0] + f":{port}"
                )
            if self.listeners.rest is not None:
                tls = self.listeners.tls
                rest, port = await start_rest(
                    self.listeners.rest,
                    operations,
                    admin,
                    self.config,
                    ssl_context=tls.ssl_context() if tls is not None else None,
                    authenticator=self.listeners.authenticator,
                )
                self.bound["rest"] = port
                host = self.listeners.rest.rsplit(":", 1)[0]
                scheme = "https" if tls is not None else "http"
                _LOG.info("Camunda 8.8 REST API on %s://%s:%d/v2", scheme, host, port)
            ready(self)
            await self.stopping.wait()
        finally:
            if rest is not None:
                await rest.cleanup()
            if server is not None:
                await server.stop(grace=5)
            await streams.close()
            await waker.close()
            await client.close()

    def stop(self) -> None:
        self.stopping.set()


def serve(config: Config, listeners: Listeners, jar: Path | None = None) -> None:
    """Run until SIGINT or SIGTERM."""

    async def main() -> None:
        gateway = Gateway(config, listeners, jar)
        loop = asyncio.get_running_loop()
        _LOG.info("event loop: %s", type(loop).__module__.split(".")[0])  # uvloop or asyncio
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, gateway.stop)
        await gateway.run()

    run_loop(main())


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run `main` on uvloop's loop where it is installed (the gateway extra installs it, except
    on Windows), else on asyncio's own. uvloop costs the gateway about 7 % less CPU per
    request, measured with `partita bench gateway` (docs/performance.md)."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)

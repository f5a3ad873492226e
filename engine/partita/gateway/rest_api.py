"""The Camunda 8.8 REST API (`/v2`) over `Operations`, on aiohttp.

Keys are JSON strings, as the API has them; every failure is an RFC 9457 problem document
(`application/problem+json`: type, title, status, detail, instance).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web
from confluent_kafka.admin import AdminClient

from partita.config import Config
from partita.gateway.errors import GatewayError, Status
from partita.gateway.grpc_api import GATEWAY_VERSION
from partita.gateway.operations import Operations
from partita.gateway.topology import PORT, topology

_OPERATIONS = web.AppKey("operations", Operations)
_ADMIN = web.AppKey("admin", AdminClient)
_CONFIG = web.AppKey("config", Config)


def problem(status: Status, detail: str, instance: str) -> web.Response:
    body = {
        "type": "about:blank",
        "title": status.value[0],
        "status": status.http,
        "detail": detail,
        "instance": instance,
    }
    return web.Response(
        status=status.http, text=json.dumps(body), content_type="application/problem+json"
    )


@web.middleware
async def _problems(request: web.Request, handler: Any) -> web.StreamResponse:
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except GatewayError as error:
        return problem(error.status, error.message, request.path)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        status = next((s for s in Status if s.http == error.status), Status.INVALID_ARGUMENT)
        return problem(status, error.reason, request.path)


async def get_topology(request: web.Request) -> web.Response:
    operations = request.app[_OPERATIONS]
    seen = await asyncio.to_thread(
        topology, request.app[_ADMIN], request.app[_CONFIG], operations.partition_count
    )
    return web.json_response(
        {
            "brokers": [
                {
                    "nodeId": b.node_id,
                    "host": b.host,
                    "port": PORT,
                    "version": GATEWAY_VERSION,
                    "partitions": [
                        {
                            "partitionId": p.partition_id,
                            "role": "leader",
                            "health": "healthy" if p.healthy else "unhealthy",
                        }
                        for p in b.partitions
                    ],
                }
                for b in seen.brokers
            ],
            "clusterSize": len(seen.brokers),
            "partitionsCount": seen.partitions_count,
            "replicationFactor": seen.replication_factor,
            "gatewayVersion": GATEWAY_VERSION,
        }
    )


def rest_app(operations: Operations, admin: AdminClient, config: Config) -> web.Application:
    app = web.Application(middlewares=[_problems])
    app[_OPERATIONS] = operations
    app[_ADMIN] = admin
    app[_CONFIG] = config
    app.router.add_get("/v2/topology", get_topology)
    return app


async def start_rest(
    address: str, operations: Operations, admin: AdminClient, config: Config
) -> tuple[web.AppRunner, int]:
    """Serve the app on `address` (host:port); returns the runner and the bound port."""
    runner = web.AppRunner(rest_app(operations, admin, config), access_log=None)
    await runner.setup()
    host, _, port = address.rpartition(":")
    site = web.TCPSite(runner, host, int(port), reuse_port=False)
    await site.start()
    return runner, int(runner.addresses[0][1]) if runner.addresses else int(port)

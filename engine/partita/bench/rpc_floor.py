"""The floor under the gateway: what one request costs a server that does nothing with it.

`partita bench gateway` measures this beside the paths. An empty gRPC unary call (grpc.aio) and
an empty HTTP POST (aiohttp), each served on the loop the gateway runs on, sent at the bench's
rate by a client in its own process: the server's CPU per request. A gateway path makes a
known number of requests per instance (a long-polling worker: create, activation and
completion), so their floor is the part of the gateway's CPU per instance that no change to
the gateway's own code can remove.

    python -m partita.bench.rpc_floor serve grpc|http
    python -m partita.bench.rpc_floor call grpc|http PORT N RATE

`serve` prints `ready PORT`, then its CPU seconds for every line it reads; `call` sends N
requests of 100 bytes at RATE per second, all awaited.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from partita.bench.gateway_clients import paced
from partita.bench.procstats import sample
from partita.errors import PartitaError
from partita.gateway.server import run_loop

PROTOCOLS = ("grpc", "http")
_BODY = b"x" * 100
_METHOD = "/partita.bench.Floor/Echo"


async def _serve(protocol: str) -> None:
    loop = asyncio.get_running_loop()
    stop: Callable[[], Awaitable[Any]]
    if protocol == "grpc":
        import grpc

        async def echo(request: bytes, _context: Any) -> bytes:
            return request

        server = grpc.aio.server()
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    "partita.bench.Floor", {"Echo": grpc.unary_unary_rpc_method_handler(echo)}
                ),
            )
        )
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        stop = lambda: server.stop(None)  # noqa: E731
    else:
        from aiohttp import web

        async def post(request: web.Request) -> web.Response:
            return web.Response(body=await request.read())

        app = web.Application()
        app.router.add_post("/echo", post)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        stop = runner.cleanup
    print(f"ready {port}", flush=True)
    while await loop.run_in_executor(None, sys.stdin.readline):
        print(f"{sample().cpu_s:.4f}", flush=True)
    await stop()


async def _call(protocol: str, port: int, count: int, rate: float) -> None:
    send: Callable[[], Awaitable[Any]]
    if protocol == "grpc":
        import grpc

        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
        await channel.channel_ready()
        echo = channel.unary_unary(_METHOD)
        send = lambda: echo(_BODY)  # noqa: E731
        close: Callable[[], Awaitable[Any]] = channel.close
    else:
        import aiohttp

        session = aiohttp.ClientSession(f"http://127.0.0.1:{port}")

        async def send() -> None:
            async with session.post("/echo", data=_BODY) as response:
                response.raise_for_status()
                await response.read()

        close = session.close
    try:
        await send()  # connected before the clock starts
        _, failed, _ = await paced(count, rate, count, lambda _n: send())
        if failed:
            raise PartitaError(f"{failed} of {count} empty {protocol} requests failed")
    finally:
        await close()


def measure(protocol: str, count: int, rate: float) -> dict[str, float]:
    """The server's CPU per request (microseconds) over `count` empty requests at `rate`."""
    server = subprocess.Popen(
        [sys.executable, "-m", "partita.bench.rpc_floor", "serve", protocol],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None

    def cpu_s() -> float:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("\n")
        server.stdin.flush()
        return float(server.stdout.readline())

    try:
        ready = server.stdout.readline().split()
        if ready[:1] != ["ready"]:
            server.kill()
            _, err = server.communicate()
            raise PartitaError(f"the {protocol} floor server did not start:\n{err[-2000:]}")
        port = ready[1]
        before = cpu_s()
        call = ["call", protocol, port, str(count), str(rate)]
        client = subprocess.run(
            [sys.executable, "-m", "partita.bench.rpc_floor", *call],
            capture_output=True,
            text=True,
            timeout=60 + 2 * count / rate,
            check=False,
        )
        if client.returncode != 0:
            raise PartitaError(f"the {protocol} floor client failed:\n{client.stderr[-2000:]}")
        used = cpu_s() - before
    finally:
        if server.poll() is None:
            server.stdin.close()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
    # the client's first request (which connects) counts too: one in `count`
    return {"requests": count, "server_cpu_us_per_request": round(used / (count + 1) * 1e6)}


def main(argv: list[str]) -> int:
    if argv[:1] == ["serve"]:
        run_loop(_serve(argv[1]))
    else:
        protocol, port, count, rate = argv[1:]
        run_loop(_call(protocol, int(port), int(count), float(rate)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

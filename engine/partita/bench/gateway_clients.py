"""The clients of `partita bench gateway`, each run in its own process, written the way Zeebe's
clients use the gateway (and with the gateway's own generated stubs, so nothing outside Partita's
`gateway` extra is needed):

    python -m partita.bench.gateway_clients load grpc|rest ADDRESS PROCESS_ID N RATE IN_FLIGHT \
        [TURNS]
    python -m partita.bench.gateway_clients work poll|stream|rest ADDRESS JOB_TYPE

`load` creates N instances with their result awaited (gRPC CreateProcessInstanceWithResult, or
REST `POST /v2/process-instances` with `awaitCompletion`), at RATE per second (0: as fast as
IN_FLIGHT unanswered allow; with TURNS, a `partita.bench.turns.Turns` argument, at RATE in this
generator's slots only), and prints one JSON line of figures. `work` completes jobs of
JOB_TYPE as pyzeebe does (two long-polling ActivateJobs loops of up to 32 jobs, each job
completed as it comes), or from a job stream (StreamActivatedJobs), or over REST
(`POST /v2/jobs/activation`, then `/completion`); it prints `ready` and runs until killed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from partita.bench.procstats import sample, usage
from partita.bench.turns import Turns, send_times
from partita.config import Config
from partita.demo import percentile
from partita.gateway.stubs import load as load_stubs

_POLLERS = 2
_BATCH = 32


async def paced(
    instances: int,
    rate: float,
    in_flight: int,
    create: Callable[[int], Awaitable[None]],
    turns: Turns | None = None,
) -> tuple[list[float], int, float]:
    """Run `create(n)` for each instance at `rate`/s (in `turns`: in this generator's slots),
    at most `in_flight` at once; the latencies (ms), the failures and the seconds it took."""
    gate = asyncio.Semaphore(in_flight)
    latencies: list[float] = []
    failed = 0

    async def one(n: int) -> None:
        nonlocal failed
        async with gate:
            sent = time.monotonic()
            try:
                await create(n)
            except Exception:  # counted: the figures say how many did not complete
                failed += 1
                return
            latencies.append((time.monotonic() - sent) * 1000)

    origin, offset = send_times(rate, turns)
    started = max(origin, time.monotonic())  # taking turns: from the first slot
    tasks: list[asyncio.Task[None]] = []
    for n in range(instances):
        if offset is not None:
            delay = origin + offset(n) - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        else:
            while len(tasks) - len(latencies) - failed >= in_flight:
                await asyncio.sleep(0.001)
        tasks.append(asyncio.create_task(one(n)))
    await asyncio.gather(*tasks)
    return latencies, failed, time.monotonic() - started


async def _load(  # noqa: PLR0917 - the command line, spelled out
    protocol: str,
    address: str,
    process_id: str,
    n: int,
    rate: float,
    flight: int,
    turns: Turns | None = None,
) -> dict[str, Any]:
    cpu_before = sample()
    if protocol == "grpc":
        import grpc

        stubs = load_stubs(Config.from_env().home)
        pb = stubs.messages
        async with grpc.aio.insecure_channel(address) as channel:
            gateway = stubs.services.GatewayStub(channel)
            await channel.channel_ready()  # the first instance's latency is not a connect

            async def create(k: int) -> None:
                request = pb.CreateProcessInstanceRequest(
                    bpmnProcessId=process_id, version=-1, variables=json.dumps({"n": k})
                )
                await gateway.CreateProcessInstanceWithResult(
                    pb.CreateProcessInstanceWithResultRequest(
                        request=request, requestTimeout=120_000
                    ),
                    timeout=130,
                )

            latencies, failed, seconds = await paced(n, rate, flight, create, turns)
    else:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=flight)
        async with aiohttp.ClientSession(address, connector=connector) as session:

            async def create(k: int) -> None:
                body = {
                    "processDefinitionId": process_id,
                    "variables": {"n": k},
                    "awaitCompletion": True,
                    "requestTimeout": 120_000,
                }
                async with session.post("/v2/process-instances", json=body) as response:
                    response.raise_for_status()
                    await response.read()

            latencies, failed, seconds = await paced(n, rate, flight, create, turns)
    latencies.sort()
    return {
        "completed": len(latencies),
        "failed": failed,
        "seconds": round(seconds, 2),
        "instances_per_s": round(len(latencies) / seconds, 1),
        "latency_ms_p50": round(percentile(latencies, 0.50), 1),
        "latency_ms_p95": round(percentile(latencies, 0.95), 1),
        "latency_ms_p99": round(percentile(latencies, 0.99), 1),
        **usage(cpu_before, sample(), seconds),
    }


async def _work_grpc(mode: str, address: str, job_type: str) -> None:
    import grpc

    stubs = load_stubs(Config.from_env().home)
    pb = stubs.messages
    async with grpc.aio.insecure_channel(address) as channel:
        gateway = stubs.services.GatewayStub(channel)
        running: set[asyncio.Future[Any]] = set()

        def complete(job: Any) -> None:
            n = json.loads(job.variables).get("n")
            request = pb.CompleteJobRequest(jobKey=job.key, variables=json.dumps({"done": n}))
            task = asyncio.ensure_future(gateway.CompleteJob(request, timeout=60))
            running.add(task)
            task.add_done_callback(running.discard)

        async def poll() -> None:
            while True:
                request = pb.ActivateJobsRequest(
                    type=job_type,
                    worker="bench-gateway",
                    timeout=300_000,
                    maxJobsToActivate=_BATCH,
                    requestTimeout=10_000,
                )
                async for batch in gateway.ActivateJobs(request, timeout=30):
                    for job in batch.jobs:
                        complete(job)

        async def stream() -> None:
            request = pb.StreamActivatedJobsRequest(
                type=job_type, worker="bench-gateway", timeout=300_000
            )
            async for job in gateway.StreamActivatedJobs(request):
                complete(job)

        print("ready", flush=True)
        loops = [poll() for _ in range(_POLLERS)] if mode == "poll" else [stream()]
        await asyncio.gather(*loops)


async def _work_rest(address: str, job_type: str) -> None:
    import aiohttp

    async with aiohttp.ClientSession(address) as session:
        running: set[asyncio.Task[Any]] = set()

        async def complete(job: dict[str, Any]) -> None:
            n = job["variables"].get("n")
            path = f"/v2/jobs/{job['jobKey']}/completion"
            async with session.post(path, json={"variables": {"done": n}}) as response:
                await response.read()

        async def poll() -> None:
            body = {
                "type": job_type,
                "worker": "bench-gateway",
                "timeout": 300_000,
                "maxJobsToActivate": _BATCH,
                "requestTimeout": 10_000,
            }
            while True:
                async with session.post("/v2/jobs/activation", json=body) as response:
                    jobs = (await response.json())["jobs"]
                for job in jobs:
                    task = asyncio.create_task(complete(job))
                    running.add(task)
                    task.add_done_callback(running.discard)

        print("ready", flush=True)
        await asyncio.gather(*(poll() for _ in range(_POLLERS)))


def main(argv: list[str]) -> int:
    if argv[:1] == ["load"]:
        protocol, address, process_id, n, rate, flight, *rest = argv[1:]
        turns = Turns.parse(rest[0]) if rest else None
        figures = asyncio.run(
            _load(protocol, address, process_id, int(n), float(rate), int(flight), turns)
        )
        print(json.dumps(figures), flush=True)
        return 0
    mode, address, job_type = argv[1:]
    if mode == "rest":
        asyncio.run(_work_rest(address, job_type))
    else:
        asyncio.run(_work_grpc(mode, address, job_type))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`partita bench gateway`: what `partita gateway` adds to an instance's way, measured side by
side in one run.

On a fresh namespace it starts an engine worker and a gateway, deploys one one-task process per
path (each with a job type of its own), and for each path starts that path's job worker, warms
up, then measures saturation (as fast as `in_flight` unanswered allow) and latency at a fixed
rate, create-with-result to its result:

- `native`: Partita's Python client and its push job worker (the baseline, as `bench e2e`);
- `grpc`: gRPC CreateProcessInstanceWithResult, jobs by a pyzeebe-style worker (two
  long-polling ActivateJobs loops, each job completed as it comes);
- `grpc-stream`: the same load, jobs by a job stream (StreamActivatedJobs);
- `rest`: REST `POST /v2/process-instances` with `awaitCompletion`, jobs by REST activation
  and completion.

The paths take turns at the fixed rate (`slot_s`, default one second): every path's job worker
and load generator run at once, and each path sends its instances only in its own slots, one
path after another, over and over (`partita.bench.turns`). A machine that is slow for a few
seconds is then slow for every path alike, where paths measured one after another (`slot_s` 0)
each meet a moment of their own. The gateway's CPU at the fixed rate is what it used in the
path's slots.

Each gateway path's p50 and p99 are also given as their ratio to the native path's. With
`rounds` above one, the paths run that many times on the same engine and gateway, in reverse
order every other round (so a machine that speeds up or slows down during the run favours no
path), and each figure is the median over the rounds, the ratios being each round's own; the
rounds' figures follow under `rounds`. On a shared 2-core machine one round's ratio moves by
up to 2x: compare medians.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from partita.bench import rpc_floor
from partita.bench.e2e import wait_for_stable_group
from partita.bench.parties import Child, Progress
from partita.bench.procstats import ProcessSample, usage
from partita.bench.scratch import scratch_namespace
from partita.bench.turns import Turns
from partita.client import Client
from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.log.admin import admin_client, port_open
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, job_topic_spec, load_specs

_BPMN = Path(__file__).resolve().parent / "one-task.bpmn"
PATHS = ("native", "grpc", "grpc-stream", "rest")
REQUESTS = {"grpc": 3, "grpc-stream": 2, "rest": 3}
"""Requests an instance makes through the gateway on each path: create with result, activation
(long polling: one per job at this rate, at most) and completion; a streamed job is a message
on a call already open, not a request."""
FLOOR_REQUESTS = 1000
"""Empty requests of each protocol the floor is measured with (`partita.bench.rpc_floor`), at
most (no more than the instances at the fixed rate)."""
_TURNS_WARM_UP = 100
"""Instances each path sends once every worker runs, before the paths take turns."""
_TURNS_LEAD_S = 3.0
"""From starting the load generators to the first slot: they start and connect meanwhile."""


def _bpmn(path: str) -> tuple[str, bytes]:
    """The one-task process of `path`: its own process id and job type."""
    text = _BPMN.read_text().replace("bench-one-task", f"bench-gw-{path}")
    return f"bench-gw-{path}.bpmn", text.replace("bench.task", f"bench.gw.{path}").encode()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(
    config: Config,
    *,
    instances: int = 2000,
    rate: float = 200.0,
    latency_instances: int = 2000,
    in_flight: int = 200,
    partitions: int = 1,
    paths: tuple[str, ...] = PATHS,
    keep_topics: bool = False,
    progress: Progress = print,
    rounds: int = 1,
    slot_s: float = 1.0,
) -> dict[str, Any]:
    measured: list[dict[str, Any]] = []
    floors: list[dict[str, dict[str, float]]] = []
    with scratch_namespace(config, "gw", keep=keep_topics, partitions=partitions) as scratch:
        apply_topics(
            admin_client(kafka_access(scratch, KafkaRole.OPERATOR)),
            [*load_specs(scratch), job_topic_spec(scratch, "bench.gw.native")],
        )
        home = scratch.home
        env = {**scratch.kafka_env(), "PARTITA_HOME": str(home)}
        cluster = ["--bootstrap-servers", scratch.bootstrap, "--namespace", scratch.namespace]
        grpc_port, rest_port = _free_port(), _free_port()
        grpc_address, rest_address = f"127.0.0.1:{grpc_port}", f"http://127.0.0.1:{rest_port}"
        engine = Child(
            "engine worker",
            [sys.executable, "-m", "partita.cli", "worker", *cluster, "--home", str(home)],
            home / "engine-worker.log",
            {**env, "PARTITA_TRUNCATE": "false"},
        )
        gateway = Child(
            "gateway",
            [
                sys.executable,
                "-m",
                "partita.cli",
                "gateway",
                *cluster,
                "--grpc",
                grpc_address,
                "--rest",
                f"127.0.0.1:{rest_port}",
            ],
            home / "gateway.log",
            env,
        )
        try:
            wait_for_stable_group(scratch, 1, progress)
            _wait_for_ports(gateway, grpc_port, rest_port)
            with Client(scratch, timeout=120) as client:
                client.deploy(*(_bpmn(path) for path in paths))
            for number in range(rounds):
                order = round_order(paths, number)
                if rounds > 1:
                    progress(f"round {number + 1}/{rounds}: {', '.join(order)}")
                addresses = {p: rest_address if p == "rest" else grpc_address for p in order}
                phase = Phase(scratch, addresses, in_flight, env, progress, gateway)
                results: dict[str, Any] = {}
                for path in order:
                    results[path] = _measure(
                        phase, path, instances, rate, latency_instances, sequential=slot_s <= 0
                    )
                floors.append(_floor(min(FLOOR_REQUESTS, latency_instances), rate, progress))
                if slot_s > 0:
                    turns = _taking_turns(phase, order, latency_instances, rate, slot_s)
                    for path, fixed in turns.items():
                        results[path]["fixed_rate"] = fixed
                each = with_ratios({path: results[path] for path in paths})
                measured.append(with_floor(each, floors[-1], rate))
        finally:
            gateway.stop()
            engine.stop()
    if rounds == 1:
        return {"partitions": partitions, "rate": rate, "floor": floors[0], "paths": measured[0]}
    return {
        "partitions": partitions,
        "rate": rate,
        "rounds": rounds,
        "floor": {
            protocol: {
                "server_cpu_us_per_request": statistics.median(
                    f[protocol]["server_cpu_us_per_request"] for f in floors
                )
            }
            for protocol in rpc_floor.PROTOCOLS
        },
        "paths": medians(measured),
    }


def _floor(requests: int, rate: float, progress: Progress) -> dict[str, dict[str, float]]:
    """What empty requests cost their server now (`partita.bench.rpc_floor`), measured in
    each round just before the paths' latency, with the engine and gateway idle."""
    floor = {}
    for protocol in rpc_floor.PROTOCOLS:
        progress(f"floor: {requests} empty {protocol} requests at {rate:g}/s...")
        floor[protocol] = rpc_floor.measure(protocol, requests, rate)
    return floor


def with_floor(
    paths: dict[str, Any], floor: dict[str, dict[str, float]], rate: float
) -> dict[str, Any]:
    """One round's gateway paths, each with the gateway's CPU per instance at the fixed rate
    and the floor of its requests (`REQUESTS` times an empty request's CPU in that round)."""
    for path, figures in paths.items():
        if path == "native":
            continue
        protocol = "http" if path == "rest" else "grpc"
        cpu_percent = figures["fixed_rate"]["gateway"]["cpu_percent"]
        floor_us = floor[protocol]["server_cpu_us_per_request"]
        figures["gateway_cpu"] = {
            "ms_per_instance": round(cpu_percent * 10 / rate, 2),
            "requests_per_instance": REQUESTS[path],
            "floor_ms_per_instance": round(REQUESTS[path] * floor_us / 1000, 2),
        }
    return paths


def round_order(paths: tuple[str, ...], number: int) -> tuple[str, ...]:
    """The order of the paths in round `number` (from 0): as given, reversed every other one."""
    return paths if number % 2 == 0 else paths[::-1]


def with_ratios(results: dict[str, Any]) -> dict[str, Any]:
    """One round's figures, each gateway path with its p50 and p99 as a ratio to native's."""
    native = results.get("native", {}).get("fixed_rate")
    if native:
        for path, figures in results.items():
            if path != "native":
                fixed = figures["fixed_rate"]
                figures["vs_native"] = {
                    "p50": round(fixed["latency_ms_p50"] / native["latency_ms_p50"], 2),
                    "p99": round(fixed["latency_ms_p99"] / native["latency_ms_p99"], 2),
                }
    return results


def medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Each path's median over `rounds` (each `with_ratios`' and `with_floor`'s result) of its
    saturation, its p50 and p99 and the gateway's CPU at the fixed rate, its ratios to native
    and the gateway's CPU per instance beside its floor, with every round's figures."""

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 2)

    out: dict[str, Any] = {}
    for path in rounds[0]:
        each = [figures[path] for figures in rounds]
        out[path] = {
            "saturation": {
                "instances_per_s": median([r["saturation"]["instances_per_s"] for r in each])
            },
            "fixed_rate": {
                "latency_ms_p50": median([r["fixed_rate"]["latency_ms_p50"] for r in each]),
                "latency_ms_p99": median([r["fixed_rate"]["latency_ms_p99"] for r in each]),
                "gateway": {
                    "cpu_percent": median([r["fixed_rate"]["gateway"]["cpu_percent"] for r in each])
                },
            },
            "rounds": each,
        }
        if "vs_native" in each[0]:
            out[path]["vs_native"] = {
                "p50": median([r["vs_native"]["p50"] for r in each]),
                "p99": median([r["vs_native"]["p99"] for r in each]),
            }
        if "gateway_cpu" in each[0]:
            cpu = [r["gateway_cpu"] for r in each]
            out[path]["gateway_cpu"] = {
                "ms_per_instance": median([c["ms_per_instance"] for c in cpu]),
                "requests_per_instance": cpu[0]["requests_per_instance"],
                "floor_ms_per_instance": median([c["floor_ms_per_instance"] for c in cpu]),
            }
    return out


def _wait_for_ports(gateway: Child, *ports: int) -> None:
    import time

    deadline = time.monotonic() + 120
    while not all(port_open("127.0.0.1", port) for port in ports):
        if gateway.process.poll() is not None or time.monotonic() > deadline:
            tail = gateway.log.read_text(errors="replace").splitlines()[-15:]
            raise PartitaError("the gateway did not start; the end of its log:\n" + "\n".join(tail))
        time.sleep(0.1)


@dataclass(frozen=True)
class Phase:
    """What every measurement of a round shares."""

    config: Config
    addresses: dict[str, str]
    """Each path's gateway address (gRPC or REST)."""
    in_flight: int
    env: dict[str, str]
    progress: Progress
    gateway: Child


def _worker(phase: Phase, path: str) -> Child:
    """`path`'s job worker, started (it prints `ready` once it takes jobs)."""
    config, job_type = phase.config, f"bench.gw.{path}"
    if path == "native":
        work = [sys.executable, "-m", "partita.bench.e2e_jobs", config.bootstrap, config.namespace]
        args = [*work, job_type, "32"]
    else:
        mode = {"grpc": "poll", "grpc-stream": "stream", "rest": "rest"}[path]
        args = [
            sys.executable, "-m", "partita.bench.gateway_clients", "work", mode,
            phase.addresses[path], job_type,
        ]  # fmt: skip
    return Child(f"{path} job worker", args, config.home / f"{path}-worker.log", phase.env)


def _measure(
    phase: Phase,
    path: str,
    instances: int,
    rate: float,
    latency_instances: int,
    *,
    sequential: bool,
) -> dict[str, Any]:
    """`path` warmed up and saturated, and (`sequential`) at the fixed rate."""
    progress, gateway = phase.progress, phase.gateway
    worker = _worker(phase, path)
    try:
        worker.wait_for_line("ready", 120)
        progress(f"[{path}] warming up (200 instances)...")
        _load(phase, worker, path, 200, 0)
        progress(f"[{path}] saturation: {instances} instances, {phase.in_flight} in flight...")
        before = gateway.sample(), worker.sample()
        saturation = _load(phase, worker, path, instances, 0)
        saturation |= _usage(before, gateway, worker, saturation["seconds"])
        if not sequential:
            return {"saturation": saturation}
        progress(f"[{path}] latency: {latency_instances} instances at {rate:g}/s...")
        before = gateway.sample(), worker.sample()
        fixed = _load(phase, worker, path, latency_instances, rate)
        fixed |= _usage(before, gateway, worker, fixed["seconds"])
    finally:
        worker.stop()
    return {"saturation": saturation, "fixed_rate": fixed}


def _taking_turns(
    phase: Phase, order: tuple[str, ...], latency_instances: int, rate: float, slot_s: float
) -> dict[str, dict[str, Any]]:
    """Every path at `rate` in slots of its own (`partita.bench.turns`): each path's figures,
    with the gateway's CPU in the path's slots and its job worker's over them."""
    per_slot = max(1, round(rate * slot_s))
    slots = math.ceil(latency_instances / per_slot) * len(order)
    phase.progress(
        f"latency: the paths take turns in {slot_s:g} s slots, {latency_instances} instances"
        f" each at {rate:g}/s ({slots * slot_s:g} s)..."
    )
    workers = {path: _worker(phase, path) for path in order}
    try:
        for path, worker in workers.items():
            worker.wait_for_line("ready", 120)
            _load(phase, worker, path, min(_TURNS_WARM_UP, latency_instances), 0)
        start = time.time() + _TURNS_LEAD_S
        loads = {
            path: _start_load(
                phase, path, latency_instances, rate, Turns(start, slot_s, len(order), turn)
            )
            for turn, path in enumerate(order)
        }
        gateway_cpu = dict.fromkeys(order, 0.0)
        time.sleep(max(0.0, start - time.time()))
        gateway_before, workers_before = (
            phase.gateway.sample(),
            {path: worker.sample() for path, worker in workers.items()},
        )
        previous = gateway_before
        for slot in range(slots):  # the gateway's CPU, slot by slot, to the path of the slot
            time.sleep(max(0.0, start + (slot + 1) * slot_s - time.time()))
            now = phase.gateway.sample()
            gateway_cpu[order[slot % len(order)]] += now.cpu_s - previous.cpu_s
            previous = now
        active_s = slots // len(order) * slot_s
        out: dict[str, dict[str, Any]] = {}
        for path in order:
            fixed = _finish_load(loads[path], workers[path], path)
            worker_usage = usage(workers_before[path], workers[path].sample(), active_s)
            fixed |= {
                "gateway": {
                    "cpu_percent": round(100 * gateway_cpu[path] / active_s, 1),
                    "peak_rss_mb": round(previous.peak_rss_mb, 1),
                },
                "job_worker": worker_usage,
                "turns": {"slot_s": slot_s, "paths": len(order)},
            }
            out[path] = fixed
        return out
    finally:
        for worker in workers.values():
            worker.stop()


def _usage(
    before: tuple[ProcessSample, ProcessSample], gateway: Child, worker: Child, seconds: float
) -> dict[str, Any]:
    """CPU and memory of the gateway (idle on the native path) and of the job worker."""
    return {
        "gateway": usage(before[0], gateway.sample(), seconds),
        "job_worker": usage(before[1], worker.sample(), seconds),
    }


def _load(phase: Phase, worker: Child, path: str, count: int, rate: float) -> dict[str, Any]:
    return _finish_load(_start_load(phase, path, count, rate), worker, path)


def _start_load(
    phase: Phase, path: str, count: int, rate: float, turns: Turns | None = None
) -> subprocess.Popen[str]:
    """`path`'s load generator, started: `count` instances at `rate` (0: saturation)."""
    config, process_id, in_flight = phase.config, f"bench-gw-{path}", phase.in_flight
    if path == "native":
        args = [
            sys.executable, "-m", "partita.bench.e2e_load", config.bootstrap, config.namespace,
            process_id, str(count), str(rate), str(in_flight),
        ]  # fmt: skip
    else:
        protocol = "rest" if path == "rest" else "grpc"
        args = [
            sys.executable, "-m", "partita.bench.gateway_clients", "load", protocol,
            phase.addresses[path], process_id, str(count), str(rate), str(in_flight),
        ]  # fmt: skip
    if turns is not None:
        args.append(turns.argument())
    return subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **phase.env},
    )


def _finish_load(load: subprocess.Popen[str], worker: Child, path: str) -> dict[str, Any]:
    """The load generator's figures once it ends."""
    while True:  # the load waits on the job worker: give up at once when the worker dies
        try:
            out, err = load.communicate(timeout=1.0)
            break
        except subprocess.TimeoutExpired:
            if worker.process.poll() is not None:
                load.kill()
                load.communicate()
                tail = worker.log.read_text(errors="replace").splitlines()[-15:]
                raise PartitaError(f"the {path} job worker died:\n" + "\n".join(tail)) from None
    if load.returncode != 0:
        raise PartitaError(f"the {path} load generator failed:\n{err[-2000:]}")
    figures: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return figures

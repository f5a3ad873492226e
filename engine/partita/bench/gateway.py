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

Each gateway path's p50 and p99 are also given as their ratio to the native path's. With
`rounds` above one, the paths run that many times on the same engine and gateway, in reverse
order every other round (so a machine that speeds up or slows down during the run favours no
path), and each figure is the median over the rounds, the ratios being each round's own; the
rounds' figures follow under `rounds`. On a shared 2-core machine one round's ratio moves by
up to 2x: compare medians.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from partita.bench.e2e import wait_for_stable_group
from partita.bench.parties import Child, Progress
from partita.bench.procstats import ProcessSample, usage
from partita.bench.scratch import scratch_namespace
from partita.client import Client
from partita.config import Config, KafkaRole
from partita.errors import PartitaError
from partita.log.admin import admin_client, port_open
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, job_topic_spec, load_specs

_BPMN = Path(__file__).resolve().parent / "one-task.bpmn"
PATHS = ("native", "grpc", "grpc-stream", "rest")


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
) -> dict[str, Any]:
    measured: list[dict[str, Any]] = []
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
                results: dict[str, Any] = {}
                for path in order:
                    address = rest_address if path == "rest" else grpc_address
                    results[path] = _measure(
                        scratch,
                        path,
                        address,
                        instances,
                        rate,
                        latency_instances,
                        in_flight,
                        env,
                        progress,
                        gateway,
                    )
                measured.append(with_ratios({path: results[path] for path in paths}))
        finally:
            gateway.stop()
            engine.stop()
    if rounds == 1:
        return {"partitions": partitions, "rate": rate, "paths": measured[0]}
    return {"partitions": partitions, "rate": rate, "rounds": rounds, "paths": medians(measured)}


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
    """Each path's median over `rounds` (each `with_ratios`' result) of its saturation, its p50
    and p99 at the fixed rate and its ratios to native, with every round's figures."""

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
            },
            "rounds": each,
        }
        if "vs_native" in each[0]:
            out[path]["vs_native"] = {
                "p50": median([r["vs_native"]["p50"] for r in each]),
                "p99": median([r["vs_native"]["p99"] for r in each]),
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


def _measure(  # noqa: PLR0917 - the benchmark's knobs, spelled out
    config: Config,
    path: str,
    address: str,
    instances: int,
    rate: float,
    latency_instances: int,
    in_flight: int,
    env: dict[str, str],
    progress: Progress,
    gateway: Child,
) -> dict[str, Any]:
    job_type, process_id = f"bench.gw.{path}", f"bench-gw-{path}"
    if path == "native":
        work = [sys.executable, "-m", "partita.bench.e2e_jobs", config.bootstrap, config.namespace]
        worker_args = [*work, job_type, "32"]
    else:
        mode = {"grpc": "poll", "grpc-stream": "stream", "rest": "rest"}[path]
        worker_args = [
            sys.executable,
            "-m",
            "partita.bench.gateway_clients",
            "work",
            mode,
            address,
            job_type,
        ]
    worker = Child(f"{path} job worker", worker_args, config.home / f"{path}-worker.log", env)
    try:
        worker.wait_for_line("ready", 120)
        progress(f"[{path}] warming up (200 instances)...")
        _load(config, worker, path, address, process_id, 200, 0, in_flight, env)
        progress(f"[{path}] saturation: {instances} instances, {in_flight} in flight...")
        before = gateway.sample(), worker.sample()
        saturation = _load(config, worker, path, address, process_id, instances, 0, in_flight, env)
        saturation |= _usage(before, gateway, worker, saturation["seconds"])
        progress(f"[{path}] latency: {latency_instances} instances at {rate:g}/s...")
        before = gateway.sample(), worker.sample()
        fixed = _load(
            config, worker, path, address, process_id, latency_instances, rate, in_flight, env
        )
        fixed |= _usage(before, gateway, worker, fixed["seconds"])
    finally:
        worker.stop()
    return {"saturation": saturation, "fixed_rate": fixed}


def _usage(
    before: tuple[ProcessSample, ProcessSample], gateway: Child, worker: Child, seconds: float
) -> dict[str, Any]:
    """CPU and memory of the gateway (idle on the native path) and of the job worker."""
    return {
        "gateway": usage(before[0], gateway.sample(), seconds),
        "job_worker": usage(before[1], worker.sample(), seconds),
    }


def _load(  # noqa: PLR0917
    config: Config,
    worker: Child,
    path: str,
    address: str,
    process_id: str,
    count: int,
    rate: float,
    in_flight: int,
    env: dict[str, str],
) -> dict[str, Any]:
    if path == "native":
        args = [
            sys.executable, "-m", "partita.bench.e2e_load", config.bootstrap, config.namespace,
            process_id, str(count), str(rate), str(in_flight),
        ]  # fmt: skip
    else:
        protocol = "rest" if path == "rest" else "grpc"
        args = [
            sys.executable, "-m", "partita.bench.gateway_clients", "load", protocol, address,
            process_id, str(count), str(rate), str(in_flight),
        ]  # fmt: skip
    load = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **env}
    )
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

"""`partita gateway` in its own process for the tests of Zeebe's and Camunda's clients.

The gateway shares the checkout's PARTITA_HOME, where its gRPC stubs are generated once
(`scripts/setup` runs `partita gateway --prepare`); everything else it needs is Kafka.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from partita.config import Config
from partita.log.admin import port_open
from tests.support.local_kafka import free_port
from tests.support.paths import ROOT
from tests.support.worker_processes import clean_kafka_env


@dataclass(frozen=True)
class RunningGateway:
    grpc: str
    """host:port of the gRPC API (ZEEBE_ADDRESS)."""
    rest: str
    """http://host:port of the REST API (CAMUNDA_REST_ADDRESS), without /v2."""
    log: Path
    pid: int


@contextmanager
def running_gateway(config: Config, log_dir: Path, *extra: str) -> Iterator[RunningGateway]:
    """A gateway for `config`'s namespace on free ports, stopped (SIGTERM) at the end."""
    grpc_port, rest_port = free_port(), free_port()
    log = log_dir / f"gateway-{grpc_port}.log"
    env = {
        **clean_kafka_env(),
        **config.kafka_env(),
        "KAFKA_BOOTSTRAP_SERVERS": config.bootstrap,
        "PARTITA_NAMESPACE": config.namespace,
        "PARTITA_HOME": str(Config.from_env().home),
    }
    command = [
        sys.executable,
        "-m",
        "partita.cli",
        "gateway",
        "--grpc",
        f"127.0.0.1:{grpc_port}",
        "--rest",
        f"127.0.0.1:{rest_port}",
        *extra,
    ]
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while not (port_open("127.0.0.1", grpc_port) and port_open("127.0.0.1", rest_port)):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the gateway did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield RunningGateway(
            f"127.0.0.1:{grpc_port}", f"http://127.0.0.1:{rest_port}", log, process.pid
        )
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise AssertionError(
                f"the gateway did not stop on SIGTERM:\n{log.read_text()}"
            ) from None

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
from typing import Any

from partita.config import Config
from partita.log.admin import port_open
from partita.protocol.enums import BpmnElementType
from partita.protocol.intents import ProcessInstanceIntent
from partita.protocol.records import Record
from tests.support.local_kafka import free_port
from tests.support.paths import ROOT
from tests.support.worker_processes import clean_kafka_env, read_log


@dataclass(frozen=True)
class RunningGateway:
    grpc: str
    """host:port of the gRPC API (ZEEBE_ADDRESS)."""
    rest: str
    """http://host:port of the REST API (CAMUNDA_REST_ADDRESS), without /v2."""
    log: Path
    pid: int


@contextmanager
def running_gateway(
    config: Config, log_dir: Path, *extra: str, env: dict[str, str] | None = None
) -> Iterator[RunningGateway]:
    """A gateway for `config`'s namespace on free ports, stopped (SIGTERM) at the end; `extra`
    flags and `env` variables configure it further. A plaintext gateway without
    authentication is handed over once its topology shows every partition owned (the engine
    worker may still be joining its group under load)."""
    grpc_port, rest_port = free_port(), free_port()
    log = log_dir / f"gateway-{grpc_port}.log"
    env = {
        **clean_kafka_env(),
        **config.kafka_env(),
        "KAFKA_BOOTSTRAP_SERVERS": config.bootstrap,
        "PARTITA_NAMESPACE": config.namespace,
        "PARTITA_HOME": str(Config.from_env().home),
        **(env or {}),
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
        running = RunningGateway(
            f"127.0.0.1:{grpc_port}", f"http://127.0.0.1:{rest_port}", log, process.pid
        )
        if not extra and not env:
            _wait_for_owners(running, config.partitions, deadline)
        yield running
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


def _wait_for_owners(gateway: RunningGateway, partitions: int, deadline: float) -> None:
    import json
    import urllib.request

    while True:
        with urllib.request.urlopen(f"{gateway.rest}/v2/topology", timeout=30) as response:
            brokers = json.loads(response.read())["brokers"]
        if sum(len(b["partitions"]) for b in brokers) == partitions:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the gateway's topology never showed {partitions} partitions")
        time.sleep(0.2)


@dataclass(frozen=True)
class GatewayCertificates:
    ca: Path
    cert: Path
    key: Path
    client_cert: Path
    client_key: Path


def make_certificates(folder: Path) -> GatewayCertificates:
    """A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, as PEM
    files (made with `cryptography`: the test's own authority)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> Path:
        path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return path

    def write_cert(cert: x509.Certificate, path: Path) -> Path:
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return path

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(name("partita test CA"))
        .issuer_name(name("partita test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )

    def issue(common: str, sans: list[x509.GeneralName]) -> tuple[x509.Certificate, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            x509.CertificateBuilder()
            .subject_name(name(common))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return builder.sign(ca_key, hashes.SHA256()), key

    server, server_key = issue(
        "localhost",
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
    )
    client, client_key = issue("orders-app", [])
    return GatewayCertificates(
        ca=write_cert(ca, folder / "ca.pem"),
        cert=write_cert(server, folder / "gateway.pem"),
        key=write_key(server_key, folder / "gateway-key.pem"),
        client_cert=write_cert(client, folder / "client.pem"),
        client_key=write_key(client_key, folder / "client-key.pem"),
    )


def job_takers(records: list[Any]) -> dict[int, str]:
    """Which worker took each activated job, from the log: the worker a JOB_BATCH ACTIVATED
    names (ActivateJobs), or, for a job the engine pushed to a gateway, the worker the gateway
    handed it to as its JOB UPDATE_TIMEOUT names it; `partita.push` for a pushed job answered
    within a second, which the gateway does not restamp."""
    from partita.protocol.intents import JobBatchIntent, JobIntent

    handed = {r.key: r.value.worker for r in records if r.intent is JobIntent.UPDATE_TIMEOUT}
    takers = {}
    for r in records:
        if r.intent is JobBatchIntent.ACTIVATED:
            for key in r.value.job_keys:
                takers[key] = handed.get(key, r.value.worker)
    return takers


def records(engine: Config) -> list[Record]:
    """Every record of the engine's log, partition after partition."""
    return [r for rs in read_log(engine).partitions.values() for r in rs]


def process_ended(engine: Config, instance: int, intent: ProcessInstanceIntent) -> bool:
    """Whether process instance `instance` has its `intent` (ELEMENT_COMPLETED, ...) on the log."""
    return any(
        r.intent is intent
        and getattr(r.value, "bpmn_element_type", None) is BpmnElementType.PROCESS
        and r.key == instance
        for r in records(engine)
    )

"""The examples' walkthrough on the secured local broker (SASL_SSL and mTLS, ACLs enforced):
each program reads a Kafka client properties file of its own principal, with only its role's
ACLs; a refused login or an untrusted certificate says what to check.
"""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.config import Config, KafkaRole
from partita.localkafka import SecureKafka
from partita.localkafka.credentials import Login, user_of
from tests.support.example_programs import Access, cluster_flags, run_partita, walkthrough
from tests.support.paths import EXAMPLES
from tests.support.worker_processes import BUILTIN_ENGINE, WorkerProcess

pytestmark = [pytest.mark.kafka, pytest.mark.interop]


@pytest.fixture(scope="module")
def secure_engine(
    secure_kafka: SecureKafka, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Config]:
    """A namespace on the secured broker: topics made by the admin, who also grants the engine,
    client and job-worker principals their roles' ACLs with `partita acls --apply`, and a real
    engine worker running as the engine principal. Programs read the log as the admin."""
    home = tmp_path_factory.mktemp("examples-secure")
    config = Config(
        bootstrap_servers=secure_kafka.bootstrap,
        namespace=f"xs{uuid.uuid4().hex[:8]}",
        home=home,
        kafka_config=secure_kafka.admin,
    )
    admin = Access(cluster_flags(config), {"PARTITA_KAFKA_CONFIG": str(secure_kafka.admin)})
    jobs = ["--job-type", "price", "--job-type", "notify"]
    run_partita(["topics", "apply", *jobs], admin)
    for role, only in (
        (KafkaRole.ENGINE, []),
        (KafkaRole.CLIENT, []),
        (KafkaRole.JOB_WORKER, jobs),
    ):
        principal = f"User:{user_of(role)}"
        run_partita(
            ["acls", "--role", str(role), "--principal", principal, *only, "--apply"], admin
        )
    engine = {"PARTITA_KAFKA_CONFIG": str(secure_kafka.role(KafkaRole.ENGINE))}
    worker = WorkerProcess(config, home / "engine", engine=BUILTIN_ENGINE, env=engine).start()
    try:
        yield config
    finally:
        assert worker.stop() == 0, worker.tail()
    run_partita(["verify-replay", *worker.args()], Access([], engine))


def test_the_walkthrough_on_a_secured_cluster_each_program_its_own_principal(
    secure_engine: Config,
    secure_kafka: SecureKafka,
    java_worker: list[str],
    node_project: Path,
    tmp_path: Path,
) -> None:
    """The Java worker as job-worker over SASL_SSL SCRAM-SHA-512 (PARTITA_KAFKA_CONFIG_JOB_WORKER,
    the cluster from the file), the Node worker as job-worker with a client certificate on the
    mTLS listener (--kafka-config), the producer as client over SCRAM-SHA-256
    (PARTITA_KAFKA_CONFIG); each has only its role's ACLs."""
    config = secure_engine
    namespace = ["--namespace", config.namespace]
    worker_scram = secure_kafka.role(KafkaRole.JOB_WORKER)
    worker_mtls = secure_kafka.role(KafkaRole.JOB_WORKER, Login.MTLS)
    client = secure_kafka.role(KafkaRole.CLIENT, Login.SCRAM_SHA_256)
    java, node = walkthrough(
        config,
        java_worker,
        node_project,
        tmp_path,
        java=Access(namespace, {"PARTITA_KAFKA_CONFIG_JOB_WORKER": str(worker_scram)}),
        node=Access([*namespace, "--kafka-config", str(worker_mtls)]),
        producer=Access(cluster_flags(config), {"PARTITA_KAFKA_CONFIG": str(client)}),
    )
    assert (
        f"at {secure_kafka.bootstrap} over SASL_SSL (SCRAM-SHA-512), settings from"
        f" PARTITA_KAFKA_CONFIG_JOB_WORKER={worker_scram}" in java
    )
    assert (
        f"at {secure_kafka.mtls_bootstrap} over SSL, settings from --kafka-config={worker_mtls}"
        in node
    )


@pytest.mark.parametrize("refusal", ["wrong password", "untrusted CA"])
def test_on_the_secured_cluster_a_refused_login_or_certificate_says_what_to_check(
    refusal: str,
    secure_kafka: SecureKafka,
    java_worker: list[str],
    node_project: Path,
    tmp_path: Path,
) -> None:
    good = secure_kafka.role(KafkaRole.JOB_WORKER).read_text()
    if refusal == "wrong password":
        bad = re.sub(r'password="[^"]*"', 'password="not-the-password"', good)
        advice = "check sasl.mechanism and the user and password in sasl.jaas.config"
    else:
        bad = re.sub(
            r"(?m)^ssl.truststore.location=.*$",
            f"ssl.truststore.location={secure_kafka.untrusted_ca_pem}",
            good,
        )
        advice = "is the broker's CA in ssl.truststore.location"
    assert bad != good
    properties = tmp_path / "refused.properties"
    properties.write_text(bad)
    access = Access(["--namespace", "refused"], {"PARTITA_KAFKA_CONFIG": str(properties)})
    programs = [
        ([*java_worker, *access.flags], EXAMPLES / "java-worker", "price worker"),
        (["node", "worker.js", *access.flags], node_project, "node worker"),
    ]
    for cmd, cwd, name in programs:
        started = time.monotonic()
        result = subprocess.run(
            cmd,
            cwd=cwd,
            env=access.environment(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        last = result.stderr.strip().splitlines()[-1]
        assert result.returncode == 1, result.stdout + result.stderr
        assert last.startswith(f"{name}: ") and advice in last, result.stderr
        assert f"PARTITA_KAFKA_CONFIG={properties}" in last
        assert "not-the-password" not in result.stdout + result.stderr
        assert time.monotonic() - started < 60, f"{name} took too long to give up"

"""One real Kafka broker per test session, started from the Maven Central jars.

When KAFKA_BOOTSTRAP_SERVERS is set, that cluster is used instead and nothing is started.
Tests isolate themselves with a unique namespace (topic prefix) each.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.config import Config
from partita.localkafka import LocalBroker, SecureKafka, SecureLocalBroker
from tests.support.local_kafka import free_port, shared_distribution


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if external:
        yield external
        return
    home = tmp_path_factory.mktemp("kafka-home")
    broker = LocalBroker(
        home,
        free_port(),
        free_port(),
        internal_partitions=1,
        distribution=shared_distribution(),
    )
    status = broker.up(print)
    try:
        yield status.bootstrap
    finally:
        broker.down()


@pytest.fixture(scope="session")
def secure_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureKafka]:
    """The secured local broker (SASL_SSL, mTLS, ACLs enforced) on free ports under a fresh
    home, started by the first test that asks for it and stopped at the end of the session.
    Always local: KAFKA_BOOTSTRAP_SERVERS has no users or certificates of ours."""
    broker = SecureLocalBroker(
        tmp_path_factory.mktemp("secure-kafka-home"),
        free_port(),
        free_port(),
        mtls_port=free_port(),
        internal_partitions=1,
        distribution=shared_distribution(),
    )
    try:
        broker.up(print)
        yield broker.endpoints()
    finally:
        broker.down()


@pytest.fixture
def namespace() -> str:
    """A topic prefix no other test uses."""
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def config(kafka_bootstrap: str, namespace: str, tmp_path: Path) -> Config:
    return Config(bootstrap_servers=kafka_bootstrap, namespace=namespace, home=tmp_path)

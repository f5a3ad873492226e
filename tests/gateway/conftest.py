"""The fixtures every module of tests/gateway shares: a namespace with its engine worker, owning
every partition, and a plaintext `partita gateway` in front of it, one of each per module
(replay is checked when the module ends)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from partita.bench.e2e import wait_for_stable_group
from partita.config import Config
from tests.support.gateway import RunningGateway, running_gateway
from tests.support.worker_processes import engine_namespace


@pytest.fixture(scope="module")
def engine(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Config]:
    name = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    with engine_namespace(kafka_bootstrap, tmp_path_factory.mktemp(name), "gw") as config:
        # the worker was just started: the tests begin once it owns every partition, so a
        # topology they ask for shows the cluster, not a worker still joining
        wait_for_stable_group(config, 1, lambda _: None, timeout=90)
        yield config


@pytest.fixture(scope="module")
def gateway(engine: Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    with running_gateway(engine, tmp_path_factory.mktemp("gateway")) as running:
        yield running

"""Fixtures shared by more than one integration test module: the worker under a hostile
producer's attack (one per module: tests/integration/test_hostile_*.py) and the example programs,
built once per session (tests/integration/test_examples*.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.example_programs import build
from tests.support.hostile_attack import Attack, attacked_worker
from tests.support.paths import EXAMPLES


@pytest.fixture(scope="module")
def attack(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Attack]:
    """The module's engine worker under attack; at the module's end it restarts warm and cold
    and replays to the same state (`attacked_worker`)."""
    with attacked_worker(kafka_bootstrap, tmp_path_factory.mktemp("hostile")) as attacked:
        yield attacked


@pytest.fixture(scope="session")
def java_worker() -> list[str]:
    """The Java example built as its README says; the command that runs it."""
    project = EXAMPLES / "java-worker"
    build(["mvn", "-B", "-q", "package", "-DskipTests"], project, "the Java worker")
    return ["java", "-jar", str(project / "target" / "price-worker.jar")]


@pytest.fixture(scope="session")
def node_project() -> Path:
    """The Node example's dependencies installed from its lock file."""
    project = EXAMPLES / "node"
    build(["npm", "ci", "--no-audit", "--no-fund", "--silent"], project, "the Node example")
    return project


@pytest.fixture
def gc_restored() -> Iterator[None]:
    """For a test that runs an engine worker in this process: the worker tunes the collector."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)

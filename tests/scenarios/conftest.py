"""The engine of the scenarios, on two harnesses: the in-memory log (fast, for the engine
core) and the real broker (the processing and replay state machines reading and writing real
topics with transactions). Each has one partition with the fixture processes deployed, and each
scenario ends by checking that replay rebuilds the same state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from partita.processing.builtin import build_engine
from partita.protocol.intents import DeploymentIntent
from partita.protocol.records import command
from partita.protocol.values import DeploymentResource, DeploymentValue
from tests.support.memory import MemoryEngine

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bpmn"


HARNESSES = ["memory", pytest.param("kafka", marks=pytest.mark.kafka)]


def make_harness(request: pytest.FixtureRequest, home: Path, partitions: int) -> Any:
    """The engine on the harness `request.param` names ("memory" or "kafka")."""
    if request.param == "kafka":
        from tests.support.kafka_engine import KafkaEngine

        bootstrap = request.getfixturevalue("kafka_bootstrap")
        return KafkaEngine(build_engine(), home, bootstrap, partitions=partitions)
    return MemoryEngine(build_engine(), home, partitions=partitions)


@pytest.fixture(params=HARNESSES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    harness = make_harness(request, tmp_path, partitions=1)
    for name in ("one-task.bpmn", "order-process.bpmn"):
        value = DeploymentValue(
            resources=(DeploymentResource(name, (FIXTURES / name).read_bytes()),)
        )
        harness.send(0, command(DeploymentIntent.CREATE, value))
    harness.run()
    yield harness
    harness.assert_replay_matches(tmp_path)  # every scenario: replay rebuilds the same state
    harness.close()

"""The engine of the engine-core scenarios: one partition on the in-memory log, with the
fixture processes deployed; each scenario ends by checking that replay rebuilds its state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.processing.builtin import build_engine
from engine.protocol.intents import (
    DeploymentIntent,
)
from engine.protocol.records import command
from engine.protocol.values import (
    DeploymentResource,
    DeploymentValue,
)
from tests.support.memory import MemoryEngine

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bpmn"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[MemoryEngine]:
    memory = MemoryEngine(build_engine(), tmp_path, partitions=1)
    for name in ("one-task.bpmn", "order-process.bpmn"):
        value = DeploymentValue(
            resources=(DeploymentResource(name, (FIXTURES / name).read_bytes()),)
        )
        memory.send(0, command(DeploymentIntent.CREATE, value))
    memory.run()
    yield memory
    memory.assert_replay_matches(tmp_path)  # every scenario: replay rebuilds the same state
    memory.close()

"""The engine of the scenarios, on two harnesses: the in-memory log (fast, for the engine
core) and the real broker (the processing and replay state machines reading and writing real
topics with transactions). Each has one partition with the fixture processes deployed, and each
scenario ends by checking that replay rebuilds the same state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from partita.protocol.intents import DeploymentIntent
from partita.protocol.records import command
from partita.protocol.values import DeploymentResource, DeploymentValue
from tests.support.harnesses import HARNESSES, make_harness
from tests.support.paths import BPMN_FIXTURES


@pytest.fixture(params=HARNESSES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    harness = make_harness(request, tmp_path, partitions=1)
    for name in ("one-task.bpmn", "order-process.bpmn"):
        value = DeploymentValue(
            resources=(DeploymentResource(name, (BPMN_FIXTURES / name).read_bytes()),)
        )
        harness.send(0, command(DeploymentIntent.CREATE, value))
    harness.run()
    yield harness
    harness.assert_replay_matches(tmp_path)  # every scenario: replay rebuilds the same state
    harness.close()

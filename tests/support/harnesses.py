"""The engine harnesses a test runs on: the in-memory log (fast, for the engine core) and the
real broker (`tests.support.kafka_engine`), chosen by a fixture's `request.param`; a fixture with
`params=HARNESSES` runs its tests on both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from partita.processing.builtin import build_engine
from tests.support.memory import MemoryEngine

HARNESSES = ["memory", pytest.param("kafka", marks=pytest.mark.kafka)]


def make_harness(request: pytest.FixtureRequest, home: Path, partitions: int) -> Any:
    """The engine on the harness `request.param` names ("memory" or "kafka")."""
    if request.param == "kafka":
        from tests.support.kafka_engine import KafkaEngine

        bootstrap = request.getfixturevalue("kafka_bootstrap")
        return KafkaEngine(build_engine(), home, bootstrap, partitions=partitions)
    return MemoryEngine(build_engine(), home, partitions=partitions)

"""Fixtures shared by more than one integration test module: the worker under a hostile
producer's attack (one per module: tests/integration/test_hostile_*.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.hostile import Attack, attacked_worker


@pytest.fixture(scope="module")
def attack(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Attack]:
    """The module's engine worker under attack; at the module's end it restarts warm and cold
    and replays to the same state (`attacked_worker`)."""
    with attacked_worker(kafka_bootstrap, tmp_path_factory.mktemp("hostile")) as attacked:
        yield attacked

"""A worker that is stopping opens no partition a late rebalance hands it: opening one would
replay it and then ask Kafka for committed offsets from inside `consumer.close()`, which
cannot answer (the close then timed out after 30 s and the worker exited with an error)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from engine.config import Config
from engine.processing.builtin import build_engine
from engine.stream.worker import Worker


class _RefusingConsumer:
    """Fails the test on any call: a stopping worker must not touch the consumer."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the stopping worker called consumer.{name}")


def test_a_stopping_worker_opens_no_partition_it_is_assigned(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    worker = Worker(Config(home=tmp_path, namespace="stop"), build_engine())
    worker.stopping.set()
    with caplog.at_level(logging.INFO, logger="partita.worker"):
        worker._on_assign(_RefusingConsumer(), [TopicPartition("stop.log", 0)])  # type: ignore[arg-type]
    assert worker.tasks == {}
    assert not any((tmp_path / "state").rglob("*")), "no store was opened"
    assert "not opening partitions [0]: stopping" in caplog.text

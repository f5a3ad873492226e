"""A worker that is stopping (or leaving the group to join again) opens no partition a late
rebalance hands it: opening one would replay it and then ask Kafka for committed offsets from
inside `consumer.close()`, which cannot answer (the close then timed out after 30 s and the
worker exited with an error)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, TopicPartition

from partita.config import Config
from partita.log.clients import close_consumer
from partita.processing.builtin import build_engine
from partita.stream.worker import Worker


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


def test_a_member_leaving_the_group_after_a_failure_opens_no_partition(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A member that failed (e.g. fenced) closes its consumer to join again; a rebalance the
    close runs must not open the partitions it is handed either."""
    worker = Worker(Config(home=tmp_path, namespace="stop"), build_engine())
    worker._leaving = True
    with caplog.at_level(logging.INFO, logger="partita.worker"):
        worker._on_assign(_RefusingConsumer(), [TopicPartition("stop.log", 2)])  # type: ignore[arg-type]
    assert worker.tasks == {}
    assert not any((tmp_path / "state").rglob("*")), "no store was opened"
    assert "not opening partitions [2]: leaving the group" in caplog.text


class _TimingOutConsumer:
    def close(self) -> None:  # what confluent-kafka raises: a bare KafkaError
        raise KafkaError(  # type: ignore[misc]
            KafkaError._TIMED_OUT, "Failed to get committed offsets: Local: Timed out"
        )


def test_a_consumer_close_that_fails_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Raised, the close's error hid the error the member was leaving for and ended a worker
    that should have joined the group again."""
    with caplog.at_level(logging.WARNING, logger="partita.kafka"):
        close_consumer(_TimingOutConsumer())  # type: ignore[arg-type]
    assert (
        "consumer close: Failed to get committed offsets: Local: Timed out; the group"
        " reassigns this member's partitions after its session timeout"
    ) in caplog.text

"""Messages on the real broker with real workers: instances on one partition, correlation keys
hashing to others, the worker owning them killed (-9) in the middle of publishing; every
instance still takes its message exactly once. And `partita publish` from the CLI."""

from __future__ import annotations

import json
import signal
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from partita.cli import main
from partita.client import Client
from partita.config import Config
from partita.protocol.enums import RecordType
from partita.protocol.intents import MessageIntent, MessageSubscriptionIntent, VariableIntent
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.routing import partition_for_correlation_key
from tests.support.paths import BPMN_FIXTURES
from tests.support.worker_processes import (
    BUILTIN_ENGINE,
    WorkerProcess,
    create_topics,
    read_log,
    wait_until,
)

pytestmark = pytest.mark.kafka

INSTANCES = 24


def _config(bootstrap: str, home: Path) -> Config:
    config = Config(
        bootstrap_servers=bootstrap, namespace=f"m{uuid.uuid4().hex[:8]}", home=home, partitions=3
    )
    create_topics(config)
    return config


def _completed(config: Config, element: str) -> Counter[int]:
    """How often `element` completed, per process instance, over every partition."""
    counts: Counter[int] = Counter()
    for records in read_log(config).partitions.values():
        for r in records:
            if (
                r.record_type is RecordType.EVENT
                and r.intent is Instance.ELEMENT_COMPLETED
                and r.value.element_id == element
            ):
                counts[r.value.process_instance_key] += 1
    return counts


def test_correlation_across_partitions_survives_killing_a_worker(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    first = WorkerProcess(config, tmp_path / "a", "a", engine=BUILTIN_ENGINE).start()
    second = WorkerProcess(config, tmp_path / "b", "b", engine=BUILTIN_ENGINE).start()
    with Client(config, timeout=90) as client:
        client.deploy(BPMN_FIXTURES / "message-catch.bpmn")
        order_ids = [f"order-{i}" for i in range(INSTANCES)]
        instances = {
            order: client.create_instance("wait-payment", {"orderId": order}).key
            for order in order_ids
        }
        spread = {
            (instance >> 51, partition_for_correlation_key(order, 3))
            for order, instance in instances.items()
        }
        assert any(own != 1 + message for own, message in spread)  # crossing partitions
        wait_until(
            lambda: (
                sum(
                    r.intent is MessageSubscriptionIntent.CREATED
                    for records in read_log(config).partitions.values()
                    for r in records
                )
                >= INSTANCES
            ),
            60,
            "every subscription to open",
        )
        for n, order in enumerate(order_ids):
            client.publish_message("payment-received", order, {"paidAt": n}, await_result=False)
            if n == INSTANCES // 2:
                first.signal(signal.SIGKILL)  # mid-way: its partitions move to `second`
                first.process.wait(10)  # type: ignore[union-attr]
        time.sleep(1)
        first = WorkerProcess(config, tmp_path / "a", "a", engine=BUILTIN_ENGINE).start()
        wait_until(
            lambda: len(_completed(config, "paid")) == INSTANCES,
            90,
            "every instance to take its payment",
            second.tail,
        )
        for order in order_ids:
            client.publish_message("order-confirmed", order, {"confirmedBy": "ops"})
    wait_until(
        lambda: len(_completed(config, "wait-payment")) == INSTANCES,
        90,
        "every instance to complete",
        second.tail,
    )
    assert set(_completed(config, "paid").values()) == {1}  # exactly once each
    assert set(_completed(config, "wait-payment").values()) == {1}
    assert set(_completed(config, "wait-payment")) == set(instances.values())
    assert first.stop() == 0 and second.stop() == 0
    survivor = WorkerProcess(config, tmp_path / "a", "a", engine=BUILTIN_ENGINE).start()
    with Client(config, timeout=90) as client:  # the survivor owns every partition again
        client.publish_message("nobody-waits", "x")
    assert survivor.stop() == 0
    verify = survivor.verify_replay()
    assert verify.returncode == 0 and verify.stdout.count(": equal") == 3, verify.stdout


def test_publish_from_the_cli(
    kafka_bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    worker = WorkerProcess(config, tmp_path, engine=BUILTIN_ENGINE).start()
    flags = [
        "--bootstrap-servers",
        kafka_bootstrap,
        "--namespace",
        config.namespace,
        "--timeout",
        "90",
    ]
    try:
        assert main(["deploy", str(BPMN_FIXTURES / "starts.bpmn"), *flags]) == 0
        capsys.readouterr()
        publish = ["publish", "order-placed", "--correlation-key", "c-1", "--await", *flags]
        assert main([*publish, "--vars", '{"item": "book"}', "--message-id", "m-1"]) == 0
        assert "started process instance" in capsys.readouterr().out
        assert main([*publish, "--message-id", "m-1"]) == 1
        err = capsys.readouterr().err
        assert "rejected (ALREADY_EXISTS)" in err and "message id 'm-1'" in err
        assert main([*publish, "--ttl", "PT1M"]) == 0  # c-1's instance is still active
        assert "buffered" in capsys.readouterr().out
        assert main([*publish, "--ttl", "soon"]) == 1
        assert "--ttl" in capsys.readouterr().err
    finally:
        assert worker.stop() == 0, worker.tail()
    events = [r for rs in read_log(config).partitions.values() for r in rs]
    published = [
        (r.value.message_id, r.value.time_to_live, json.loads(r.value.variables))
        for r in events
        if r.record_type is RecordType.EVENT and r.intent is MessageIntent.PUBLISHED
    ]
    # the first started an instance with its variables; the duplicate id was never published;
    # the last is buffered for a minute
    assert published[0][0] == "m-1" and published[0][2] == {"item": "book"}
    assert [(mid, ttl) for mid, ttl, _ in published[1:]] == [("", 60_000)], published
    started = [r for r in events if r.intent is VariableIntent.CREATED and r.value.name == "item"]
    assert [json.loads(r.value.value) for r in started] == ["book"]


def test_a_timer_survives_its_worker_and_fires_on_a_new_machine(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = _config(kafka_bootstrap, tmp_path)
    first = WorkerProcess(config, tmp_path / "a", "a", engine=BUILTIN_ENGINE).start()
    with Client(config, timeout=90) as client:
        client.deploy(BPMN_FIXTURES / "timer-catch.bpmn")
        instance = client.create_instance("sleepy", {"wait": "PT4S"}).key
    assert first.stop() == 0  # before the timer is due
    assert _completed(config, "sleepy") == Counter()
    fresh = WorkerProcess(config, tmp_path / "b", "b", engine=BUILTIN_ENGINE).start()
    wait_until(
        lambda: _completed(config, "sleepy") == Counter({instance: 1}),
        60,
        "the timer to fire after the move",
        fresh.tail,
    )
    timers = [
        r.intent.name
        for records in read_log(config).partitions.values()
        for r in records
        if r.value_type.name == "TIMER" and r.record_type is RecordType.EVENT
    ]
    assert timers == ["CREATED", "TRIGGERED"]
    assert fresh.stop() == 0
    verify = fresh.verify_replay()
    assert verify.returncode == 0 and verify.stdout.count(": equal") == 3, verify.stdout

"""The hop-by-hop breakdown `partita bench e2e` prints for its one-task latency phase, read back
from the records' timestamps: every instance created in the window is found on its partition,
and its hops add up to no more than its time from create to the job's completion."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.bench import hops
from partita.bench.e2e import WORKLOADS
from partita.client import Client, JobWorker
from partita.config import Config
from partita.protocol.enums import RecordType
from partita.protocol.intents import ProcessInstanceCreationIntent
from partita.protocol.values import ProcessInstanceCreationValue
from tests.support.worker_processes import engine_namespace

pytestmark = pytest.mark.kafka

INSTANCES = 30


@pytest.fixture
def config(kafka_bootstrap: str, tmp_path: Path) -> Iterator[Config]:
    with engine_namespace(kafka_bootstrap, tmp_path, "hops") as config:
        yield config


def test_every_instance_of_the_window_is_broken_into_its_hops(config: Config) -> None:
    worker = JobWorker(config, "hops", client=Client(config, timeout=60))
    worker.task("bench.task")(lambda: {"done": True})
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        assert worker.ready.wait(60)
        with Client(config, timeout=60) as client:
            client.deploy(WORKLOADS["one-task"].bpmn)
            client.result(_create(client), 60)  # before the window: not counted
            since_ms = int(time.time() * 1000) + 1
            time.sleep(0.01)
            results = [client.result(c, 60) for c in [_create(client) for _ in range(INSTANCES)]]
    finally:
        worker.stop()
        thread.join(30)
    assert all(r.record_type is RecordType.EVENT for r in results)
    found = [hops.engine_hops(config, since_ms, p) for p in range(config.partitions)]
    assert sum(f["instances"] for f in found) == INSTANCES
    for figures in (f for f in found if f["instances"]):
        parts = sum(figures[hop]["mean"] for hop in ("create_pickup", "job", "completion_pickup"))
        assert 0 <= parts <= figures["create_to_completed"]["mean"] + 0.2, figures  # rounding
        assert all(figures[hop]["p50"] >= 0 for hop in hops.HOPS), figures


def _create(client: Client) -> bytes:
    correlation = client.submit(
        ProcessInstanceCreationIntent.CREATE_WITH_AWAITING_RESULT,
        ProcessInstanceCreationValue(bpmn_process_id="bench-one-task", variables=json.dumps({})),
    )
    client.flush()
    return correlation

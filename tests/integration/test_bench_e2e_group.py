"""`partita bench e2e` loads the engine only once its group is stable with every worker it
started sharing every partition: a partition that moves while instances await their results
leaves their creators waiting out a timeout (awaited results live in the owner's memory), and
the 2x2 run of `--scaling` measured 23 instances/s of such waiting instead of 1,150."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from partita.bench.e2e import wait_for_stable_group
from partita.config import Config
from partita.errors import PartitaError
from tests.support.worker_processes import WorkerProcess, create_topics

pytestmark = pytest.mark.kafka


def test_the_bench_waits_until_every_worker_owns_a_share_of_the_partitions(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = Config(
        bootstrap_servers=kafka_bootstrap,
        namespace=f"g{uuid.uuid4().hex[:8]}",
        home=tmp_path,
        partitions=2,
    )
    create_topics(config)
    said: list[str] = []
    first = WorkerProcess(config, tmp_path / "a", "a").start()
    second: WorkerProcess | None = None
    try:
        wait_for_stable_group(config, 1, said.append, timeout=60)
        with pytest.raises(PartitaError) as raised:  # one member cannot be two
            wait_for_stable_group(config, 2, said.append, timeout=3)
        assert "did not settle within 3 s: STABLE, 1 member(s), partitions [0, 1]" in str(
            raised.value
        )
        second = WorkerProcess(config, tmp_path / "b", "b").start()
        started = time.monotonic()
        wait_for_stable_group(config, 2, said.append, timeout=90)
        assert time.monotonic() - started > 0.5, "returned before the second worker joined"
        assert said == [
            "waiting for 1 engine worker(s) to share 2 partition(s)...",
            "waiting for 2 engine worker(s) to share 2 partition(s)...",
            "waiting for 2 engine worker(s) to share 2 partition(s)...",
        ]
    finally:
        for worker in (first, second):
            if worker is not None:
                assert worker.stop() == 0, worker.tail()

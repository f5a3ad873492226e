"""`partita up` on an existing cluster (topics, then the demo) against the real broker: every
instance completes, its jobs are done by a job-worker process of their own, the summary says
what the latency includes, and no process of the demo outlives it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from partita import demo
from partita.cli import main

pytestmark = pytest.mark.kafka

INSTANCES = 50


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_demo_completes_every_instance_with_its_jobs_done_in_another_process(
    kafka_bootstrap: str, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            *("up", "--bootstrap-servers", kafka_bootstrap, "--namespace", namespace),
            *("--partitions", "1", "--home", str(tmp_path)),
            *("--instances", str(INSTANCES), "--rate", "50"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    result = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    assert (result["completed"], result["rejected"], result["unanswered"]) == (INSTANCES, 0, 0)
    reviewed = sum(order["total"] > demo.REVIEWED_ABOVE for order in demo.orders(INSTANCES))
    assert 0 < reviewed < INSTANCES
    assert result["jobs_completed"] == INSTANCES + reviewed, out
    one, two = result["one_job"], result["two_jobs"]
    assert (one["instances"], two["instances"]) == (INSTANCES - reviewed, reviewed), out
    assert 0 < one["latency_ms_p50"] <= one["latency_ms_p99"] <= result["latency_ms_max"], out
    assert 0 < two["latency_ms_p50"] <= two["latency_ms_p99"] <= result["latency_ms_max"], out
    assert (
        f"p50 {one['latency_ms_p50']:g}, p99 {one['latency_ms_p99']:g} for the"
        f" {INSTANCES - reviewed} orders with one job (reserve-stock), p50"
        f" {two['latency_ms_p50']:g}, p99 {two['latency_ms_p99']:g} for the {reviewed} orders"
        " with two (and review-order)"
    ) in out, out

    job_worker = result["job_worker_pid"]
    assert job_worker not in {os.getpid(), result["engine_worker_pid"]}
    summary = " ".join(out.split())
    assert (
        "Latency from sending each create command to taking its result reply in this process,"
        f" through the engine worker process (pid {result['engine_worker_pid']}), the one or two"
        f" jobs pushed to and done by the job-worker process (pid {job_worker}), and the reply,"
        " timed once one untimed instance per log partition has completed; the engine worker,"
        " the job worker, this load generator and the Kafka broker share"
        f" this machine's {os.cpu_count()} cores."
    ) in summary, out
    assert not _running(job_worker) and not _running(result["engine_worker_pid"])

"""pyzeebe 4.7.0 (PyPI, unchanged) against `partita gateway` on the real broker.

The client runs in a process of its own (its stubs and the gateway's cannot share one): it reads
the topology, deploys three processes, runs a task worker, creates an instance and awaits its
result, publishes the message an instance waits for, and works a task that always fails. The
test checks what the client printed and what the log holds: the incident after the failing
job's retries, with pyzeebe's message.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from partita.config import Config
from partita.protocol.enums import ValueType
from partita.protocol.intents import (
    IncidentIntent,
    JobBatchIntent,
    JobIntent,
    ProcessInstanceIntent,
)
from tests.support.gateway import RunningGateway, job_takers
from tests.support.paths import BPMN_FIXTURES, ROOT
from tests.support.worker_processes import read_log, wait_until

pytestmark = pytest.mark.kafka

JOURNEY = ROOT / "tests" / "interop" / "pyzeebe" / "journey.py"


def test_pyzeebe_journey(engine: Config, gateway: RunningGateway) -> None:
    done = subprocess.run(
        [sys.executable, str(JOURNEY), gateway.grpc, str(BPMN_FIXTURES / "gateway")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr + gateway.log.read_text()
    steps = {s["step"]: s for s in map(json.loads, done.stdout.splitlines())}

    assert steps["topology"] == {
        "step": "topology",
        "brokers": 1,
        "partitions": engine.partitions,
        "version": "8.8.0",
    }
    assert steps["deploy"]["processes"] == ["gw-double", "gw-fails", "gw-streamed", "gw-wait"]
    assert steps["decision"] == {
        "step": "decision",
        "kinds": ["DecisionMetadata", "DecisionRequirementsMetadata"],
        "output": {"level": "gold", "rate": 0.1},  # pyzeebe parses the JSON
        "evaluated": ["discount"],
        "failure": "",
    }
    assert steps["deploy-form"]["kinds"] == ["FormMetadata", "ProcessMetadata"]
    assert steps["deploy-form"]["forms"] == [["claim-form", 1]]
    assert steps["streamed"]["variables"] == {"amount": 2}
    assert steps["run-with-result"]["variables"] == {"amount": 42, "by": "journey-worker"}
    assert steps["message"]["variables"] == {"orderId": "o-7", "paidBy": "card"}
    assert steps["message"]["key"] > 0
    assert {"origin": "pyzeebe", "result": 42, "audited": True, "closed": True}.items() <= steps[
        "listeners"
    ]["variables"].items()
    assert "prepared" not in steps["listeners"]["variables"]  # local to its task
    assert steps["compensation"]["variables"] == {
        "failed": True,
        "refunded": True,
        "cancelled": True,
    }  # both handlers ran before the compensation end event ended the instance
    assert steps["inclusive"]["variables"] == {"gift": True, "express": True}
    assert steps["links"]["variables"]["rounds"] == 3  # the link went round three times
    assert {"score": 7, "approved": True, "signedOff": "pyzeebe", "total": 2}.items() <= steps[
        "job-elements"
    ]["variables"].items()
    escalated = steps["escalations"]["key"]
    wait_until(
        lambda: any(
            r.value_type.name == "ESCALATION"
            and r.intent.name == "ESCALATED"
            and r.value.process_instance_key == escalated  # type: ignore[union-attr]
            for records in read_log(engine).partitions.values()
            for r in records
        ),
        30,
        "the escalation caught",
    )

    failing = steps["failing"]["key"]
    signalled = steps["signal"]["instance"]
    assert steps["signal"]["key"] > 0
    wait_until(
        lambda: any(
            r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
            and r.value.element_id == "wait-go"  # type: ignore[union-attr]
            and r.value.process_instance_key == signalled  # type: ignore[union-attr]
            for records in read_log(engine).partitions.values()
            for r in records
        ),
        30,
        "the signalled instance past its signal catch event",
    )

    def incident() -> list[object]:
        log = read_log(engine)
        return [
            r
            for records in log.partitions.values()
            for r in records
            if r.intent is IncidentIntent.CREATED and r.value.process_instance_key == failing  # type: ignore[union-attr]
        ]

    wait_until(lambda: bool(incident()), 30, "the failing job's incident")
    log = read_log(engine)
    records = [r for rs in log.partitions.values() for r in rs]
    fails = [
        r
        for r in records
        if r.intent is JobIntent.FAILED and r.value.process_instance_key == failing  # type: ignore[union-attr]
    ]
    # two attempts (retries="2"), each failed by pyzeebe with the task's exception
    assert [f.value.retries for f in fails] == [1, 0]  # type: ignore[union-attr]
    assert all("cannot handle amount 5" in f.value.error_message for f in fails)  # type: ignore[union-attr]
    # the worker named itself, per request: the engine activated the jobs for it
    activated = [
        r
        for r in records
        if r.intent is JobBatchIntent.ACTIVATED and r.value.jobs  # type: ignore[union-attr]
    ]
    # A job reaches a worker one of two ways: activated for it by ActivateJobs (in its name),
    # or pushed by the engine to the gateway (as `partita.push`, 5-minute deadline) and handed
    # to its stream or parked long poll. A pushed job not answered within a second is made the
    # worker's with JOB UPDATE_TIMEOUT (its name, pyzeebe's 10 s less the second): the
    # streamed task takes 1.5 s.
    takers = job_takers(records)
    expected = {"gw-double": "journey-worker", "gw-boom": "journey-worker"}
    for a in activated:
        job_type = a.value.type  # type: ignore[union-attr]
        for key in a.value.job_keys:  # type: ignore[union-attr]
            if job_type in expected:
                assert takers[key] in (expected[job_type], "partita.push"), (job_type, key)
    # the streamed job: pushed to the stream (then, running 1.5 s, made the streamer's with
    # pyzeebe's 10 s less the second), or taken by the streamer's own polling beside it
    (streamed,) = [a for a in activated if a.value.type == "gw-streamed"]  # type: ignore[union-attr]
    (key,) = streamed.value.job_keys  # type: ignore[union-attr]
    restamped = [r for r in records if r.intent is JobIntent.UPDATE_TIMEOUT and r.key == key]
    if streamed.value.worker == "partita.push":  # type: ignore[union-attr]
        assert [(r.value.worker, r.value.timeout) for r in restamped] == [  # type: ignore[union-attr]
            ("journey-streamer", 9_000)
        ]
    else:
        assert streamed.value.worker == "journey-streamer" and not restamped  # type: ignore[union-attr]
    assert all(
        r.value_type is not ValueType.JOB or r.value.tenant_id == "<default>" for r in records
    )  # type: ignore[union-attr]


def test_an_idle_worker_writes_nothing(
    engine: Config, gateway: RunningGateway, tmp_path: Path
) -> None:
    """pyzeebe's worker long-polls a type no process has: after each partition was asked once,
    its requests park in the gateway and the log gains no record."""
    script = tmp_path / "idle.py"
    script.write_text(
        "import asyncio, sys\n"
        "from pyzeebe import ZeebeWorker, create_insecure_channel\n"
        "async def main():\n"
        "    worker = ZeebeWorker(create_insecure_channel(grpc_address=sys.argv[1]))\n"
        "    @worker.task(task_type='nobody-creates-this')\n"
        "    async def never() -> dict: return {}\n"
        "    working = asyncio.create_task(worker.work())\n"
        "    await asyncio.sleep(float(sys.argv[2]))\n"
        "    await worker.stop(); await working\n"
        "asyncio.run(main())\n"
    )
    first = subprocess.run(
        [sys.executable, str(script), gateway.grpc, "3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert first.returncode == 0, first.stderr
    before = sum(len(r) for r in read_log(engine).partitions.values())
    idle = subprocess.run(
        [sys.executable, str(script), gateway.grpc, "12"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert idle.returncode == 0, idle.stderr
    after = sum(len(r) for r in read_log(engine).partitions.values())
    assert after == before, f"an idle worker wrote {after - before} records in 12 s"

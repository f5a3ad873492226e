"""Zeebe's Java client (io.camunda:zeebe-client-java 8.6.15 from Maven Central, unchanged)
against `partita gateway` over plaintext gRPC on the real broker.

The program (tests/interop/zeebe_java, built once with Maven) reads the topology, deploys two
processes by their paths, creates an instance and awaits its result while a polling job worker
doubles the amount, does the same with a worker that has job streaming enabled, publishes the
message an instance waits for, cancels an instance and has a command for an unknown process
rejected. The test checks what it printed and what the log holds.

Job streaming: the streaming worker's job is pushed by the engine (the gateway joined the
type's workers for the open stream) and handed to the stream, so it is activated by the push,
not by an ActivateJobs batch. Closing such a worker and then its client can hang in the client
(JobStreamerImpl.open returns without releasing its lock when a scheduled reopen finds the worker
closed): the program closes the streaming worker through the client's close only.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from partita.config import Config
from partita.protocol.enums import BpmnElementType, RecordType
from partita.protocol.intents import (
    JobIntent,
    MessageIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceIntent,
)
from partita.protocol.records import Record
from tests.support.example_programs import build
from tests.support.gateway import RunningGateway, job_takers
from tests.support.paths import BPMN_FIXTURES, ROOT
from tests.support.worker_processes import read_log

pytestmark = [pytest.mark.kafka, pytest.mark.interop]

PROJECT = ROOT / "tests" / "interop" / "zeebe_java"
BPMN = BPMN_FIXTURES / "gateway"


@pytest.fixture(scope="module")
def journey() -> list[str]:
    """The program built with Maven; the command that runs it."""
    build(["mvn", "-B", "-q", "package", "-DskipTests"], PROJECT, "the Zeebe Java client program")
    return ["java", "-jar", str(PROJECT / "target" / "zeebe-journey.jar")]


def test_zeebe_java_client_journey(
    journey: list[str], engine: Config, gateway: RunningGateway
) -> None:
    done = subprocess.run(
        [*journey, gateway.grpc, str(BPMN / "double.bpmn"), str(BPMN / "wait.bpmn")],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    output = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}\ngateway:\n{gateway.log.read_text()}"
    assert done.returncode == 0, output
    steps = {s["step"]: s for s in map(json.loads, done.stdout.splitlines())}

    topology = steps["topology"]
    assert topology["brokers"] >= 1
    assert (topology["partitions"], topology["version"]) == (engine.partitions, "8.8.0")
    assert steps["deploy"]["processes"] == ["gw-double", "gw-wait"]
    # the client sends the path it was given; the resource is named by its file name
    assert steps["deploy"]["resources"] == ["double.bpmn", "wait.bpmn"]
    assert steps["create-with-result"]["variables"] == {"amount": 42, "by": "java-poller"}
    assert steps["streaming-worker"]["variables"] == {"amount": 42, "by": "java-streamer"}
    assert steps["message"]["variables"] == {"orderId": "o-7", "paidBy": "card"}
    assert steps["message"]["key"] > 0
    assert steps["rejection"]["status"] == "NOT_FOUND", output
    assert steps["rejection"]["message"].startswith(
        "Command 'CREATE' rejected with code 'NOT_FOUND'"
    ), output

    # streaming enabled: the stream was served, never refused
    assert "Failed to stream jobs" not in done.stderr, done.stderr

    records = [r for rs in read_log(engine).partitions.values() for r in rs]
    # each job taken by its worker: activated for it, or pushed (to a parked poll, or to the
    # stream once the engine saw the gateway among the type's workers; tests/gateway/
    # test_streams.py holds that path to account without a poller beside it)
    takers = sorted(job_takers(records).values())
    assert len(takers) == 2 and set(takers) <= {"java-poller", "java-streamer", "partita.push"}
    completed = [r for r in records if r.intent is JobIntent.COMPLETED]
    assert len(completed) == 2
    assert all(json.loads(r.value.variables)["amount"] == 42 for r in completed)  # type: ignore[union-attr]

    def ended(instance: int, intent: ProcessInstanceIntent) -> bool:
        return any(
            r.intent is intent
            and r.key == instance
            and r.value.bpmn_element_type is BpmnElementType.PROCESS  # type: ignore[union-attr]
            for r in records
        )

    assert ended(steps["message"]["instance"], ProcessInstanceIntent.ELEMENT_COMPLETED)
    assert ended(steps["cancel"]["instance"], ProcessInstanceIntent.ELEMENT_TERMINATED)
    assert [r.key for r in records if r.intent is MessageIntent.PUBLISHED] == [
        steps["message"]["key"]
    ]

    rejected: list[Record] = [r for r in records if r.record_type is RecordType.COMMAND_REJECTION]
    assert [(r.intent, r.value.bpmn_process_id) for r in rejected] == [  # type: ignore[union-attr]
        (ProcessInstanceCreationIntent.CREATE, "gw-nobody")
    ]

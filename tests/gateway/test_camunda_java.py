"""Camunda's Java client (io.camunda:camunda-client-java 8.8.14 from Maven Central, unchanged)
against `partita gateway` with the client's defaults: `preferRestOverGrpc` true, so every
command goes over the REST API (`/v2`) and only job streaming, off by default, would use gRPC;
plaintext, no credentials.

The program (tests/interop/camunda_java, built once with Maven) reads the topology, deploys two
processes by their paths, creates an instance and awaits its result while a job worker (REST job
activation, long polling) doubles the amount, publishes the message an instance waits for,
correlates one to an instance that waits, cancels an instance and has a command for an unknown
process rejected with a problem document. It notes every request through the builder's hooks
(an HTTP chain handler, a gRPC interceptor) and prints them last: the test checks that all of
them were REST, and what the log holds.
"""

from __future__ import annotations

import json
import os
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

PROJECT = ROOT / "tests" / "interop" / "camunda_java"
BPMN = BPMN_FIXTURES / "gateway"


@pytest.fixture(scope="module")
def journey() -> list[str]:
    """The program built with Maven; the command that runs it."""
    build(["mvn", "-B", "-q", "package", "-DskipTests"], PROJECT, "the Camunda Java client program")
    return ["java", "-jar", str(PROJECT / "target" / "camunda-journey.jar")]


def test_camunda_java_client_journey(
    journey: list[str], engine: Config, gateway: RunningGateway
) -> None:
    # the builder applies CAMUNDA_* and ZEEBE_* variables over its defaults: none of the caller's
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAMUNDA_", "ZEEBE_"))}
    done = subprocess.run(
        [
            *journey,
            gateway.rest,
            f"http://{gateway.grpc}",
            str(BPMN / "double.bpmn"),
            str(BPMN / "wait.bpmn"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    output = f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}\ngateway:\n{gateway.log.read_text()}"
    assert done.returncode == 0, output
    steps = {s["step"]: s for s in map(json.loads, done.stdout.splitlines())}

    assert steps["configuration"] == {
        "step": "configuration",
        "preferRestOverGrpc": True,
        "streamEnabled": False,
    }
    topology = steps["topology"]
    assert topology["brokers"] >= 1
    assert (topology["partitions"], topology["version"]) == (engine.partitions, "8.8.0")
    assert steps["deploy"]["key"] > 0
    assert steps["deploy"]["processes"] == ["gw-double", "gw-wait"]
    # the client sends the path it was given; the resource is named by its file name
    assert steps["deploy"]["resources"] == ["double.bpmn", "wait.bpmn"]
    assert steps["create-with-result"]["variables"] == {"amount": 42, "by": "java-rest-worker"}
    assert steps["message"]["variables"] == {"orderId": "o-7", "paidBy": "card"}
    assert steps["message"]["key"] > 0
    correlated = steps["correlate"]
    assert correlated["instance"] == correlated["created"]
    assert correlated["key"] > 0
    rejection = steps["rejection"]
    assert (rejection["code"], rejection["status"], rejection["title"]) == (
        404,
        404,
        "NOT_FOUND",
    ), output
    assert rejection["detail"].startswith("Command 'CREATE' rejected with code 'NOT_FOUND'"), output

    # every command went over REST, the jobs by long-polling activation; gRPC was never called
    assert steps["requests"] == {
        "step": "requests",
        "rest": [
            "GET /v2/topology",
            "POST /v2/deployments",
            "POST /v2/jobs/activation",
            "POST /v2/jobs/{key}/completion",
            "POST /v2/messages/correlation",
            "POST /v2/messages/publication",
            "POST /v2/process-instances",
            "POST /v2/process-instances/{key}/cancellation",
        ],
        "grpc": [],
    }, output

    records = [r for rs in read_log(engine).partitions.values() for r in rs]
    # one job, taken by the client's worker (by ActivateJobs, or pushed to its parked poll)
    takers = list(job_takers(records).values())
    assert takers in (["java-rest-worker"], ["partita.push"]), output
    completed = [r for r in records if r.intent is JobIntent.COMPLETED]
    assert [json.loads(r.value.variables) for r in completed] == [  # type: ignore[union-attr]
        {"amount": 42, "by": "java-rest-worker"}
    ]

    def ended(instance: int, intent: ProcessInstanceIntent) -> bool:
        return any(
            r.intent is intent
            and r.key == instance
            and r.value.bpmn_element_type is BpmnElementType.PROCESS  # type: ignore[union-attr]
            for r in records
        )

    assert ended(steps["create-with-result"]["instance"], ProcessInstanceIntent.ELEMENT_COMPLETED)
    assert ended(steps["message"]["instance"], ProcessInstanceIntent.ELEMENT_COMPLETED)
    assert ended(correlated["instance"], ProcessInstanceIntent.ELEMENT_COMPLETED)
    assert ended(steps["cancel"]["instance"], ProcessInstanceIntent.ELEMENT_TERMINATED)
    published = {r.key for r in records if r.intent is MessageIntent.PUBLISHED}
    assert {steps["message"]["key"], correlated["key"]} <= published

    rejected: list[Record] = [r for r in records if r.record_type is RecordType.COMMAND_REJECTION]
    assert [(r.intent, r.value.bpmn_process_id) for r in rejected] == [  # type: ignore[union-attr]
        (ProcessInstanceCreationIntent.CREATE, "gw-nobody")
    ]

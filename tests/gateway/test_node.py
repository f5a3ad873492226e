"""@camunda8/sdk 8.8.13 (npm, unchanged) against `partita gateway` on the real broker.

`tests/interop/camunda_node/journey.js`, installed from its lock file once per session, runs in
a Node process configured only by the SDK's environment variables (no auth, plaintext). Its
gRPC client reads the topology, deploys two processes, works a job type (the task's custom
header `factor`), creates an instance and awaits its result, and publishes the message an
instance waits for. Its REST clients do what Camunda Modeler's deploy and run buttons do: the
topology, a deployment and an instance, once with the 8.7-style `CamundaRestClient` and once with
the Orchestration Cluster API client. The test checks what the program printed and, on the log,
that the instances the REST clients created were worked by the gRPC worker to the end.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from partita.config import Config
from partita.protocol.enums import BpmnElementType
from partita.protocol.intents import ProcessInstanceIntent, VariableIntent
from partita.protocol.records import Record
from tests.support.example_programs import build
from tests.support.gateway import RunningGateway, job_takers
from tests.support.paths import BPMN_FIXTURES, ROOT
from tests.support.worker_processes import read_log, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.interop]

PROJECT = ROOT / "tests" / "interop" / "camunda_node"
STEPS = [
    "grpc-topology",
    "grpc-deploy-file",
    "grpc-deploy-buffer",
    "rest-topology",
    "rest-deploy",
    "rest-create",
    "oca-topology",
    "oca-deploy",
    "oca-create",
    "grpc-run-with-result",
    "grpc-message",
]


@pytest.fixture(scope="session")
def camunda_node() -> Path:
    """The SDK program's dependencies installed from its lock file."""
    build(
        ["npm", "ci", "--no-audit", "--no-fund", "--silent"], PROJECT, "the @camunda8/sdk program"
    )
    return PROJECT


def sdk_environment(gateway: RunningGateway) -> dict[str, str]:
    """The SDK's own settings for a gateway without auth or TLS (`grpc://` is plaintext), and
    nothing of the caller's Camunda or Zeebe settings."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("CAMUNDA_", "ZEEBE_"))}
    return {
        **inherited,
        "ZEEBE_GRPC_ADDRESS": f"grpc://{gateway.grpc}",
        "ZEEBE_REST_ADDRESS": gateway.rest,  # the SDK gives it the OCA client with /v2
        "CAMUNDA_REST_ADDRESS": gateway.rest,
        "CAMUNDA_AUTH_STRATEGY": "NONE",
        "CAMUNDA_OAUTH_DISABLED": "true",
        "ZEEBE_GRPC_CLIENT_RETRY": "false",  # an error answers at once instead of retrying
        "CAMUNDA_LOG_LEVEL": "error",
        "ZEEBE_CLIENT_LOG_LEVEL": "ERROR",
    }


def completed_processes(records: list[Record]) -> set[int]:
    return {
        r.value.process_instance_key  # type: ignore[union-attr]
        for r in records
        if r.intent is ProcessInstanceIntent.ELEMENT_COMPLETED
        and r.value.bpmn_element_type is BpmnElementType.PROCESS  # type: ignore[union-attr]
    }


def variables_of(records: list[Record], instance: int) -> dict[str, Any]:
    """The instance's root-scope variables as the log last wrote them."""
    out: dict[str, Any] = {}
    for r in records:
        if r.intent in (VariableIntent.CREATED, VariableIntent.UPDATED):
            value = r.value
            if value.scope_key == instance:  # type: ignore[union-attr]
                out[value.name] = json.loads(value.value)  # type: ignore[union-attr]
    return out


def test_camunda8_sdk_journey(engine: Config, gateway: RunningGateway, camunda_node: Path) -> None:
    done = subprocess.run(
        ["node", "journey.js", str(BPMN_FIXTURES / "gateway")],
        cwd=camunda_node,
        env=sdk_environment(gateway),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    output = f"{done.stdout}\n{done.stderr}\ngateway:\n{gateway.log.read_text()}"
    # the SDK logs to stdout too: the program's lines are the JSON objects with a "step"
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"step":')]
    steps = {s["step"]: s for s in map(json.loads, lines)}

    # every step answered, in order, none with an error (each one's message otherwise)
    assert list(steps) == STEPS, output
    errors = {name: step["error"] for name, step in steps.items() if "error" in step}
    assert errors == {}, output
    assert done.returncode == 0, output

    # the gRPC client
    topology = {"brokers": 1, "partitions": engine.partitions, "version": "8.8.0"}
    assert steps["grpc-topology"] == {"step": "grpc-topology", **topology}
    assert steps["grpc-deploy-file"]["processes"] == ["gw-double"]
    assert steps["grpc-deploy-buffer"]["processes"] == ["gw-wait"]
    assert steps["grpc-run-with-result"]["variables"] == {"amount": 42, "by": "node-worker"}
    message = steps["grpc-message"]
    assert message["variables"] == {"orderId": "o-7", "paidBy": "card"}
    assert int(message["key"]) > 0

    # the REST clients, as Camunda Modeler deploys and runs a diagram
    for client in ("rest", "oca"):
        assert steps[f"{client}-topology"] == {"step": f"{client}-topology", **topology}
        assert steps[f"{client}-deploy"]["processes"] == ["gw-double"]
        assert int(steps[f"{client}-deploy"]["key"]) > 0
        assert int(steps[f"{client}-create"]["key"]) > 0

    rest = int(steps["rest-create"]["key"])
    oca = int(steps["oca-create"]["key"])
    records: list[Record] = []

    def both_completed() -> bool:
        records[:] = [r for rs in read_log(engine).partitions.values() for r in rs]
        return {rest, oca} <= completed_processes(records)

    wait_until(both_completed, 30, "the instances the REST clients created to complete")
    assert variables_of(records, rest) == {"amount": 10, "by": "node-worker"}
    assert variables_of(records, oca) == {"amount": 14, "by": "node-worker"}
    assert int(steps["grpc-run-with-result"]["key"]) in completed_processes(records)
    # the SDK's worker named itself: every job was taken by it (activated for it, or pushed to
    # its parked poll and handed over in its name)
    assert set(job_takers(records).values()) <= {"node-worker", "partita.push"}

"""The Camunda 8.8 REST API of `partita gateway` on the real broker, over plain HTTP: deploys by
multipart, creates an instance with awaitCompletion while the test activates and completes its
job, publishes and correlates messages, cancels an instance, and reads the engine's refusals as
problem documents; the log shows what the engine did. The official Python SDK's tests are in
`test_camunda_python.py`.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from partita.config import Config
from partita.protocol.intents import (
    JobIntent,
    MessageSubscriptionIntent,
    ProcessInstanceIntent,
)
from tests.support.gateway import RunningGateway, process_ended, records
from tests.support.paths import BPMN_FIXTURES, ROOT
from tests.support.worker_processes import wait_until

pytestmark = pytest.mark.kafka

BPMN = BPMN_FIXTURES / "gateway"
SDK = "camunda-orchestration-sdk==10.0.1"
SDK_VENV = ROOT / ".partita" / "interop" / "camunda-orchestration-sdk-10.0.1"
JOURNEY = ROOT / "tests" / "interop" / "camunda_python" / "journey.py"
USER_TASKS = JOURNEY.with_name("user_tasks.py")

Answer = tuple[int, Any]


@pytest.fixture(scope="module")
def deployed(gateway: RunningGateway) -> dict[str, Any]:
    resources = [(name, (BPMN / name).read_bytes()) for name in ("double.bpmn", "wait.bpmn")]
    body, boundary = multipart(resources, tenant="<default>")
    headers = {
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Authorization": "",  # as the JS SDK sends it
    }
    status, body = send(gateway, "POST", "/v2/deployments", body, headers)
    assert status == 200, body
    return dict(body)


def send(
    gateway: RunningGateway,
    method: str,
    path: str,
    body: object = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """One request: the status and the parsed body (None when empty). A dict body is sent as
    JSON, bytes as they are (with the headers given)."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(gateway.rest + path, data=data, method=method)
    if isinstance(body, dict):
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, raw, kind = response.status, response.read(), response.headers["Content-Type"]
    except urllib.error.HTTPError as error:
        status, raw, kind = error.code, error.read(), error.headers["Content-Type"]
    if status >= 400:
        assert kind.startswith("application/problem+json"), (status, raw)
    return status, json.loads(raw) if raw else None


def multipart(resources: list[tuple[str, bytes]], tenant: str) -> tuple[bytes, str]:
    """A multipart/form-data deployment and its boundary, as the SDKs send one."""
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="resources"; filename="{name}"'
        f"\r\nContent-Type: application/octet-stream\r\n\r\n".encode()
        + content
        + b"\r\n"
        for name, content in resources
    ]
    tenant_part = f'--{boundary}\r\nContent-Disposition: form-data; name="tenantId"\r\n\r\n'
    parts.append(f"{tenant_part}{tenant}\r\n".encode())
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), boundary


def problem(answer: Answer, status: int, title: str, *words: str) -> None:
    code, body = answer
    assert code == status, body
    assert (body["type"], body["title"], body["status"]) == ("about:blank", title, status)
    for word in words:
        assert word in body["detail"], body["detail"]


def test_topology_and_status(engine: Config, gateway: RunningGateway) -> None:
    status, body = send(gateway, "GET", "/v2/topology")
    assert status == 200
    assert body["gatewayVersion"] == "8.8.0"
    assert body["partitionsCount"] == engine.partitions
    assert body["clusterSize"] == len(body["brokers"]) == 1
    owned = sorted(p["partitionId"] for p in body["brokers"][0]["partitions"])
    assert owned == list(range(1, engine.partitions + 1))
    assert send(gateway, "GET", "/v2/status") == (204, None)


def test_deploy_by_multipart(deployed: dict[str, Any]) -> None:
    assert deployed["tenantId"] == "<default>"
    assert deployed["deploymentKey"].isdigit()
    processes = [d["processDefinition"] for d in deployed["deployments"]]
    assert [(p["processDefinitionId"], p["resourceName"]) for p in processes] == [
        ("gw-double", "double.bpmn"),
        ("gw-wait", "wait.bpmn"),
    ]
    assert all(p["processDefinitionKey"].isdigit() for p in processes)


def test_await_completion_while_the_job_is_worked(
    engine: Config, gateway: RunningGateway, deployed: dict[str, Any]
) -> None:
    request = {
        "processDefinitionId": "gw-double",
        "variables": {"amount": 21},
        "awaitCompletion": True,
        "requestTimeout": 30_000,
    }
    with ThreadPoolExecutor(1) as pool:
        creating = pool.submit(send, gateway, "POST", "/v2/process-instances", request)
        activation = {
            "type": "gw-double",
            "worker": "rest-test",
            "timeout": 30_000,
            "maxJobsToActivate": 5,
            "requestTimeout": 10_000,
        }
        status, body = send(gateway, "POST", "/v2/jobs/activation", activation)
        assert status == 200, body
        assert len(body["jobs"]) == 1, body
        job = body["jobs"][0]
        assert job["customHeaders"] == {"factor": "2"}
        assert job["variables"] == {"amount": 21}
        assert (job["processDefinitionId"], job["elementId"], job["worker"]) == (
            "gw-double",
            "double",
            "rest-test",
        )
        assert all(
            job[k].isdigit() for k in ("jobKey", "processInstanceKey", "processDefinitionKey")
        )
        factor = int(job["customHeaders"]["factor"])
        completion = {"variables": {"amount": job["variables"]["amount"] * factor}}
        assert send(gateway, "POST", f"/v2/jobs/{job['jobKey']}/completion", completion) == (
            204,
            None,
        )
        status, created = creating.result(60)
    assert status == 200, created
    assert created["variables"] == {"amount": 42}
    assert created["processInstanceKey"] == job["processInstanceKey"]
    assert created["processDefinitionId"] == "gw-double"

    again = send(gateway, "POST", f"/v2/jobs/{job['jobKey']}/completion", completion)
    problem(again, 404, "NOT_FOUND", "Command 'COMPLETE' rejected", job["jobKey"])
    completed = [
        r
        for r in records(engine)
        if r.intent is JobIntent.COMPLETED and r.key == int(job["jobKey"])
    ]
    assert len(completed) == 1
    assert completed[0].value.worker == "rest-test"  # type: ignore[union-attr]


def test_publish_and_correlate_messages(
    engine: Config, gateway: RunningGateway, deployed: dict[str, Any]
) -> None:
    waiting = {"processDefinitionId": "gw-wait", "variables": {"orderId": "o-1"}}
    status, created = send(gateway, "POST", "/v2/process-instances", waiting)
    assert status == 200, created
    assert created["variables"] == {}
    instance = int(created["processInstanceKey"])
    wait_until(
        lambda: any(
            r.intent is MessageSubscriptionIntent.CREATED
            and r.value.process_instance_key == instance  # type: ignore[union-attr]
            for r in records(engine)
        ),
        30,
        "the instance's message subscription",
    )
    correlation = {"name": "gw-paid", "correlationKey": "o-1", "variables": {"paidBy": "card"}}
    status, body = send(gateway, "POST", "/v2/messages/correlation", correlation)
    assert status == 200, body
    assert body["processInstanceKey"] == str(instance)
    assert body["tenantId"] == "<default>" and body["messageKey"].isdigit()
    wait_until(
        lambda: process_ended(engine, instance, ProcessInstanceIntent.ELEMENT_COMPLETED),
        30,
        "the correlated instance to complete",
    )

    nobody = {"name": "gw-paid", "correlationKey": "o-nobody"}
    answer = send(gateway, "POST", "/v2/messages/correlation", nobody)
    problem(answer, 404, "NOT_FOUND", "no process instance waits for message 'gw-paid'")

    publication = {
        "name": "gw-paid",
        "correlationKey": "o-2",
        "timeToLive": 60_000,
        "variables": {"paidBy": "cash"},
    }
    status, body = send(gateway, "POST", "/v2/messages/publication", publication)
    assert status == 200, body
    assert body["tenantId"] == "<default>" and body["messageKey"].isdigit()
    later = {
        "processDefinitionId": "gw-wait",
        "variables": {"orderId": "o-2"},
        "awaitCompletion": True,
        "requestTimeout": 30_000,
    }
    status, done = send(gateway, "POST", "/v2/process-instances", later)
    assert status == 200, done
    assert done["variables"] == {"orderId": "o-2", "paidBy": "cash"}


def test_cancel_and_the_engines_refusals(
    engine: Config, gateway: RunningGateway, deployed: dict[str, Any]
) -> None:
    request = {"processDefinitionId": "gw-wait", "variables": {"orderId": "o-3"}}
    status, created = send(gateway, "POST", "/v2/process-instances", request)
    assert status == 200, created
    key = created["processInstanceKey"]
    variables = {"variables": {"note": "set over REST"}}
    assert send(gateway, "PUT", f"/v2/element-instances/{key}/variables", variables) == (
        204,
        None,
    )
    assert send(gateway, "POST", f"/v2/process-instances/{key}/cancellation") == (204, None)
    wait_until(
        lambda: process_ended(engine, int(key), ProcessInstanceIntent.ELEMENT_TERMINATED),
        30,
        "the cancelled instance to terminate",
    )
    problem(
        send(gateway, "POST", f"/v2/process-instances/{key}/cancellation"),
        404,
        "NOT_FOUND",
        "Command 'CANCEL' rejected",
    )
    unknown = {"processDefinitionId": "gw-unknown"}
    problem(
        send(gateway, "POST", "/v2/process-instances", unknown),
        404,
        "NOT_FOUND",
        "gw-unknown",
    )
    awaiting = {**request, "awaitCompletion": True, "requestTimeout": 1_000}
    problem(send(gateway, "POST", "/v2/process-instances", awaiting), 504, "DEADLINE_EXCEEDED")
    problem(
        send(gateway, "POST", f"/v2/incidents/{key}/resolution"),  # an instance's key: no incident
        404,
        "NOT_FOUND",
        "Command 'RESOLVE' rejected",
    )
    problem(
        send(gateway, "POST", f"/v2/process-instances/{key}/migration", {}),
        501,
        "UNIMPLEMENTED",
        "Migrating an instance",
    )
    problem(send(gateway, "POST", "/v2/process-instances/search", {}), 501, "UNIMPLEMENTED")
    problem(send(gateway, "GET", "/v2/nothing"), 404, "NOT_FOUND", "/v2/nothing")
    bad = send(gateway, "POST", "/v2/process-instances", b"{", {"Content-Type": "application/json"})
    problem(bad, 400, "INVALID_ARGUMENT", "is not JSON")

"""The REST API's endpoints over a fake `Operations`, through aiohttp's test client (no broker).

Each test sends what a client sends and checks what it gets back: the arguments the operation
was called with, the response's shape (keys as strings), and the problem document of every
failure (status, title, a detail naming what was wrong, the request path as instance).
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, cast

import pytest
from aiohttp import ClientSession, FormData
from aiohttp.test_utils import TestClient, TestServer
from confluent_kafka.admin import AdminClient

from partita.config import Config
from partita.gateway.auth import Authenticator, hash_password
from partita.gateway.errors import GatewayError, Status, invalid
from partita.gateway.operations import ActivatedJob, Operations
from partita.gateway.rest_api import rest_app, start_rest
from partita.gateway.rest_bodies import MAX_DEPLOYMENT_BYTES, MAX_JSON_BYTES, MAX_PARTS
from partita.gateway.topology import BrokerView, PartitionView, Topology
from partita.protocol.intents import (
    DeploymentIntent,
    MessageIntent,
    MessageStartEventSubscriptionIntent,
    MessageSubscriptionIntent,
    ProcessInstanceCreationIntent,
    ProcessInstanceResultIntent,
)
from partita.protocol.records import Record, event
from partita.protocol.values import (
    DeploymentValue,
    JobValue,
    MessageStartEventSubscriptionValue,
    MessageSubscriptionValue,
    MessageValue,
    ProcessInstanceCreationValue,
    ProcessInstanceResultValue,
    ProcessMetadata,
)

BIG = 2251799813685249
"""A key beyond 2^53: a JSON number would lose digits, its string does not."""


class FakeOperations:
    """Records each call (name, arguments) and answers as the engine would."""

    partition_count = 2

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.jobs: list[list[ActivatedJob]] = []
        self.publish_reply: Record | None = None
        self.fail_with: GatewayError | None = None

    def _called(self, operation: str, /, **arguments: Any) -> None:
        self.calls.append((operation, arguments))
        if self.fail_with is not None:
            raise self.fail_with

    async def deploy(self, resources: Sequence[tuple[str, bytes]], tenant_id: str | None) -> Record:
        self._called("deploy", resources=list(resources), tenant_id=tenant_id)
        processes = tuple(
            ProcessMetadata(
                bpmn_process_id=name.removesuffix(".bpmn"),
                version=1,
                process_definition_key=BIG + i,
                resource_name=name,
            )
            for i, (name, _) in enumerate(resources)
        )
        return event(DeploymentIntent.CREATED, DeploymentValue(processes_metadata=processes), BIG)

    async def create_instance(self, **arguments: Any) -> Record:
        self._called("create_instance", **arguments)
        common: dict[str, Any] = {
            "bpmn_process_id": arguments["process_id"] or "by-key",
            "version": 3,
            "process_definition_key": BIG + 1,
            "process_instance_key": BIG + 2,
        }
        if arguments["await_result"]:
            result = ProcessInstanceResultValue(**common, variables='{"total": 84}')
            return event(ProcessInstanceResultIntent.COMPLETED, result, BIG + 2)
        created = ProcessInstanceCreationValue(**common, variables='{"given": 1}')
        return event(ProcessInstanceCreationIntent.CREATED, created, BIG + 2)

    async def cancel_instance(self, key: int) -> Record:
        self._called("cancel_instance", key=key)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def set_variables(self, scope_key: int, variables: dict[str, Any], local: bool) -> Record:
        self._called("set_variables", scope_key=scope_key, variables=variables, local=local)
        return event(MessageIntent.PUBLISHED, MessageValue(), BIG)

    async def resolve_incident(self, key: int) -> Record:
        self._called("resolve_incident", key=key)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def publish_message(self, name: str, correlation_key: str, **arguments: Any) -> Record:
        self._called("publish_message", name=name, correlation_key=correlation_key, **arguments)
        if self.publish_reply is not None:
            return self.publish_reply
        return event(MessageIntent.PUBLISHED, MessageValue(name=name), BIG + 7)

    async def complete_job(self, key: int, variables: dict[str, Any] | None) -> Record:
        self._called("complete_job", key=key, variables=variables)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def fail_job(
        self,
        key: int,
        retries: int,
        message: str,
        backoff_ms: int,
        variables: dict[str, Any] | None = None,
    ) -> Record:
        self._called(
            "fail_job",
            key=key,
            retries=retries,
            message=message,
            backoff_ms=backoff_ms,
            variables=variables,
        )
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def throw_error(
        self, key: int, code: str, message: str, variables: dict[str, Any] | None
    ) -> Record:
        self._called("throw_error", key=key, code=code, message=message, variables=variables)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def update_job_retries(self, key: int, retries: int) -> Record:
        self._called("update_job_retries", key=key, retries=retries)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def update_job_timeout(self, key: int, timeout_ms: int) -> Record:
        self._called("update_job_timeout", key=key, timeout_ms=timeout_ms)
        return event(MessageIntent.PUBLISHED, MessageValue(), key)

    async def activate_jobs(
        self, job_type: str, **arguments: Any
    ) -> AsyncIterator[list[ActivatedJob]]:
        self._called("activate_jobs", job_type=job_type, **arguments)
        for batch in self.jobs:
            yield batch


ONE_BROKER = Topology(
    [
        BrokerView(
            0, "10.0.0.5", "member-a", [PartitionView(1, True, 0), PartitionView(2, False, 9)]
        )
    ],
    partitions_count=2,
    replication_factor=1,
)


Scenario = Callable[[TestClient[Any, Any]], Awaitable[Any]]


def run(
    fake: FakeOperations,
    scenario: Scenario,
    cluster: Topology = ONE_BROKER,
    authenticator: Authenticator | None = None,
) -> Any:
    async def main() -> Any:
        operations = cast(Operations, fake)
        app = rest_app(operations, cluster=lambda: cluster, authenticator=authenticator)
        async with TestClient(TestServer(app)) as client:
            return await scenario(client)

    return asyncio.run(main())


def exchange(
    method: str,
    path: str,
    *,
    fake: FakeOperations | None = None,
    cluster: Topology = ONE_BROKER,
    authenticator: Authenticator | None = None,
    **request: Any,
) -> tuple[int, dict[str, str], Any]:
    """One request: the status, headers and parsed body (None when empty)."""

    async def scenario(client: TestClient[Any, Any]) -> tuple[int, dict[str, str], Any]:
        response = await client.request(method, path, **request)
        text = await response.text()
        return response.status, dict(response.headers), json.loads(text) if text else None

    answer = run(fake or FakeOperations(), scenario, cluster, authenticator)
    return cast(tuple[int, dict[str, str], Any], answer)


def assert_problem(
    answer: tuple[int, dict[str, str], Any], status: int, title: str, *words: str
) -> dict[str, Any]:
    code, headers, body = answer
    assert code == status, body
    assert headers["Content-Type"].startswith("application/problem+json")
    assert body["type"] == "about:blank"
    assert body["title"] == title
    assert body["status"] == status
    for word in words:
        assert word in body["detail"], body["detail"]
    return cast(dict[str, Any], body)


# -- cluster ------------------------------------------------------------------------------------


def test_topology_describes_the_brokers_and_the_fields_newer_clients_require() -> None:
    status, _, body = exchange("GET", "/v2/topology")
    assert status == 200
    assert body == {
        "brokers": [
            {
                "nodeId": 0,
                "brokerId": "0",
                "host": "10.0.0.5",
                "port": 26501,
                "version": "8.8.0",
                "partitions": [
                    {"partitionId": 1, "role": "leader", "health": "healthy", "state": "active"},
                    {"partitionId": 2, "role": "leader", "health": "unhealthy", "state": "active"},
                ],
            }
        ],
        "clusterId": None,
        "clusterSize": 1,
        "partitionsCount": 2,
        "replicationFactor": 1,
        "gatewayVersion": "8.8.0",
        "lastCompletedChangeId": "-1",
    }


def test_status_is_204_with_a_broker_and_503_without() -> None:
    status, _, body = exchange("GET", "/v2/status")
    assert (status, body) == (204, None)
    empty = Topology([], partitions_count=2, replication_factor=1)
    answer = exchange("GET", "/v2/status", cluster=empty)
    assert_problem(answer, 503, "UNAVAILABLE", "no broker")


# -- deployments ----------------------------------------------------------------------------------


def form(*resources: tuple[str, bytes], tenant: str | None = None) -> FormData:
    """A deployment as the SDKs send it: file names as they are (aiohttp would quote them)."""
    data = FormData(quote_fields=False)
    for name, content in resources:
        data.add_field("resources", content, filename=name, content_type="application/octet-stream")
    if tenant is not None:
        data.add_field("tenantId", tenant)
    return data


def test_deploy_reads_every_resource_part_and_the_tenant() -> None:
    fake = FakeOperations()
    status, _, body = exchange(
        "POST",
        "/v2/deployments",
        fake=fake,
        data=form(("a.bpmn", b"<a/>"), ("b.bpmn", b"<b/>"), tenant="<default>"),
        headers={"Authorization": ""},  # as the JS SDK sends it
    )
    assert status == 200, body
    assert fake.calls == [
        (
            "deploy",
            {"resources": [("a.bpmn", b"<a/>"), ("b.bpmn", b"<b/>")], "tenant_id": "<default>"},
        )
    ]
    assert body == {
        "deploymentKey": str(BIG),
        "tenantId": "<default>",
        "deployments": [
            {
                "processDefinition": {
                    "processDefinitionId": name,
                    "processDefinitionVersion": 1,
                    "resourceName": f"{name}.bpmn",
                    "tenantId": "<default>",
                    "processDefinitionKey": str(BIG + i),
                }
            }
            for i, name in enumerate(["a", "b"])
        ],
    }


def test_deploy_passes_the_file_name_as_the_client_sent_it() -> None:
    fake = FakeOperations()  # Operations.deploy keeps only its last part (test_operations.py)
    exchange("POST", "/v2/deployments", fake=fake, data=form(("../p.bpmn", b"<p/>")))
    assert fake.calls[0][1]["resources"] == [("../p.bpmn", b"<p/>")]


def test_deploy_refuses_more_than_the_most_parts() -> None:
    resources = [(f"p{i}.bpmn", b"<p/>") for i in range(MAX_PARTS + 1)]
    fake = FakeOperations()
    answer = exchange("POST", "/v2/deployments", fake=fake, data=form(*resources))
    assert_problem(answer, 400, "INVALID_ARGUMENT", f"at most {MAX_PARTS} parts")
    assert fake.calls == []


def test_deploy_refuses_a_resource_over_4_mib_and_a_deployment_over_10_mib() -> None:
    big = b"x" * ((4 << 20) + 1)
    answer = exchange("POST", "/v2/deployments", data=form(("big.bpmn", big)))
    assert_problem(answer, 413, "PAYLOAD_TOO_LARGE", "resource 'big.bpmn'", "4 MiB")

    three = b"x" * (3 << 20)
    parts = [(f"p{i}.bpmn", three) for i in range(MAX_DEPLOYMENT_BYTES // len(three) + 1)]
    fake = FakeOperations()
    answer = exchange("POST", "/v2/deployments", fake=fake, data=form(*parts))
    assert_problem(answer, 413, "PAYLOAD_TOO_LARGE", "10 MiB in total")
    assert fake.calls == []


def test_deploy_wants_multipart_with_named_files() -> None:
    answer = exchange("POST", "/v2/deployments", json={"resources": []})
    assert_problem(answer, 415, "UNSUPPORTED_MEDIA_TYPE", "multipart/form-data")
    unnamed = b'--b1\r\nContent-Disposition: form-data; name="resources"\r\n\r\n<p/>\r\n--b1--\r\n'
    headers = {"Content-Type": "multipart/form-data; boundary=b1"}
    answer = exchange("POST", "/v2/deployments", data=unnamed, headers=headers)
    assert_problem(answer, 400, "INVALID_ARGUMENT", "needs a filename")


def test_deploy_passes_the_operations_refusal_on() -> None:
    fake = FakeOperations()
    fake.fail_with = invalid("Expected to deploy at least one resource, but none given")
    data = FormData()
    data.add_field("tenantId", "<default>")
    data.add_field("unused", b"", filename="x", content_type="text/plain")
    answer = exchange("POST", "/v2/deployments", fake=fake, data=data)
    assert_problem(answer, 400, "INVALID_ARGUMENT", "at least one resource")


# -- process instances --------------------------------------------------------------------------


def test_create_instance_by_id_without_awaiting() -> None:
    fake = FakeOperations()
    request = {"processDefinitionId": "order", "variables": {"amount": 42}, "tenantId": "<default>"}
    status, _, body = exchange("POST", "/v2/process-instances", fake=fake, json=request)
    assert status == 200, body
    assert body == {
        "processDefinitionId": "order",
        "processDefinitionVersion": 3,
        "processDefinitionKey": str(BIG + 1),
        "processInstanceKey": str(BIG + 2),
        "tenantId": "<default>",
        "variables": {},
        "tags": [],
        "businessId": None,
    }
    assert fake.calls == [
        (
            "create_instance",
            {
                "process_id": "order",
                "version": -1,
                "definition_key": -1,
                "variables": {"amount": 42},
                "tenant_id": "<default>",
                "start_at": [],
                "await_result": False,
                "fetch_variables": [],
                "timeout_s": None,
            },
        )
    ]


def test_create_instance_by_key_awaiting_its_result() -> None:
    fake = FakeOperations()
    request = {
        "processDefinitionKey": str(BIG + 1),
        "awaitCompletion": True,
        "requestTimeout": 2500,
        "fetchVariables": ["total"],
        "startInstructions": [{"elementId": "middle"}],
        "processDefinitionVersion": 2,
    }
    status, _, body = exchange("POST", "/v2/process-instances", fake=fake, json=request)
    assert status == 200, body
    assert body["variables"] == {"total": 84}
    assert body["processInstanceKey"] == str(BIG + 2)
    arguments = fake.calls[0][1]
    assert arguments["definition_key"] == BIG + 1
    assert arguments["await_result"] is True
    assert arguments["timeout_s"] == 2.5
    assert arguments["fetch_variables"] == ["total"]
    assert arguments["start_at"] == ["middle"]
    assert arguments["version"] == 2
    fake = FakeOperations()
    request = {"processDefinitionId": "p", "processDefinitionVersion": 0}
    exchange("POST", "/v2/process-instances", fake=fake, json=request)
    assert fake.calls[0][1]["version"] == -1  # the latest, as over gRPC


def test_create_instance_takes_a_key_given_as_a_number() -> None:
    fake = FakeOperations()
    exchange("POST", "/v2/process-instances", fake=fake, json={"processDefinitionKey": 17})
    assert fake.calls[0][1]["definition_key"] == 17


def test_create_instance_refuses_what_it_cannot_read() -> None:
    cases: list[tuple[object, str]] = [
        ({"processDefinitionId": "p", "variables": [1, 2]}, "variables must be a JSON object"),
        ({"processDefinitionId": "p", "variables": "{}"}, "variables must be a JSON object"),
        ({"processDefinitionId": 7}, "processDefinitionId must be a string, not a number"),
        ({"processDefinitionKey": "12ab"}, "processDefinitionKey must be a key"),
        ({"processDefinitionKey": True}, "processDefinitionKey must be a key"),
        ({"processDefinitionId": "p", "awaitCompletion": "yes"}, "awaitCompletion must be true"),
        ({"processDefinitionId": "p", "requestTimeout": -1}, "requestTimeout must not be negative"),
        ({"processDefinitionId": "p", "processDefinitionVersion": 1.5}, "must be an integer"),
        ({"processDefinitionId": "p", "fetchVariables": "a"}, "fetchVariables must be an array"),
        ({"processDefinitionId": "p", "processDefinitionKey": "5"}, "not both"),
        ([1, 2], "must be a JSON object, not an array"),
    ]
    for request, words in cases:
        fake = FakeOperations()
        answer = exchange("POST", "/v2/process-instances", fake=fake, json=request)
        assert_problem(answer, 400, "INVALID_ARGUMENT", words)
        assert fake.calls == []


def test_a_body_that_is_not_json_or_not_declared_json() -> None:
    answer = exchange(
        "POST",
        "/v2/process-instances",
        data=b'{"processDefinitionId": ',
        headers={"Content-Type": "application/json"},
    )
    body = assert_problem(answer, 400, "INVALID_ARGUMENT", "is not JSON")
    assert body["instance"] == "/v2/process-instances"
    answer = exchange(
        "POST",
        "/v2/process-instances",
        data=b"processDefinitionId=p",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert_problem(answer, 415, "UNSUPPORTED_MEDIA_TYPE", "application/json")
    answer = exchange("POST", "/v2/process-instances", data=b"")
    assert_problem(answer, 400, "INVALID_ARGUMENT", "expects a JSON object", "empty")


def test_a_json_body_over_4_mib_is_413() -> None:
    fake = FakeOperations()
    request = {"processDefinitionId": "p", "variables": {"blob": "x" * MAX_JSON_BYTES}}
    answer = exchange("POST", "/v2/process-instances", fake=fake, json=request)
    assert_problem(answer, 413, "PAYLOAD_TOO_LARGE", "4 MiB")
    assert fake.calls == []


def test_operation_failures_are_problems_with_their_status() -> None:
    fake = FakeOperations()
    fake.fail_with = GatewayError(
        Status.NOT_FOUND,
        "Command 'CREATE' rejected with code 'NOT_FOUND': no process with id 'nope' is deployed",
    )
    answer = exchange(
        "POST", "/v2/process-instances", fake=fake, json={"processDefinitionId": "nope"}
    )
    assert_problem(answer, 404, "NOT_FOUND", "nope")
    fake.fail_with = GatewayError(Status.DEADLINE_EXCEEDED, "no reply within 2.0 s")
    request = {"processDefinitionId": "p", "awaitCompletion": True, "requestTimeout": 2000}
    answer = exchange("POST", "/v2/process-instances", fake=fake, json=request)
    assert_problem(answer, 504, "DEADLINE_EXCEEDED", "no reply")


def test_cancel_instance() -> None:
    fake = FakeOperations()
    status, _, body = exchange("POST", f"/v2/process-instances/{BIG}/cancellation", fake=fake)
    assert (status, body) == (204, None)
    assert fake.calls == [("cancel_instance", {"key": BIG})]
    answer = exchange("POST", "/v2/process-instances/abc/cancellation", fake=fake)
    assert_problem(answer, 400, "INVALID_ARGUMENT", "processInstanceKey must be a key", "'abc'")


def test_set_variables_and_resolve_incident() -> None:
    fake = FakeOperations()
    request = {"variables": {"x": 1}, "local": True}
    status, _, _ = exchange("PUT", "/v2/element-instances/9/variables", fake=fake, json=request)
    assert status == 204
    status, _, _ = exchange("POST", "/v2/incidents/11/resolution", fake=fake)
    assert status == 204
    assert fake.calls == [
        ("set_variables", {"scope_key": 9, "variables": {"x": 1}, "local": True}),
        ("resolve_incident", {"key": 11}),
    ]
    answer = exchange("PUT", "/v2/element-instances/9/variables", json={"variables": 5})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "variables must be a JSON object")
    answer = exchange("PUT", "/v2/element-instances/9/variables", json={"local": False})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "variables is required")


# -- messages -------------------------------------------------------------------------------------


def test_publish_message() -> None:
    fake = FakeOperations()
    request = {
        "name": "paid",
        "correlationKey": "o-1",
        "timeToLive": 60000,
        "messageId": "m-1",
        "variables": {"paidBy": "card"},
    }
    status, _, body = exchange("POST", "/v2/messages/publication", fake=fake, json=request)
    assert status == 200
    assert body == {"messageKey": str(BIG + 7), "tenantId": "<default>"}
    assert fake.calls == [
        (
            "publish_message",
            {
                "name": "paid",
                "correlation_key": "o-1",
                "ttl_ms": 60000,
                "message_id": "m-1",
                "variables": {"paidBy": "card"},
                "tenant_id": None,
            },
        )
    ]
    fake = FakeOperations()
    exchange("POST", "/v2/messages/publication", fake=fake, json={"name": "paid"})
    assert fake.calls[0][1]["ttl_ms"] == 0  # the API's default: not buffered
    answer = exchange("POST", "/v2/messages/publication", json={"correlationKey": "o-1"})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "name is required")


def test_correlate_message_to_a_waiting_instance_or_a_start_event() -> None:
    fake = FakeOperations()
    fake.publish_reply = event(
        MessageSubscriptionIntent.CORRELATING,
        MessageSubscriptionValue(process_instance_key=BIG + 3, message_key=BIG + 4),
        BIG + 5,
    )
    request = {"name": "paid", "correlationKey": "o-1", "variables": {"a": 1}}
    status, _, body = exchange("POST", "/v2/messages/correlation", fake=fake, json=request)
    assert status == 200
    assert body == {
        "messageKey": str(BIG + 4),
        "tenantId": "<default>",
        "processInstanceKey": str(BIG + 3),
    }
    assert fake.calls[0][1]["ttl_ms"] == 0
    fake.publish_reply = event(
        MessageStartEventSubscriptionIntent.CORRELATED,
        MessageStartEventSubscriptionValue(process_instance_key=BIG + 8, message_key=BIG + 9),
        BIG + 10,
    )
    _, _, body = exchange("POST", "/v2/messages/correlation", fake=fake, json=request)
    assert body["processInstanceKey"] == str(BIG + 8)
    assert body["messageKey"] == str(BIG + 9)


def test_correlating_a_message_nothing_waits_for_is_404() -> None:
    request = {"name": "paid", "correlationKey": "o-404"}
    answer = exchange("POST", "/v2/messages/correlation", json=request)
    assert_problem(
        answer, 404, "NOT_FOUND", "no process instance waits for message 'paid'", "o-404"
    )


# -- jobs -----------------------------------------------------------------------------------------


def job(key: int, **fields: Any) -> ActivatedJob:
    value = JobValue(
        type="double",
        worker="w1",
        retries=3,
        deadline=1_700_000_000_000,
        variables='{"amount": 21}',
        custom_headers={"mode": "fast"},
        process_instance_key=BIG + 1,
        bpmn_process_id="gw-double",
        process_definition_version=2,
        process_definition_key=BIG + 2,
        element_id="double",
        element_instance_key=BIG + 3,
        **fields,
    )
    return key, value


def test_activate_jobs_collects_every_batch() -> None:
    fake = FakeOperations()
    fake.jobs = [[job(BIG + 10)], [job(BIG + 11), job(BIG + 12)]]
    request = {
        "type": "double",
        "worker": "w1",
        "timeout": 30000,
        "maxJobsToActivate": 5,
        "fetchVariable": ["amount"],
        "requestTimeout": 1000,
        "tenantIds": ["<default>"],
    }
    status, _, body = exchange("POST", "/v2/jobs/activation", fake=fake, json=request)
    assert status == 200
    assert [j["jobKey"] for j in body["jobs"]] == [str(BIG + k) for k in (10, 11, 12)]
    first = body["jobs"][0]
    assert first == {
        "jobKey": str(BIG + 10),
        "type": "double",
        "processInstanceKey": str(BIG + 1),
        "processDefinitionId": "gw-double",
        "processDefinitionVersion": 2,
        "processDefinitionKey": str(BIG + 2),
        "elementId": "double",
        "elementInstanceKey": str(BIG + 3),
        "customHeaders": {"mode": "fast"},
        "worker": "w1",
        "retries": 3,
        "deadline": 1_700_000_000_000,
        "variables": {"amount": 21},
        "tenantId": "<default>",
        "kind": "BPMN_ELEMENT",
        "listenerEventType": "UNSPECIFIED",
        "userTask": None,
        "physicalTenantId": "default",
        "tags": [],
        "rootProcessInstanceKey": None,
        "businessId": None,
        "priority": 0,
    }
    assert fake.calls == [
        (
            "activate_jobs",
            {
                "job_type": "double",
                "worker": "w1",
                "timeout_ms": 30000,
                "max_jobs": 5,
                "fetch_variables": ["amount"],
                "request_timeout_ms": 1000,
                "tenant_ids": ["<default>"],
            },
        )
    ]


def test_activate_jobs_with_none_and_with_missing_fields() -> None:
    request = {"type": "double", "timeout": 1000, "maxJobsToActivate": 1}
    status, _, body = exchange("POST", "/v2/jobs/activation", json=request)
    assert (status, body) == (200, {"jobs": []})
    answer = exchange("POST", "/v2/jobs/activation", json={"type": "double", "timeout": 1000})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "maxJobsToActivate is required")
    answer = exchange("POST", "/v2/jobs/activation", json={**request, "type": ""})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "type is required")


def test_complete_fail_and_throw_error() -> None:
    fake = FakeOperations()
    assert (
        exchange("POST", "/v2/jobs/5/completion", fake=fake, json={"variables": {"r": 1}})[0] == 204
    )
    assert exchange("POST", "/v2/jobs/6/completion", fake=fake)[0] == 204
    failure = {"retries": 2, "errorMessage": "boom", "retryBackOff": 1000}
    assert exchange("POST", "/v2/jobs/7/failure", fake=fake, json=failure)[0] == 204
    error = {"errorCode": "E1", "errorMessage": "bad", "variables": {"why": "x"}}
    assert exchange("POST", "/v2/jobs/8/error", fake=fake, json=error)[0] == 204
    assert fake.calls == [
        ("complete_job", {"key": 5, "variables": {"r": 1}}),
        ("complete_job", {"key": 6, "variables": {}}),
        (
            "fail_job",
            {"key": 7, "retries": 2, "message": "boom", "backoff_ms": 1000, "variables": {}},
        ),
        ("throw_error", {"key": 8, "code": "E1", "message": "bad", "variables": {"why": "x"}}),
    ]
    answer = exchange("POST", "/v2/jobs/8/error", json={"errorMessage": "bad"})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "errorCode is required")
    answer = exchange("POST", "/v2/jobs/5/completion", json={"variables": [1]})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "variables must be a JSON object")
    answer = exchange("POST", "/v2/jobs/5/completion", json={"result": {"denied": True}})
    assert_problem(answer, 501, "UNIMPLEMENTED", "task listeners")


def test_completing_a_job_twice_is_the_engines_not_found() -> None:
    fake = FakeOperations()
    fake.fail_with = GatewayError(
        Status.NOT_FOUND, "Command 'COMPLETE' rejected with code 'NOT_FOUND': no job 5"
    )
    answer = exchange("POST", "/v2/jobs/5/completion", fake=fake)
    body = assert_problem(answer, 404, "NOT_FOUND", "no job 5")
    assert body["instance"] == "/v2/jobs/5/completion"


def test_update_job_retries_and_timeout() -> None:
    fake = FakeOperations()
    request = {"changeset": {"retries": 4}}
    assert exchange("PATCH", f"/v2/jobs/{BIG}", fake=fake, json=request)[0] == 204
    assert fake.calls == [("update_job_retries", {"key": BIG, "retries": 4})]
    fake = FakeOperations()
    request = {"changeset": {"retries": 4, "timeout": 1000}}
    assert exchange("PATCH", f"/v2/jobs/{BIG}", fake=fake, json=request)[0] == 204
    assert fake.calls == [
        ("update_job_retries", {"key": BIG, "retries": 4}),
        ("update_job_timeout", {"key": BIG, "timeout_ms": 1000}),
    ]
    answer = exchange("PATCH", f"/v2/jobs/{BIG}", json={"retries": 4})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "changeset is required")
    answer = exchange("PATCH", f"/v2/jobs/{BIG}", json={"changeset": {}})
    assert_problem(answer, 400, "INVALID_ARGUMENT", "nothing to change")


class ParkingOperations(FakeOperations):
    """Its job activation waits for a job that never comes, as a long poll does."""

    def __init__(self) -> None:
        super().__init__()
        self.parked = asyncio.Event()
        self.left = asyncio.Event()

    async def activate_jobs(
        self, job_type: str, **arguments: Any
    ) -> AsyncIterator[list[ActivatedJob]]:
        self.parked.set()
        try:
            await asyncio.Event().wait()
            yield []
        finally:
            self.left.set()


def test_a_long_poll_ends_when_its_client_goes_away() -> None:
    """The served app (start_rest) cancels a request whose client left: a parked activation
    stops instead of activating jobs for nobody later."""

    async def main() -> bool:
        fake = ParkingOperations()
        unused = cast(AdminClient, object()), cast(Config, object())  # no topology asked for
        runner, port = await start_rest("127.0.0.1:0", cast(Operations, fake), *unused)
        try:
            request = {"type": "t", "timeout": 1000, "maxJobsToActivate": 1, "requestTimeout": 0}
            async with ClientSession() as session:
                url = f"http://127.0.0.1:{port}/v2/jobs/activation"
                posting = asyncio.create_task(session.post(url, json=request))
                await asyncio.wait_for(fake.parked.wait(), 5)
                posting.cancel()
            await asyncio.wait_for(fake.left.wait(), 5)
            return True
        finally:
            await runner.cleanup()

    assert asyncio.run(main())


# -- routes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "words"),
    [
        ("POST", "/v2/resources/5/deletion", "Deleting a resource"),
        ("POST", "/v2/signals/broadcast", "signal"),
        ("POST", "/v2/decision-definitions/evaluation", "decision"),
        ("POST", "/v2/user-tasks/5/assignment", "user task"),
        ("POST", "/v2/user-tasks/5/completion", "user task"),
        ("DELETE", "/v2/user-tasks/5/assignee", "user task"),
        ("PATCH", "/v2/user-tasks/5", "user task"),
        ("POST", "/v2/process-instances/5/modification", "modification"),
        ("POST", "/v2/process-instances/5/migration", "migration"),
        ("POST", "/v2/process-instances/search", "visibility"),
        ("POST", "/v2/jobs/search", "visibility"),
        ("POST", "/v2/process-definitions/5/statistics/element-instances/search", "visibility"),
        ("GET", "/v2/process-definitions/5/xml", "visibility"),
    ],
)
def test_what_the_engine_cannot_do_yet_is_501(method: str, path: str, words: str) -> None:
    fake = FakeOperations()
    answer = exchange(method, path, fake=fake, json={})
    body = assert_problem(answer, 501, "UNIMPLEMENTED", words, "not supported by Partita")
    assert body["instance"] == path
    assert fake.calls == []


def test_an_unknown_path_is_404_and_a_wrong_method_405() -> None:
    answer = exchange("GET", "/v2/nothing-here")
    body = assert_problem(answer, 404, "NOT_FOUND", "/v2/nothing-here")
    assert body["instance"] == "/v2/nothing-here"
    answer = exchange("GET", "/v2/process-instances")
    assert_problem(answer, 405, "METHOD_NOT_ALLOWED", "GET", "POST")
    assert answer[1]["Allow"] == "POST"
    answer = exchange("DELETE", "/v2/topology")
    assert_problem(answer, 405, "METHOD_NOT_ALLOWED", "DELETE")


# -- authentication -------------------------------------------------------------------------------

TOKEN = "a-token-of-this-gateway"


def test_a_request_without_the_gateways_credentials_is_401_before_its_body_is_read() -> None:
    bearer = Authenticator(token=TOKEN)
    fake = FakeOperations()
    answer = exchange(
        "POST", "/v2/deployments", fake=fake, authenticator=bearer, data=form(("p.bpmn", b"<p/>"))
    )
    assert_problem(answer, 401, "UNAUTHENTICATED", "Authorization")
    assert answer[1]["WWW-Authenticate"] == 'Bearer realm="partita"'
    answer = exchange(
        "GET", "/v2/topology", authenticator=bearer, headers={"Authorization": "Bearer nope"}
    )
    assert_problem(answer, 401, "UNAUTHENTICATED", "not this gateway's")
    answer = exchange("GET", "/v2/nothing-here", authenticator=bearer)
    assert_problem(answer, 401, "UNAUTHENTICATED")  # no route is told to a stranger
    assert fake.calls == []


def test_the_gateways_credentials_are_served_and_status_is_open() -> None:
    bearer = Authenticator(token=TOKEN)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    assert exchange("GET", "/v2/topology", authenticator=bearer, headers=headers)[0] == 200
    assert exchange("GET", "/v2/status", authenticator=bearer)[0] == 204
    users = Authenticator(users={"alice": hash_password("s3cret", iterations=1000)})
    answer = exchange("GET", "/v2/topology", authenticator=users, headers={"Authorization": ""})
    assert_problem(answer, 401, "UNAUTHENTICATED", "Basic")
    assert answer[1]["WWW-Authenticate"] == 'Basic realm="partita"'
    alice = {"Authorization": "Basic " + base64.b64encode(b"alice:s3cret").decode()}
    assert exchange("GET", "/v2/topology", authenticator=users, headers=alice)[0] == 200

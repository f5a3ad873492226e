"""The REST API's endpoints over a fake `Operations`, through aiohttp's test client (no broker):
the cluster, deployments, process instances and messages (jobs, routes and authentication are
in test_rest_jobs.py).

Each test sends what a client sends and checks what it gets back: the arguments the operation
was called with, the response's shape (keys as strings), and the problem document of every
failure (status, title, a detail naming what was wrong, the request path as instance).
"""

from __future__ import annotations

from aiohttp import FormData

from partita.gateway.errors import GatewayError, Status, invalid
from partita.gateway.rest_bodies import MAX_DEPLOYMENT_BYTES, MAX_JSON_BYTES, MAX_PARTS
from partita.gateway.topology import Topology
from partita.protocol.intents import (
    MessageStartEventSubscriptionIntent,
    MessageSubscriptionIntent,
)
from partita.protocol.records import event
from partita.protocol.values import (
    MessageStartEventSubscriptionValue,
    MessageSubscriptionValue,
)
from tests.support.rest_fakes import BIG, FakeOperations, assert_problem, exchange, form

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

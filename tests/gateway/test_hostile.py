"""Hostile clients against `partita gateway` on the real broker: malformed and oversized
messages, arguments out of range, a flood of long polls dropped by their clients, and slow HTTP
clients that never finish a request. Each gets its documented error with a message naming what
was wrong; the gateway keeps serving everyone else and its memory stays bounded."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from partita.config import Config
from partita.gateway.stubs import load
from tests.support.gateway import RunningGateway
from tests.support.paths import BPMN_FIXTURES

pytestmark = pytest.mark.kafka

STUBS = load(Config.from_env().home)
pb = STUBS.messages


@pytest.fixture(scope="module")
def channel(gateway: RunningGateway) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(
        gateway.grpc, options=[("grpc.max_send_message_length", 64 << 20)]
    ) as opened:
        yield opened


def call(channel: grpc.Channel, method: str, request: Any, response: Any = None) -> Any:
    """A unary RPC with `request` (a message, or raw bytes) and the raw or parsed reply."""
    serialize = (lambda b: b) if isinstance(request, bytes) else type(request).SerializeToString
    stub = channel.unary_unary(
        f"/gateway_protocol.Gateway/{method}",
        request_serializer=serialize,
        response_deserializer=response.FromString if response is not None else None,
    )
    return stub(request, timeout=30)


def refused(channel: grpc.Channel, method: str, request: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call(channel, method, request)
    error: Any = caught.value
    return error.code(), error.details()


def serves(channel: grpc.Channel) -> None:
    topology = call(channel, "Topology", pb.TopologyRequest(), pb.TopologyResponse)
    assert topology.gatewayVersion == "8.8.0"


def test_a_malformed_message_is_invalid_argument_naming_its_type(channel: grpc.Channel) -> None:
    code, details = refused(channel, "CreateProcessInstance", b"\xff\xff\xff\xff")
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid gateway_protocol.CreateProcessInstanceRequest message" in details
    serves(channel)


def test_fields_a_newer_client_adds_are_skipped(channel: grpc.Channel) -> None:
    unknown_field_99 = b"\x9a\x06\x05hello"  # field 99, length-delimited
    reply = call(channel, "Topology", unknown_field_99, pb.TopologyResponse)
    assert reply.partitionsCount > 0


def test_an_oversized_message_is_refused_and_the_gateway_goes_on(channel: grpc.Channel) -> None:
    huge = pb.DeployResourceRequest(
        resources=[pb.Resource(name="big.bpmn", content=b"x" * (5 << 20))]
    )
    code, details = refused(channel, "DeployResource", huge)
    assert code is grpc.StatusCode.RESOURCE_EXHAUSTED, details
    serves(channel)


@pytest.mark.parametrize(
    ("method", "request_", "expected"),
    [
        (
            "CreateProcessInstance",
            pb.CreateProcessInstanceRequest(bpmnProcessId="p", variables='{"a": '),
            "variables is not valid JSON",
        ),
        (
            "CreateProcessInstance",
            pb.CreateProcessInstanceRequest(bpmnProcessId="p", variables="[1, 2]"),
            "variables must be a JSON object",
        ),
        (
            "CreateProcessInstance",
            pb.CreateProcessInstanceRequest(bpmnProcessId="p", tenantId="acme"),
            "tenant identifier 'acme'",
        ),
        (
            "CreateProcessInstance",
            pb.CreateProcessInstanceRequest(),
            "Expected either a process definition key or a BPMN process id",
        ),
        (
            "DeployResource",
            pb.DeployResourceRequest(resources=[pb.Resource(name="../etc/..", content=b"<")]),
            "names no file",
        ),
        ("DeployResource", pb.DeployResourceRequest(), "at least one resource"),
        (
            "PublishMessage",
            pb.PublishMessageRequest(name="m", correlationKey="k", timeToLive=-5),
            "timeToLive must not be negative",
        ),
        (
            "FailJob",
            pb.FailJobRequest(jobKey=1, retries=1, retryBackOff=-1),
            "retryBackOff must not be negative",
        ),
        (
            "UpdateJobRetries",
            pb.UpdateJobRetriesRequest(jobKey=1, retries=0),
            "retries to be greater than zero",
        ),
        (
            "SetVariables",
            pb.SetVariablesRequest(elementInstanceKey=1, variables='"text"'),
            "variables must be a JSON object",
        ),
    ],
)
def test_arguments_out_of_range_are_invalid_argument(
    channel: grpc.Channel, method: str, request_: Any, expected: str
) -> None:
    code, details = refused(channel, method, request_)
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert expected in details


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (dict(maxJobsToActivate=0), "maxJobsToActivate must be between 1 and 10000"),
        (dict(maxJobsToActivate=10**9), "maxJobsToActivate must be between 1 and 10000"),
        (dict(timeout=-1), "job timeout greater than zero"),
        (dict(requestTimeout=10**12), "requestTimeout must be at most"),
        (dict(type=""), "Expected a job type"),
    ],
)
def test_activations_out_of_range_are_invalid_argument(
    channel: grpc.Channel, request_: dict[str, Any], expected: str
) -> None:
    arguments = {"type": "t", "worker": "w", "timeout": 1000, "maxJobsToActivate": 1}
    request = pb.ActivateJobsRequest(**{**arguments, **request_})
    stream = channel.unary_stream(
        "/gateway_protocol.Gateway/ActivateJobs",
        request_serializer=pb.ActivateJobsRequest.SerializeToString,
        response_deserializer=pb.ActivateJobsResponse.FromString,
    )
    with pytest.raises(grpc.RpcError) as caught:
        list(stream(request, timeout=30))
    error: Any = caught.value
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert expected in error.details()


def test_a_rejection_reads_as_zeebes(channel: grpc.Channel) -> None:
    code, details = refused(
        channel, "CreateProcessInstance", pb.CreateProcessInstanceRequest(bpmnProcessId="nope")
    )
    assert code is grpc.StatusCode.NOT_FOUND
    assert details.startswith("Command 'CREATE' rejected with code 'NOT_FOUND': ")
    unknown_job = (1 << 51) + 987_654  # a key of partition 0's range that was never given out
    code, details = refused(channel, "CompleteJob", pb.CompleteJobRequest(jobKey=unknown_job))
    assert code is grpc.StatusCode.NOT_FOUND and f"job {unknown_job} does not exist" in details
    code, details = refused(channel, "CompleteJob", pb.CompleteJobRequest(jobKey=123))
    assert code is grpc.StatusCode.INVALID_ARGUMENT and "123" in details  # not a key at all


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_flood_of_dropped_long_polls_leaves_nothing_behind(
    channel: grpc.Channel, gateway: RunningGateway, engine: Config
) -> None:
    """2,000 long polls opened and abandoned by their clients: the gateway's memory stays within
    a bound and a worker that comes next gets the next job at once."""
    stream = channel.unary_stream(
        "/gateway_protocol.Gateway/ActivateJobs",
        request_serializer=pb.ActivateJobsRequest.SerializeToString,
        response_deserializer=pb.ActivateJobsResponse.FromString,
    )
    poll = pb.ActivateJobsRequest(
        type="flood", worker="w", timeout=60_000, maxJobsToActivate=1, requestTimeout=60_000
    )
    before = _rss_kib(gateway.pid)
    for _ in range(4):
        calls = [stream(poll, timeout=60) for _ in range(500)]
        time.sleep(0.5)
        for abandoned in calls:
            abandoned.cancel()
    time.sleep(1.0)
    grown = _rss_kib(gateway.pid) - before
    assert grown < 64 << 10, f"the gateway grew {grown} KiB"

    call(
        channel,
        "DeployResource",
        pb.DeployResourceRequest(
            resources=[
                pb.Resource(
                    name="typed-task.bpmn",
                    content=(BPMN_FIXTURES / "typed-task.bpmn").read_bytes(),
                )
            ]
        ),
        pb.DeployResourceResponse,
    )
    started = time.monotonic()
    waiting = stream(poll, timeout=60)
    call(
        channel,
        "CreateProcessInstance",
        pb.CreateProcessInstanceRequest(
            bpmnProcessId="typed-task", variables=json.dumps({"jobType": "flood"})
        ),
        pb.CreateProcessInstanceResponse,
    )
    (batch,) = list(waiting)
    assert [job.type for job in batch.jobs] == ["flood"]
    assert time.monotonic() - started < 10


def test_slow_http_clients_do_not_hold_up_the_others(gateway: RunningGateway) -> None:
    """200 connections that send half a request line and stall; a normal request is answered
    meanwhile, and the gateway's memory stays within a bound."""
    host, port = gateway.rest.removeprefix("http://").split(":")
    before = _rss_kib(gateway.pid)
    stalled = []
    try:
        for _ in range(200):
            sock = socket.create_connection((host, int(port)), timeout=5)
            sock.sendall(b"POST /v2/process-instances HTTP/1.1\r\nHost: x\r\nContent-Le")
            stalled.append(sock)
        started = time.monotonic()
        with urllib.request.urlopen(f"{gateway.rest}/v2/topology", timeout=10) as response:
            assert response.status == 200
            assert json.loads(response.read())["gatewayVersion"] == "8.8.0"
        assert time.monotonic() - started < 5
        assert _rss_kib(gateway.pid) - before < 32 << 10
    finally:
        for sock in stalled:
            sock.close()

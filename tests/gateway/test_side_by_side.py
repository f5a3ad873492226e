"""Two `partita gateway` processes on one namespace, side by side (they share nothing but
Kafka): an instance created through one is worked by a long-polling worker of the other and
its result comes back through the first, and each serves its own clients throughout."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import grpc
import pytest

from partita.config import Config
from partita.gateway.stubs import load
from tests.support.gateway import running_gateway
from tests.support.paths import BPMN_FIXTURES

pytestmark = pytest.mark.kafka

STUBS = load(Config.from_env().home)
pb = STUBS.messages


def test_two_gateways_serve_one_namespace(engine: Config, tmp_path: Path) -> None:
    with (
        running_gateway(engine, tmp_path) as first,
        running_gateway(engine, tmp_path) as second,
        grpc.insecure_channel(first.grpc) as one,
        grpc.insecure_channel(second.grpc) as two,
    ):
        creator, worker = STUBS.services.GatewayStub(one), STUBS.services.GatewayStub(two)
        bpmn = (BPMN_FIXTURES / "gateway" / "double.bpmn").read_bytes()
        creator.DeployResource(
            pb.DeployResourceRequest(resources=[pb.Resource(name="double.bpmn", content=bpmn)]),
            timeout=60,
        )
        stop = threading.Event()
        worked: list[int] = []

        def work() -> None:  # a long-polling worker on the second gateway
            while not stop.is_set():
                request = pb.ActivateJobsRequest(
                    type="gw-double",
                    worker="second",
                    timeout=30_000,
                    maxJobsToActivate=4,
                    requestTimeout=2_000,
                )
                for batch in worker.ActivateJobs(request, timeout=30):
                    for job in batch.jobs:
                        amount = json.loads(job.variables)["amount"]
                        variables = json.dumps({"amount": amount * 2, "by": job.worker})
                        worker.CompleteJob(
                            pb.CompleteJobRequest(jobKey=job.key, variables=variables), timeout=30
                        )
                        worked.append(job.key)

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        try:
            results: list[Any] = []
            for amount in range(5):
                create = pb.CreateProcessInstanceRequest(
                    bpmnProcessId="gw-double", variables=json.dumps({"amount": amount})
                )
                reply = creator.CreateProcessInstanceWithResult(
                    pb.CreateProcessInstanceWithResultRequest(
                        request=create, requestTimeout=30_000
                    ),
                    timeout=40,
                )
                results.append(json.loads(reply.variables))
        finally:
            stop.set()
            thread.join(30)
        assert results == [{"amount": 2 * n, "by": "second"} for n in range(5)]
        assert len(worked) == 5
        for channel_stub in (creator, worker):  # both still serve
            topology = channel_stub.Topology(pb.TopologyRequest(), timeout=30)
            assert topology.gatewayVersion == "8.8.0"

"""Job streams on the real broker, with nothing but a stream for the type (so a job can only
come by the push): the gateway joins the type's workers, the engine pushes, the stream gets the
job in its own name, and a job it keeps longer than a second is made its worker's in the engine
(JOB UPDATE_TIMEOUT with the stream's timeout and worker)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import grpc
import pytest

from partita.config import Config
from partita.gateway.stubs import load
from partita.protocol.intents import JobBatchIntent, JobIntent
from tests.support.gateway import running_gateway
from tests.support.paths import BPMN_FIXTURES
from tests.support.worker_processes import read_log

pytestmark = pytest.mark.kafka

STUBS = load(Config.from_env().home)
pb = STUBS.messages


def test_a_stream_gets_pushed_jobs_in_its_own_name(engine: Config, tmp_path: Path) -> None:
    with running_gateway(engine, tmp_path) as gateway, grpc.insecure_channel(gateway.grpc) as ch:
        stub = STUBS.services.GatewayStub(ch)
        bpmn = (BPMN_FIXTURES / "gateway" / "streamed.bpmn").read_bytes()
        stub.DeployResource(
            pb.DeployResourceRequest(resources=[pb.Resource(name="streamed.bpmn", content=bpmn)]),
            timeout=60,
        )
        got: list[Any] = []
        stream = stub.StreamActivatedJobs(
            pb.StreamActivatedJobsRequest(type="gw-streamed", worker="streamer", timeout=20_000)
        )

        def take() -> None:
            try:
                for job in stream:
                    got.append(job)
                    time.sleep(1.5)  # kept longer than a second: the gateway restamps it
                    stub.CompleteJob(
                        pb.CompleteJobRequest(jobKey=job.key, variables=json.dumps({"amount": 9})),
                        timeout=30,
                    )
            except grpc.RpcError as error:  # the test cancels the stream when it is done
                if error.code() is not grpc.StatusCode.CANCELLED:
                    raise

        thread = threading.Thread(target=take, daemon=True)
        thread.start()
        create = pb.CreateProcessInstanceRequest(
            bpmnProcessId="gw-streamed", variables=json.dumps({"amount": 1})
        )
        result = stub.CreateProcessInstanceWithResult(
            pb.CreateProcessInstanceWithResultRequest(request=create, requestTimeout=60_000),
            timeout=70,
        )
        stream.cancel()
        thread.join(10)
    assert json.loads(result.variables) == {"amount": 9}
    (job,) = got
    assert job.worker == "streamer" and job.type == "gw-streamed"
    records = [r for rs in read_log(engine).partitions.values() for r in rs]
    (activated,) = [
        r
        for r in records
        if r.intent is JobBatchIntent.ACTIVATED and job.key in r.value.job_keys  # type: ignore[union-attr]
    ]
    assert activated.value.worker == "partita.push"  # type: ignore[union-attr]
    (restamp,) = [r for r in records if r.intent is JobIntent.TIMEOUT_UPDATED and r.key == job.key]
    assert restamp.value.worker == "streamer"  # type: ignore[union-attr]
    assert restamp.value.timeout == 19_000  # type: ignore[union-attr]

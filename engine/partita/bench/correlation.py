"""`partita bench correlation`: how long from publishing a message until the instance waiting
for it continues.

An engine worker runs in a child process. N instances of a process (start -> message catch
event -> service task -> end) wait for their message; the bench publishes one message per
instance at a fixed rate (no reply awaited, as a producer would) and times each until the
service task's job, pushed to its job topic, arrives. Correlation keys hash across every
partition, so most correlations cross partitions. One JSON line of figures.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from partita.client import Client
from partita.config import Config, KafkaRole
from partita.demo import percentile, start_engine_worker
from partita.log.admin import admin_client
from partita.log.clients import consume_available, new_consumer
from partita.log.security import kafka_access
from partita.log.topics import apply_topics, job_topic_spec
from partita.protocol.codec import RecordCodec
from partita.protocol.intents import JobIntent, ProcessInstanceCreationIntent
from partita.protocol.values import JobBatchValue, JobValue, ProcessInstanceCreationValue

JOB_TYPE = "bench.continue"
PROCESS_ID = "bench-correlation"
BPMN = f"""<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL"
    xmlns:zeebe="http://camunda.org/schema/zeebe/1.0" id="bench" targetNamespace="bench">
  <bpmn:message id="go" name="bench-go">
    <bpmn:extensionElements><zeebe:subscription correlationKey="=key" /></bpmn:extensionElements>
  </bpmn:message>
  <bpmn:process id="{PROCESS_ID}" isExecutable="true">
    <bpmn:startEvent id="start" />
    <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait" />
    <bpmn:intermediateCatchEvent id="wait"><bpmn:messageEventDefinition messageRef="go" />
    </bpmn:intermediateCatchEvent>
    <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="continue" />
    <bpmn:serviceTask id="continue">
      <bpmn:extensionElements><zeebe:taskDefinition type="{JOB_TYPE}" /></bpmn:extensionElements>
    </bpmn:serviceTask>
    <bpmn:sequenceFlow id="f3" sourceRef="continue" targetRef="end" />
    <bpmn:endEvent id="end" />
  </bpmn:process>
</bpmn:definitions>
"""


def run(
    config: Config,
    *,
    instances: int = 1000,
    rate: float = 200.0,
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    apply_topics(
        admin_client(kafka_access(config, KafkaRole.OPERATOR)), [job_topic_spec(config, JOB_TYPE)]
    )
    config.home.mkdir(parents=True, exist_ok=True)
    bpmn = config.home / "bench-correlation.bpmn"
    bpmn.write_text(BPMN)
    run_id = f"{time.time_ns():x}"
    engine_worker = start_engine_worker(config)
    try:
        return _run(config, bpmn, run_id=run_id, instances=instances, rate=rate, progress=progress)
    finally:
        engine_worker.stop()


def _run(
    config: Config,
    bpmn: Path,
    *,
    run_id: str,
    instances: int,
    rate: float,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    with Client(config, timeout=90) as client:
        progress("Starting an engine worker and deploying...")
        client.deploy(bpmn)
        progress(f"Creating {instances} waiting instances...")
        pending = [
            client.submit(
                ProcessInstanceCreationIntent.CREATE,
                ProcessInstanceCreationValue(
                    bpmn_process_id=PROCESS_ID,
                    variables=json.dumps({"key": f"{run_id}-{n}", "n": n}),
                ),
            )
            for n in range(instances)
        ]
        for correlation in pending:
            client.result(correlation)
        jobs = _job_consumer(config, run_id)
        try:
            return _measure(client, jobs, run_id, instances=instances, rate=rate, progress=progress)
        finally:
            jobs.close()


def _job_consumer(config: Config, run_id: str) -> Consumer:
    """Reads the job topic from its current end (taken before anything is published)."""
    consumer = new_consumer(
        kafka_access(config, KafkaRole.JOB_WORKER),
        {
            "group.id": f"{config.namespace}.bench.{run_id}",  # assign only: never joins
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 5,
        },
    )
    topic = config.job_topic(JOB_TYPE)
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    starts = []
    for partition in partitions:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
        starts.append(TopicPartition(topic, partition, high))
    consumer.assign(starts)
    return consumer


def _measure(
    client: Client,
    jobs: Consumer,
    run_id: str,
    *,
    instances: int,
    rate: float,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    codec = RecordCodec()
    sent: dict[int, float] = {}
    latencies: list[float] = []

    def take(timeout: float) -> None:
        for message in consume_available(jobs, 500, timeout):
            if message.error() is not None:
                continue
            batch = codec.decode(message.value() or b"").value
            if not isinstance(batch, JobBatchValue):
                continue
            for key, job in zip(batch.job_keys, batch.jobs, strict=True):
                n = json.loads(job.variables).get("n")
                began = sent.pop(n, None) if isinstance(n, int) else None
                if began is not None:
                    latencies.append((time.monotonic() - began) * 1000)
                client.submit(JobIntent.COMPLETE, JobValue(), key)  # make room: push is bounded

    progress(f"Publishing {instances} messages at {rate:g}/s...")
    started = time.monotonic()
    for n in range(instances):
        due = started + n / rate
        while (wait := due - time.monotonic()) > 0:
            take(min(wait, 0.005))
        client.publish_message("bench-go", f"{run_id}-{n}", await_result=False)
        sent[n] = time.monotonic()
    deadline = time.monotonic() + 60
    while sent and time.monotonic() < deadline:
        take(0.05)
    client.flush()
    latencies.sort()
    return {
        "bench": "correlation",
        "instances": instances,
        "rate_per_s": rate,
        "continued": len(latencies),
        "publish_to_continue_ms_p50": round(percentile(latencies, 0.50), 1),
        "publish_to_continue_ms_p95": round(percentile(latencies, 0.95), 1),
        "publish_to_continue_ms_p99": round(percentile(latencies, 0.99), 1),
        "publish_to_continue_ms_max": round(latencies[-1] if latencies else 0.0, 1),
    }

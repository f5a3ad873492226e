"""Helpers of the engine-core scenarios: create instances, find and complete jobs, send
commands, and read an instance's element lifecycle."""

from __future__ import annotations

import json
import uuid
from typing import Any

from partita.protocol.headers import ReplyTo
from partita.protocol.intents import (
    DeploymentIntent,
    JobIntent,
    MessageIntent,
    ProcessInstanceCreationIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.routing import partition_for_correlation_key
from partita.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    JobValue,
    MessageValue,
    ProcessInstanceCreationValue,
)
from tests.support.memory import MemoryEngine
from tests.support.paths import BPMN_FIXTURES


def create(engine: MemoryEngine, process_id: str, **variables: object) -> int:
    value = ProcessInstanceCreationValue(
        bpmn_process_id=process_id, variables=json.dumps(variables)
    )
    position = engine.send(0, command(ProcessInstanceCreationIntent.CREATE, value))
    engine.run()
    created = [
        r
        for r in engine.results_of(0, position)
        if r.intent is ProcessInstanceCreationIntent.CREATED
    ]
    assert created, engine.results_of(0, position)
    return created[0].key


def jobs_of(engine: MemoryEngine, instance: int) -> list[Record]:
    created = [
        r
        for r in engine.events(0)
        if r.intent is JobIntent.CREATED and r.value.process_instance_key == instance
    ]
    done = {r.key for r in engine.events(0) if r.intent is JobIntent.COMPLETED}
    return [j for j in created if j.key not in done]


def complete(engine: MemoryEngine, job: Record, **variables: object) -> list[Record]:
    position = engine.send(
        0, command(JobIntent.COMPLETE, JobValue(variables=json.dumps(variables)), key=job.key)
    )
    engine.run()
    return engine.results_of(0, position)


def lifecycle(engine: MemoryEngine, instance: int) -> list[tuple[str, str]]:
    return [
        (r.value.element_id, r.intent.name)
        for r in engine.events(0)
        if r.value_type.name == "PROCESS_INSTANCE" and r.value.process_instance_key == instance
    ]


def send(engine: MemoryEngine, record: Record) -> list[Record]:
    position = engine.send(0, record)
    engine.run()
    return engine.results_of(0, position)


def deploy(engine: Any, *names: str, content: dict[str, bytes] | None = None) -> list[Record]:
    """Deploy fixture files (or `content` by resource name); the deployment's results."""
    resources = tuple(
        DeploymentResource(n, (content or {}).get(n) or (BPMN_FIXTURES / n).read_bytes())
        for n in names
    )
    return send(engine, command(DeploymentIntent.CREATE, DeploymentValue(resources=resources)))


def publish(
    engine: Any,
    name: str,
    correlation_key: str,
    *,
    ttl: int = 60_000,
    message_id: str = "",
    **variables: object,
) -> Record:
    """Publish on the message's partition with a reply address; the reply."""
    partition = partition_for_correlation_key(correlation_key, engine.partitions)
    value = MessageValue(
        name=name,
        correlation_key=correlation_key,
        time_to_live=ttl,
        message_id=message_id,
        variables=json.dumps(variables),
    )
    correlation = uuid.uuid4().hex.encode()
    engine.send(
        partition,
        command(MessageIntent.PUBLISH, value),
        reply=ReplyTo(engine.REPLIES, 0, correlation),
    )
    engine.run()
    (reply,) = [r for c, r in engine.replies() if c == correlation]
    return reply


def all_events(engine: Any) -> list[Record]:
    return [r for p in range(engine.partitions) for r in engine.events(p)]


def steps(engine: Any, instance: int) -> list[tuple[str, str]]:
    """`lifecycle` over every partition (instances started by messages live where the
    message did)."""
    return [
        (r.value.element_id, r.intent.name)
        for r in all_events(engine)
        if r.value_type.name == "PROCESS_INSTANCE" and r.value.process_instance_key == instance
    ]

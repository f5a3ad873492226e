"""DEPLOYMENT CREATE and DISTRIBUTE: BPMN resources become versioned process definitions on
every partition.

CREATE runs on partition 0 (routing sends it there): every resource is parsed and validated
(all problems in one INVALID_ARGUMENT rejection); a process whose resource is identical to its
latest version is a duplicate (no new version); new versions get a key and a PROCESS CREATED
event; DEPLOYMENT CREATED answers the request. A DEPLOYMENT DISTRIBUTE command goes to every
other partition inside the same transaction, so distribution is atomic with the deployment and
needs no retries; each partition writes the PROCESS CREATED events and DEPLOYMENT DISTRIBUTED,
and partition 0 records FULLY_DISTRIBUTED at once. A client's creation can reach another
partition before the distribution does (ingress and the log are two topics): that partition
hands it to partition 0 (`instance.creation`).
"""

from __future__ import annotations

from msgspec.structs import replace

from partita.bpmn import BpmnError, Process
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.deployment import start_events
from partita.processing.deployment import state as deployment_state
from partita.processing.deployment.validation import processes_of
from partita.processing.dispatch import Handlers
from partita.protocol.enums import RejectionType
from partita.protocol.intents import DeploymentIntent, ProcessIntent
from partita.protocol.records import Record
from partita.protocol.values import DeploymentValue, ProcessMetadata, ProcessValue

handlers = Handlers()

_BPMN_SUFFIXES = (".bpmn", ".xml", ".bpmn20.xml")


@handlers.processor(DeploymentIntent.CREATE)
def create(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, DeploymentValue)
    if not value.resources:
        raise RejectionError(RejectionType.INVALID_ARGUMENT, "the deployment has no resources")
    parsed: list[tuple[str, bytes, list[Process]]] = []
    problems: list[str] = []
    for resource in value.resources:
        name = resource.resource_name
        if not name.lower().endswith(_BPMN_SUFFIXES):
            problems.append(f"'{name}': only BPMN resources (.bpmn) can be deployed")
            continue
        try:
            models = processes_of(resource.resource, name)
        except BpmnError as error:
            problems.append(str(error))
            continue
        parsed.append((name, resource.resource, models))
    if problems:
        raise RejectionError(RejectionType.INVALID_ARGUMENT, "; ".join(problems))

    deployment_key = ctx.keys.next_key()
    metadata: list[ProcessMetadata] = []
    for name, content, models in parsed:
        digest = deployment_state.checksum(content)
        for model in models:
            latest = deployment_state.latest(ctx.state, model.id)
            if latest is not None and latest.checksum == digest.hex():
                metadata.append(
                    ProcessMetadata(model.id, latest.version, latest.key, name, digest, True)
                )
                continue
            version = 1 if latest is None else latest.version + 1
            key = ctx.keys.next_key()
            process = ProcessValue(model.id, version, key, name, digest, content)
            ctx.append_event(ProcessIntent.CREATED, process, key)
            _started_events(ctx, key, model, latest)
            metadata.append(ProcessMetadata(model.id, version, key, name, digest, False))
    created = replace(value, processes_metadata=tuple(metadata))
    ctx.append_event(DeploymentIntent.CREATED, created, deployment_key, respond=True)
    for partition in range(ctx.partition_count):
        if partition != ctx.partition:
            ctx.append_command(
                DeploymentIntent.DISTRIBUTE, created, deployment_key, partition=partition
            )
    ctx.append_event(DeploymentIntent.FULLY_DISTRIBUTED, created, deployment_key)


@handlers.processor(DeploymentIntent.DISTRIBUTE)
def distribute(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, DeploymentValue)
    resources = {r.resource_name: r.resource for r in value.resources}
    for meta in value.processes_metadata:
        if meta.is_duplicate or deployment_state.by_key(ctx.state, meta.process_definition_key):
            continue
        process = ProcessValue(
            meta.bpmn_process_id,
            meta.version,
            meta.process_definition_key,
            meta.resource_name,
            meta.checksum,
            resources[meta.resource_name],
        )
        previous = deployment_state.latest(ctx.state, meta.bpmn_process_id)
        ctx.append_event(ProcessIntent.CREATED, process, meta.process_definition_key)
        if previous is None or previous.version < meta.version:
            deployed = deployment_state.by_key(ctx.state, meta.process_definition_key)
            assert deployed is not None
            _started_events(ctx, deployed.key, deployed.model(ctx.state), previous)
    ctx.append_event(DeploymentIntent.DISTRIBUTED, value, command.key, respond=True)


def _started_events(
    ctx: ProcessingContext,
    key: int,
    model: Process,
    previous: deployment_state.DeployedProcess | None,
) -> None:
    deployed = deployment_state.by_key(ctx.state, key)
    assert deployed is not None
    start_events.on_deployed(ctx, deployed, model, previous)

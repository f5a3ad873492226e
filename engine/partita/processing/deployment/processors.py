"""DEPLOYMENT CREATE and DISTRIBUTE: BPMN resources become versioned process definitions, DMN
resources (`.dmn`) versioned decision requirements graphs and decisions, and form resources
(`.form`) versioned forms, on every partition.

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

from dataclasses import dataclass, field

from msgspec.structs import replace

from partita.bpmn import BpmnError, Process
from partita.dmn import DmnError, parse_dmn
from partita.processing.context import ProcessingContext, RejectionError
from partita.processing.deployment import decisions, forms, start_events
from partita.processing.deployment import state as deployment_state
from partita.processing.deployment.validation import processes_of
from partita.processing.dispatch import Handlers
from partita.protocol.decision_values import DecisionMetadata, DecisionRequirementsMetadata
from partita.protocol.enums import RejectionType
from partita.protocol.intents import DeploymentIntent, FormIntent, ProcessIntent
from partita.protocol.records import Record
from partita.protocol.values import (
    DeploymentValue,
    FormMetadata,
    FormValue,
    ProcessMetadata,
    ProcessValue,
)

handlers = Handlers()

_BPMN_SUFFIXES = (".bpmn", ".xml", ".bpmn20.xml")


@handlers.processor(DeploymentIntent.CREATE)
def create(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, DeploymentValue)
    if not value.resources:
        raise RejectionError(RejectionType.INVALID_ARGUMENT, "the deployment has no resources")
    read = _read(value)
    parsed, found_forms, found_dmns = read.processes, read.forms, read.dmns

    deployment_key = ctx.keys.next_key()
    drg_metadata: list[DecisionRequirementsMetadata] = []
    decision_metadata: list[DecisionMetadata] = []
    for parsed_dmn in found_dmns:
        drg_meta, decision_metas = decisions.deploy(ctx, parsed_dmn, deployment_key)
        drg_metadata.append(drg_meta)
        decision_metadata += decision_metas
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
            process = ProcessValue(
                model.id, version, key, name, digest, content, deployment_key=deployment_key
            )
            ctx.append_event(ProcessIntent.CREATED, process, key)
            _started_events(ctx, key, model, latest)
            metadata.append(ProcessMetadata(model.id, version, key, name, digest, False))
    form_metadata = [
        _deploy_form(ctx, form_id, found, deployment_key) for form_id, found in found_forms.items()
    ]
    created = replace(
        value,
        processes_metadata=tuple(metadata),
        form_metadata=tuple(form_metadata),
        decisions_metadata=tuple(decision_metadata),
        decision_requirements_metadata=tuple(drg_metadata),
    )
    ctx.append_event(DeploymentIntent.CREATED, created, deployment_key, respond=True)
    for partition in range(ctx.partition_count):
        if partition != ctx.partition:
            ctx.append_command(
                DeploymentIntent.DISTRIBUTE, created, deployment_key, partition=partition
            )
    ctx.append_event(DeploymentIntent.FULLY_DISTRIBUTED, created, deployment_key)


@dataclass(slots=True)
class _Resources:
    """A deployment's resources, read: the processes of each BPMN resource, the forms by id
    (resource name, content, version tag) and the DMN graphs."""

    processes: list[tuple[str, bytes, list[Process]]] = field(default_factory=list)
    forms: dict[str, tuple[str, bytes, str]] = field(default_factory=dict)
    dmns: list[decisions.ParsedDmn] = field(default_factory=list)


def _read(value: DeploymentValue) -> _Resources:
    """Every resource parsed and validated; one INVALID_ARGUMENT rejection listing every
    problem of every resource otherwise."""
    read = _Resources()
    problems: list[str] = []
    for resource in value.resources:
        name, content = resource.resource_name, resource.resource
        if name.lower().endswith(forms.SUFFIX):
            _read_form(name, content, read.forms, problems)
            continue
        try:
            if name.lower().endswith(decisions.SUFFIX):
                read.dmns.append(decisions.ParsedDmn(name, content, parse_dmn(content, name)))
            elif name.lower().endswith(_BPMN_SUFFIXES):
                read.processes.append((name, content, processes_of(content, name)))
            else:
                problems.append(
                    f"'{name}': only BPMN (.bpmn), DMN (.dmn) and form (.form) resources can"
                    " be deployed"
                )
        except (BpmnError, DmnError) as error:
            problems.append(str(error))
    problems += _unique_decision_ids(read.dmns)
    if problems:
        raise RejectionError(RejectionType.INVALID_ARGUMENT, "; ".join(problems))
    return read


def _unique_decision_ids(found: list[decisions.ParsedDmn]) -> list[str]:
    problems: list[str] = []
    drgs: dict[str, str] = {}
    seen: dict[str, str] = {}
    for parsed in found:
        drg_id = parsed.drg.id
        if drg_id in drgs:
            problems.append(
                "Expected the decision requirements ids to be unique within a deployment but"
                f" found a duplicated id '{drg_id}' in the resources '{drgs[drg_id]}' and"
                f" '{parsed.name}'"
            )
        drgs[drg_id] = parsed.name
        for decision_id in parsed.drg.decisions:
            if decision_id in seen:
                problems.append(
                    "Expected the decision ids to be unique within a deployment but found a"
                    f" duplicated id '{decision_id}' in the resources '{seen[decision_id]}' and"
                    f" '{parsed.name}'"
                )
            seen[decision_id] = parsed.name
    return problems


def _read_form(
    name: str, content: bytes, found: dict[str, tuple[str, bytes, str]], problems: list[str]
) -> None:
    try:
        form_id, tag = forms.parse_form(name, content)
    except ValueError as error:
        problems.append(str(error))
        return
    if form_id in found:
        problems.append(
            "Expected the form ids to be unique within a deployment but found a duplicated id"
            f" '{form_id}' in the resources '{found[form_id][0]}' and '{name}'"
        )
        return
    found[form_id] = (name, content, tag)


def _deploy_form(
    ctx: ProcessingContext, form_id: str, found: tuple[str, bytes, str], deployment_key: int
) -> FormMetadata:
    """A new version of the form (FORM CREATED), or the latest one when this resource is
    identical to it (same name and checksum)."""
    name, content, tag = found
    digest = deployment_state.checksum(content)
    latest = forms.latest(ctx.state, form_id)
    if latest is not None:
        key, form = latest
        if form.checksum == digest.hex() and form.resource_name == name:
            return FormMetadata(
                form_id,
                form.version,
                key,
                name,
                digest,
                True,
                form.version_tag,
                form.deployment_key,
            )
    version = 1 if latest is None else latest[1].version + 1
    key = ctx.keys.next_key()
    created = FormValue(form_id, version, key, name, digest, content, tag, deployment_key)
    ctx.append_event(FormIntent.CREATED, created, key)
    return FormMetadata(form_id, version, key, name, digest, False, tag, deployment_key)


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
            deployment_key=command.key,
        )
        previous = deployment_state.latest(ctx.state, meta.bpmn_process_id)
        ctx.append_event(ProcessIntent.CREATED, process, meta.process_definition_key)
        if previous is None or previous.version < meta.version:
            deployed = deployment_state.by_key(ctx.state, meta.process_definition_key)
            assert deployed is not None
            _started_events(ctx, deployed.key, deployed.model(ctx.state), previous)
    decisions.distribute(
        ctx, value.decision_requirements_metadata, value.decisions_metadata, resources
    )
    for form in value.form_metadata:
        if form.is_duplicate or ctx.state.column(forms.BY_KEY).get(form.form_key) is not None:
            continue
        created = FormValue(
            form.form_id,
            form.version,
            form.form_key,
            form.resource_name,
            form.checksum,
            resources[form.resource_name],
            form.version_tag,
            command.key,
        )
        ctx.append_event(FormIntent.CREATED, created, form.form_key)
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

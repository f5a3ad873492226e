"""Forms (`.form` resources) on three partitions: deployed and versioned per form id beside
processes, distributed to every partition, and linked by Zeebe user tasks (`formId`) with the
bindings latest, deployment and versionTag; a missing form is an incident resolved by deploying
it. Replay rebuilds the same state after every scenario."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from partita.protocol.enums import ErrorType, RecordType, RejectionType
from partita.protocol.intents import (
    DeploymentIntent,
    FormIntent,
    IncidentIntent,
    ProcessInstanceCreationIntent,
    UserTaskIntent,
)
from partita.protocol.records import Record, command
from partita.protocol.values import (
    DeploymentResource,
    DeploymentValue,
    IncidentValue,
    ProcessInstanceCreationValue,
)
from tests.support.harnesses import HARNESSES, make_harness
from tests.support.memory import MemoryEngine
from tests.support.paths import BPMN_FIXTURES

FORMS = BPMN_FIXTURES / "forms"
CLAIM = (FORMS / "claim.form").read_bytes()
CLAIM_V2 = CLAIM.replace(b'"versionTag": "v1"', b'"versionTag": "v2"')


@pytest.fixture(params=HARNESSES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryEngine]:
    harness = make_harness(request, tmp_path, partitions=3)
    yield harness
    harness.assert_replay_matches(tmp_path)
    harness.close()


def _deploy(engine: MemoryEngine, *resources: tuple[str, bytes]) -> list[Record]:
    value = DeploymentValue(resources=tuple(DeploymentResource(n, c) for n, c in resources))
    position = engine.send(0, command(DeploymentIntent.CREATE, value))
    engine.run()
    return engine.results_of(0, position)


def _process(name: str) -> tuple[str, bytes]:
    return f"{name}.bpmn", (FORMS / f"{name}.bpmn").read_bytes()


def _task(engine: MemoryEngine, process_id: str, partition: int) -> Record | None:
    """The user task of a new instance of `process_id` created on `partition`, or None."""
    creation = ProcessInstanceCreationValue(bpmn_process_id=process_id)
    position = engine.send(partition, command(ProcessInstanceCreationIntent.CREATE, creation))
    engine.run()
    (created, *_) = engine.results_of(partition, position)
    instance = created.value.process_instance_key
    found = [
        r
        for r in engine.events(partition)
        if r.intent is UserTaskIntent.CREATED and r.value.process_instance_key == instance
    ]
    return found[0] if found else None


def test_a_form_is_versioned_distributed_and_linked_by_its_latest_version(
    engine: MemoryEngine,
) -> None:
    results = _deploy(engine, ("claim.form", CLAIM), _process("form-latest"))
    assert FormIntent.CREATED in [r.intent for r in results]
    (created,) = [r for r in results if r.intent is DeploymentIntent.CREATED]
    (form,) = created.value.form_metadata
    assert (form.form_id, form.version, form.version_tag, form.is_duplicate) == (
        "claim-form",
        1,
        "v1",
        False,
    )
    for partition in (1, 2):
        distributed = [r for r in engine.events(partition) if r.intent is FormIntent.CREATED]
        assert [r.key for r in distributed] == [form.form_key]
        assert json.loads(distributed[0].value.resource)["id"] == "claim-form"

    again = _deploy(engine, ("claim.form", CLAIM))
    (duplicate,) = [r for r in again if r.intent is DeploymentIntent.CREATED]
    assert duplicate.value.form_metadata[0].is_duplicate
    assert FormIntent.CREATED not in [r.intent for r in again]

    first = _task(engine, "form-latest", partition=2)
    assert first is not None and first.value.form_key == form.form_key
    newer = _deploy(engine, ("claim.form", CLAIM_V2))
    (v2,) = next(r for r in newer if r.intent is DeploymentIntent.CREATED).value.form_metadata
    assert (v2.version, v2.version_tag, v2.is_duplicate) == (2, "v2", False)
    second = _task(engine, "form-latest", partition=1)
    assert second is not None and second.value.form_key == v2.form_key


def test_deployment_and_version_tag_bindings_keep_their_version(engine: MemoryEngine) -> None:
    results = _deploy(
        engine, ("claim.form", CLAIM), _process("form-deployment"), _process("form-tagged")
    )
    (v1,) = next(r for r in results if r.intent is DeploymentIntent.CREATED).value.form_metadata
    _deploy(engine, ("claim.form", CLAIM_V2))
    for process_id in ("form-deployment", "form-tagged"):
        task = _task(engine, process_id, partition=0)
        assert task is not None and task.value.form_key == v1.form_key, process_id


def test_a_missing_form_is_an_incident_resolved_once_it_is_deployed(engine: MemoryEngine) -> None:
    _deploy(engine, _process("form-latest"))
    assert _task(engine, "form-latest", partition=0) is None
    (incident,) = [r for r in engine.events(0) if r.intent is IncidentIntent.CREATED]
    assert incident.value.error_type is ErrorType.FORM_NOT_FOUND
    assert incident.value.error_message.startswith(
        "Expected to find a form with id 'claim-form', but no form with this id is found"
    )
    _deploy(engine, ("claim.form", CLAIM))
    position = engine.send(0, command(IncidentIntent.RESOLVE, IncidentValue(), key=incident.key))
    engine.run()
    assert engine.results_of(0, position)[0].intent is IncidentIntent.RESOLVED
    created = [r for r in engine.events(0) if r.intent is UserTaskIntent.CREATED]
    assert len(created) == 1 and created[0].value.form_key > 0


def test_forms_that_cannot_be_read_are_refused_naming_the_resource(engine: MemoryEngine) -> None:
    (refused,) = _deploy(
        engine,
        ("broken.form", b"{not json"),
        ("anonymous.form", b'{"components": []}'),
        ("a.form", CLAIM),
        ("b.form", CLAIM_V2),
    )
    assert refused.record_type is RecordType.COMMAND_REJECTION
    assert refused.rejection_type is RejectionType.INVALID_ARGUMENT
    reason = refused.rejection_reason
    assert "'broken.form' is not a form: not valid JSON" in reason
    assert "'anonymous.form': Expected the form id to be present, but none given" in reason
    assert "duplicated id 'claim-form' in the resources 'a.form' and 'b.form'" in reason

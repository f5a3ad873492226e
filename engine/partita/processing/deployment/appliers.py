"""The appliers of PROCESS, FORM, DECISION_REQUIREMENTS and DECISION CREATED: the only writers
of the deployed processes, forms and decisions in state."""

from __future__ import annotations

from partita.processing.deployment import decisions, forms
from partita.processing.deployment.state import BY_ID_AND_VERSION, BY_KEY, LATEST, RESOURCES
from partita.processing.dispatch import Handlers
from partita.protocol.decision_values import DecisionRequirementsValue, DecisionValue
from partita.protocol.intents import (
    DecisionIntent,
    DecisionRequirementsIntent,
    FormIntent,
    ProcessIntent,
)
from partita.protocol.records import Record
from partita.protocol.values import FormValue, ProcessValue
from partita.state import PartitionDb
from partita.state.stored import (
    DeployedDecision,
    DeployedDrg,
    DeployedForm,
    DeployedProcessRecord,
)

handlers = Handlers()


@handlers.applier(ProcessIntent.CREATED)
def apply_process_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessValue)
    db.column(BY_KEY).upsert(
        value.process_definition_key,
        DeployedProcessRecord(
            bpmn_process_id=value.bpmn_process_id,
            version=value.version,
            resource_name=value.resource_name,
            checksum=value.checksum.hex(),
            deployment_key=value.deployment_key,
        ),
    )
    db.column(RESOURCES).upsert(value.process_definition_key, value.resource.decode("utf-8"))
    db.column(BY_ID_AND_VERSION).upsert(
        (value.bpmn_process_id, value.version), value.process_definition_key
    )
    current = db.column(LATEST).get(value.bpmn_process_id)
    if current is None or value.version > current:
        db.column(LATEST).upsert(value.bpmn_process_id, value.version)


@handlers.applier(FormIntent.CREATED)
def apply_form_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, FormValue)
    db.column(forms.BY_KEY).upsert(
        value.form_key,
        DeployedForm(
            form_id=value.form_id,
            version=value.version,
            resource_name=value.resource_name,
            checksum=value.checksum.hex(),
            resource=value.resource.decode("utf-8", errors="replace"),
            deployment_key=value.deployment_key,
            version_tag=value.version_tag,
        ),
    )
    db.column(forms.BY_ID_AND_VERSION).upsert((value.form_id, value.version), value.form_key)
    current = db.column(forms.LATEST).get(value.form_id)
    if current is None or value.version > current:
        db.column(forms.LATEST).upsert(value.form_id, value.version)


@handlers.applier(DecisionRequirementsIntent.CREATED)
def apply_drg_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, DecisionRequirementsValue)
    key, drg_id, version = (
        record.key,
        value.decision_requirements_id,
        value.decision_requirements_version,
    )
    db.column(decisions.DRGS).upsert(
        key,
        DeployedDrg(
            drg_id=drg_id,
            name=value.decision_requirements_name,
            version=version,
            namespace=value.namespace,
            resource_name=value.resource_name,
            checksum=value.checksum.hex(),
            resource=value.resource.decode("utf-8", errors="replace"),
        ),
    )
    db.column(decisions.DRG_VERSIONS).upsert((drg_id, version), key)
    current = db.column(decisions.LATEST_DRG).get(drg_id)
    if current is None or version > current:
        db.column(decisions.LATEST_DRG).upsert(drg_id, version)


@handlers.applier(DecisionIntent.CREATED)
def apply_decision_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, DecisionValue)
    db.column(decisions.DECISIONS).upsert(
        record.key,
        DeployedDecision(
            decision_id=value.decision_id,
            name=value.decision_name,
            version=value.version,
            drg_id=value.decision_requirements_id,
            drg_key=value.decision_requirements_key,
            deployment_key=value.deployment_key,
            version_tag=value.version_tag,
        ),
    )
    db.column(decisions.DECISION_VERSIONS).upsert((value.decision_id, value.version), record.key)
    current = db.column(decisions.LATEST_DECISION).get(value.decision_id)
    if current is None or value.version > current:
        db.column(decisions.LATEST_DECISION).upsert(value.decision_id, value.version)

"""The applier of PROCESS CREATED: the only writer of the deployed processes in state."""

from __future__ import annotations

from partita.processing.deployment.state import BY_ID_AND_VERSION, BY_KEY, LATEST, RESOURCES
from partita.processing.dispatch import Handlers
from partita.protocol.intents import ProcessIntent
from partita.protocol.records import Record
from partita.protocol.values import ProcessValue
from partita.state import PartitionDb
from partita.state.stored import DeployedProcessRecord

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
        ),
    )
    db.column(RESOURCES).upsert(value.process_definition_key, value.resource.decode("utf-8"))
    db.column(BY_ID_AND_VERSION).upsert(
        (value.bpmn_process_id, value.version), value.process_definition_key
    )
    current = db.column(LATEST).get(value.bpmn_process_id)
    if current is None or value.version > current:
        db.column(LATEST).upsert(value.bpmn_process_id, value.version)

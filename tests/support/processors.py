"""A minimal processor set for testing the stream layer before the workflow engine exists.

PROCESS_INSTANCE_CREATION CREATE (bpmnProcessId selects the behaviour):
- anything: a new instance key; CREATED (the reply) + four PROCESS_INSTANCE events (5 events);
  state: the instance in `element_instance`;
- "reject-me": rejected NOT_FOUND;
- "explode": raises (an unexpected error: ERROR event, nothing else);
- variables {"spawn": n}: n follow-up CREATE commands for "child".
PROCESS_INSTANCE CANCEL (key = instance): ELEMENT_TERMINATED, removes it; an instance created
with variables {"explodeOnCancel": true} raises instead (ERROR event, instance banned).
Due dates: an instance created with {"expireAfterMs": n} is cancelled by the due-date checker
n ms after its CREATED event.
"""

from __future__ import annotations

import json
from typing import Any

from msgspec.structs import replace

from partita.processing import Engine, ProcessingContext, RejectionError, banning
from partita.protocol.enums import BpmnElementType, RejectionType
from partita.protocol.intents import ProcessInstanceCreationIntent as Creation
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.records import Record, command
from partita.protocol.values import ProcessInstanceCreationValue, ProcessInstanceValue
from partita.state import ColumnFamilies, PartitionDb
from partita.state.view import StateView

TOY_INSTANCES = ColumnFamilies.VARIABLE
"""The toy keeps an instance as a JSON text under (instance key, "toy")."""
DUE = ColumnFamilies.TIMER_DUE_DATE


def create(command: Record, ctx: ProcessingContext) -> None:
    value = command.value
    assert isinstance(value, ProcessInstanceCreationValue)
    if value.bpmn_process_id == "reject-me":
        raise RejectionError(RejectionType.NOT_FOUND, "no process 'reject-me' is deployed")
    if value.bpmn_process_id == "explode":
        raise RuntimeError("boom")
    key = ctx.keys.next_key()
    ctx.append_event(Creation.CREATED, replace(value, process_instance_key=key), key, respond=True)
    element = ProcessInstanceValue(
        bpmn_process_id=value.bpmn_process_id,
        process_instance_key=key,
        element_id=value.bpmn_process_id,
        bpmn_element_type=BpmnElementType.PROCESS,
    )
    for intent in (
        Instance.ELEMENT_ACTIVATING,
        Instance.ELEMENT_ACTIVATED,
        Instance.ELEMENT_COMPLETING,
        Instance.ELEMENT_COMPLETED,
    ):
        ctx.append_event(intent, element, key)
    for _ in range(json.loads(value.variables or "{}").get("spawn", 0)):
        ctx.append_command(Creation.CREATE, ProcessInstanceCreationValue(bpmn_process_id="child"))


def apply_created(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessInstanceCreationValue)
    expire = json.loads(value.variables or "{}").get("expireAfterMs")
    due = -1 if expire is None else record.timestamp + int(expire)  # from the record: no clock
    stored = {"bpmnProcessId": value.bpmn_process_id, "variables": value.variables, "dueAt": due}
    db.column(TOY_INSTANCES).insert((record.key, "toy"), json.dumps(stored))
    if due >= 0:
        db.column(DUE).insert((due, record.key, 0), None)


def expired_instances(db: PartitionDb, now: int) -> list[Record]:
    """The due-date checker: a CANCEL command for every instance whose time is up."""
    due_commands = []
    for (due, instance, _), _value in db.column(DUE).items():
        if due > now:
            break
        value = ProcessInstanceValue(process_instance_key=instance)
        due_commands.append(command(Instance.CANCEL, value, key=instance))
    return due_commands


def cancel(command: Record, ctx: ProcessingContext) -> None:
    instance = _toy_instance(ctx.state, command.key)
    if instance is None:
        raise RejectionError(RejectionType.NOT_FOUND, f"no process instance {command.key}")
    if json.loads(instance["variables"]).get("explodeOnCancel"):
        raise RuntimeError(f"cannot cancel {command.key}")
    value = ProcessInstanceValue(
        process_instance_key=command.key, element_id=instance["bpmnProcessId"]
    )
    ctx.append_event(Instance.ELEMENT_TERMINATED, value, command.key, respond=True)


def apply_terminated(record: Record, db: PartitionDb) -> None:
    instance = _toy_instance(db, record.key)
    assert instance is not None
    if instance.get("dueAt", -1) >= 0:
        db.column(DUE).delete_existing((instance["dueAt"], record.key, 0))
    db.column(TOY_INSTANCES).delete_existing((record.key, "toy"))


def _toy_instance(state: StateView, key: int) -> dict[str, Any] | None:
    stored = state.column(TOY_INSTANCES).get((key, "toy"))
    return None if stored is None else dict(json.loads(stored))


def build_engine() -> Engine:
    engine = Engine()
    banning.register(engine)  # the core, without the workflow engine's own processors
    engine.processor(Creation.CREATE, create)
    engine.applier(Creation.CREATED, apply_created)
    engine.processor(Instance.CANCEL, cancel)
    engine.applier(Instance.ELEMENT_TERMINATED, apply_terminated)
    engine.due_date_checker(expired_instances)
    return engine

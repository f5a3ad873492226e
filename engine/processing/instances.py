"""Element instances and variables in state, and the appliers of their events.

An element instance (column family `element_instance`) records its element, flow scope,
process and lifecycle state, and for scopes the number of sequence flows taken inside it whose
target is not active yet (`activeFlows`): a scope completes when it has no active children and
no active flows. Variables live in `variable` keyed by (scope key, name) as JSON text.
"""

from __future__ import annotations

import json
from typing import Any

from engine.processing import processes
from engine.processing.engine import Engine
from engine.protocol.enums import BpmnElementType, BpmnEventType
from engine.protocol.intents import ProcessInstanceIntent as Instance
from engine.protocol.intents import VariableIntent
from engine.protocol.records import Record
from engine.protocol.values import ProcessInstanceValue, VariableValue
from engine.state import ColumnFamilies, PartitionDb
from engine.state.errors import KeyNotFoundError

INSTANCES = ColumnFamilies.ELEMENT_INSTANCE
CHILDREN = ColumnFamilies.ELEMENT_INSTANCE_CHILDREN
VARIABLES = ColumnFamilies.VARIABLE
TAKEN = ColumnFamilies.TAKEN_FLOWS
TRIGGERS = ColumnFamilies.EVENT_TRIGGER
STARTED = ColumnFamilies.MESSAGE_START_INSTANCE
STARTED_BY_INSTANCE = ColumnFamilies.MESSAGE_START_BY_INSTANCE

_NOT_VIA_FLOW = {BpmnElementType.PROCESS, BpmnElementType.START_EVENT}


def instance(db: PartitionDb, key: int) -> dict[str, Any] | None:
    found: dict[str, Any] | None = db.column(INSTANCES).get(key)
    return found


def value_of(stored: dict[str, Any]) -> ProcessInstanceValue:
    """The PROCESS_INSTANCE record value of a stored element instance."""
    return ProcessInstanceValue(
        bpmn_process_id=stored["bpmnProcessId"],
        version=stored["version"],
        process_definition_key=stored["processDefinitionKey"],
        process_instance_key=stored["processInstanceKey"],
        element_id=stored["elementId"],
        flow_scope_key=stored["flowScopeKey"],
        bpmn_element_type=BpmnElementType[stored["elementType"]],
        bpmn_event_type=BpmnEventType[stored.get("eventType", "UNSPECIFIED")],
        parent_process_instance_key=stored.get("parentProcessInstanceKey", -1),
        parent_element_instance_key=stored.get("parentElementInstanceKey", -1),
    )


def children(db: PartitionDb, scope_key: int) -> list[int]:
    return [child for (_, child), _ in db.column(CHILDREN).items(CHILDREN.key.prefix(scope_key))]


def scope_chain(db: PartitionDb, key: int) -> list[int]:
    """`key` and its flow scopes up to the process instance, innermost first."""
    chain = []
    current: int | None = key
    while current is not None and current > 0:
        chain.append(current)
        found = instance(db, current)
        current = None if found is None else found["flowScopeKey"]
    return chain


def local_variables(db: PartitionDb, scope_key: int) -> dict[str, Any]:
    return {
        name: json.loads(value)
        for (_, name), value in db.column(VARIABLES).items(VARIABLES.key.prefix(scope_key))
    }


def variable_json(db: PartitionDb, scope_key: int, name: str) -> str | None:
    """The JSON text of one local variable, or None."""
    found: str | None = db.column(VARIABLES).get((scope_key, name))
    return found


def visible_variables_json(db: PartitionDb, key: int) -> str:
    """`visible_variables` as a JSON object, built from the stored JSON texts unparsed."""
    merged: dict[str, str] = {}
    for scope in reversed(scope_chain(db, key)):
        for (_, name), text in db.column(VARIABLES).items(VARIABLES.key.prefix(scope)):
            merged[name] = text
    dumps = json.dumps
    return "{" + ",".join(f"{dumps(n, ensure_ascii=False)}:{t}" for n, t in merged.items()) + "}"


def visible_variables(db: PartitionDb, key: int) -> dict[str, Any]:
    """The variables an element sees: its own scope first, then its flow scopes."""
    result: dict[str, Any] = {}
    for scope in reversed(scope_chain(db, key)):
        result.update(local_variables(db, scope))
    return result


def taken_count(db: PartitionDb, scope_key: int, gateway: str, flow: str) -> int:
    return db.column(TAKEN).get((scope_key, gateway, flow)) or 0


# -- appliers ---------------------------------------------------------------------------------


def _adjust_flows(db: PartitionDb, scope_key: int, delta: int) -> None:
    scope = instance(db, scope_key)
    if scope is not None:
        db.column(INSTANCES).update(
            scope_key, {**scope, "activeFlows": scope["activeFlows"] + delta}
        )


def apply_activating(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessInstanceValue)
    db.column(INSTANCES).insert(
        record.key,
        {
            "elementId": value.element_id,
            "elementType": value.bpmn_element_type.name,
            "flowScopeKey": value.flow_scope_key,
            "processInstanceKey": value.process_instance_key,
            "processDefinitionKey": value.process_definition_key,
            "bpmnProcessId": value.bpmn_process_id,
            "version": value.version,
            "state": Instance.ELEMENT_ACTIVATING.name,
            "activeFlows": 0,
            "jobKey": -1,
            "eventType": value.bpmn_event_type.name,
            "parentProcessInstanceKey": value.parent_process_instance_key,
            "parentElementInstanceKey": value.parent_element_instance_key,
        },
    )
    if value.bpmn_element_type is BpmnElementType.PROCESS and value.parent_element_instance_key > 0:
        caller = instance(db, value.parent_element_instance_key)
        if caller is not None:  # the call activity knows its child, to terminate it
            db.column(INSTANCES).update(
                value.parent_element_instance_key, {**caller, "calledChildKey": record.key}
            )
    if value.flow_scope_key > 0:
        db.column(CHILDREN).insert((value.flow_scope_key, record.key), None)
        if value.bpmn_element_type is BpmnElementType.PARALLEL_GATEWAY:
            model = processes.deployed(db, value.process_definition_key)
            gateway = model.model(db).element(value.element_id)
            for flow in gateway.incoming:  # the join consumes one arrival of every flow
                key = (value.flow_scope_key, gateway.id, flow)
                left = taken_count(db, *key) - 1
                if left > 0:
                    db.column(TAKEN).upsert(key, left)
                else:
                    db.column(TAKEN).delete(key)
            _adjust_flows(db, value.flow_scope_key, -len(gateway.incoming))
        elif value.bpmn_element_type not in _NOT_VIA_FLOW:
            _adjust_flows(db, value.flow_scope_key, -1)


def _set_state(record: Record, db: PartitionDb) -> None:
    found = instance(db, record.key)
    if found is None:
        raise KeyNotFoundError(INSTANCES.name, record.key, f"{record.intent.name} of an element")
    db.column(INSTANCES).update(record.key, {**found, "state": record.intent.name})


def apply_ended(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessInstanceValue)
    db.column(INSTANCES).delete_existing(record.key)
    if value.flow_scope_key > 0:
        db.column(CHILDREN).delete((value.flow_scope_key, record.key))
    db.column(VARIABLES).delete_prefix(VARIABLES.key.prefix(record.key))
    db.column(TAKEN).delete_prefix(TAKEN.key.prefix(record.key))  # joins never completed
    db.column(TRIGGERS).delete_prefix(TRIGGERS.key.prefix(record.key))  # fired as it ended
    if value.bpmn_event_type is BpmnEventType.TERMINATE and value.flow_scope_key > 0:
        scope = instance(db, value.flow_scope_key)  # a terminate end event: nothing is pending
        if scope is not None:
            db.column(INSTANCES).update(value.flow_scope_key, {**scope, "activeFlows": 0})
        db.column(TAKEN).delete_prefix(TAKEN.key.prefix(value.flow_scope_key))
    if value.bpmn_element_type is BpmnElementType.PROCESS:
        started = db.column(STARTED_BY_INSTANCE).get(record.key)
        if started is not None:  # its correlation key may start another instance now
            db.column(STARTED_BY_INSTANCE).delete(record.key)
            db.column(STARTED).delete((started[0], started[1]))


def apply_flow_taken(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessInstanceValue)
    _adjust_flows(db, value.flow_scope_key, +1)
    process = processes.deployed(db, value.process_definition_key).model(db)
    flow = process.flows[value.element_id]
    target = process.element(flow.target)
    if target.element_type is BpmnElementType.PARALLEL_GATEWAY and len(target.incoming) > 1:
        taken = taken_count(db, value.flow_scope_key, target.id, flow.id)
        db.column(TAKEN).upsert((value.flow_scope_key, target.id, flow.id), taken + 1)


def apply_variable(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, VariableValue)
    db.column(VARIABLES).upsert((value.scope_key, value.name), value.value)


def register(engine: Engine) -> None:
    engine.applier(Instance.ELEMENT_ACTIVATING, apply_activating)
    for intent in (
        Instance.ELEMENT_ACTIVATED,
        Instance.ELEMENT_COMPLETING,
        Instance.ELEMENT_TERMINATING,
    ):
        engine.applier(intent, _set_state)
    engine.applier(Instance.ELEMENT_COMPLETED, apply_ended)
    engine.applier(Instance.ELEMENT_TERMINATED, apply_ended)
    engine.applier(Instance.SEQUENCE_FLOW_TAKEN, apply_flow_taken)
    engine.applier(VariableIntent.CREATED, apply_variable)
    engine.applier(VariableIntent.UPDATED, apply_variable)

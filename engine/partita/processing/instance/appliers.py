"""The appliers of PROCESS_INSTANCE and PROCESS_EVENT events: element instances come and go
with their children, variables, taken flows and triggers, and a scope counts the flows taken
inside it whose target has not activated yet (`activeFlows`)."""

from __future__ import annotations

from msgspec.structs import replace

from partita.processing.deployment import state as deployment_state
from partita.processing.dispatch import Handlers
from partita.processing.instance.state import (
    CHILDREN,
    INSTANCES,
    TAKEN,
    TRIGGERS,
    instance,
    taken_count,
)
from partita.processing.message.state import STARTED, STARTED_BY_INSTANCE
from partita.processing.variable.state import VARIABLES
from partita.protocol.enums import BpmnElementType, BpmnEventType
from partita.protocol.intents import ProcessEventIntent
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.records import Record
from partita.protocol.values import ProcessEventValue, ProcessInstanceValue
from partita.state import PartitionDb
from partita.state.errors import KeyNotFoundError
from partita.state.stored import ElementInstance, EventTrigger

handlers = Handlers()

_ACTIVATING = Instance.ELEMENT_ACTIVATING.name
_NOT_VIA_FLOW = {BpmnElementType.PROCESS, BpmnElementType.START_EVENT}
_JOINS = {BpmnElementType.PARALLEL_GATEWAY, BpmnElementType.INCLUSIVE_GATEWAY}


def _is_link_throw(value: ProcessInstanceValue) -> bool:
    return (
        value.bpmn_element_type is BpmnElementType.INTERMEDIATE_THROW_EVENT
        and value.bpmn_event_type is BpmnEventType.LINK
    )


def _compensating(value: ProcessInstanceValue) -> bool:
    """A compensation handler or its boundary event: activated by a throw event, not a flow."""
    return value.bpmn_event_type is BpmnEventType.COMPENSATION and value.bpmn_element_type not in (
        BpmnElementType.INTERMEDIATE_THROW_EVENT,
        BpmnElementType.END_EVENT,
    )


_AD_HOC_SCOPES = {
    BpmnElementType.AD_HOC_SUB_PROCESS,
    BpmnElementType.AD_HOC_SUB_PROCESS_INNER_INSTANCE,
}


def _started_ad_hoc(db: PartitionDb, scope: ElementInstance, value: ProcessInstanceValue) -> bool:
    """An inner instance an ad-hoc subprocess started, or the element it activated in it (one
    without incoming flows): no flow brought it."""
    if scope.element_type not in _AD_HOC_SCOPES:
        return False
    model = deployment_state.deployed(db, value.process_definition_key).model(db)
    return not model.element(value.element_id).incoming


def _adjust_flows(db: PartitionDb, scope_key: int, delta: int) -> None:
    scope = instance(db, scope_key)
    if scope is not None:
        db.column(INSTANCES).upsert(
            scope_key, replace(scope, active_flows=scope.active_flows + delta)
        )


@handlers.applier(Instance.ELEMENT_ACTIVATING)
def apply_activating(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessInstanceValue)
    db.column(INSTANCES).insert(
        record.key,
        ElementInstance(
            element_id=value.element_id,
            element_type=value.bpmn_element_type,
            flow_scope_key=value.flow_scope_key,
            process_instance_key=value.process_instance_key,
            process_definition_key=value.process_definition_key,
            bpmn_process_id=value.bpmn_process_id,
            version=value.version,
            state=_ACTIVATING,
            event_type=value.bpmn_event_type,
            parent_process_instance_key=value.parent_process_instance_key,
            parent_element_instance_key=value.parent_element_instance_key,
        ),
    )
    if value.bpmn_element_type is BpmnElementType.PROCESS and value.parent_element_instance_key > 0:
        caller = instance(db, value.parent_element_instance_key)
        if caller is not None:  # the call activity knows its child, to terminate it
            db.column(INSTANCES).upsert(
                value.parent_element_instance_key, replace(caller, called_child_key=record.key)
            )
    if value.flow_scope_key > 0:
        db.column(CHILDREN).insert((value.flow_scope_key, record.key), None)
        if value.bpmn_element_type in _JOINS:
            model = deployment_state.deployed(db, value.process_definition_key)
            gateway = model.model(db).element(value.element_id)
            consumed = 0
            for flow in gateway.incoming:  # the join consumes one arrival of each flow
                key = (value.flow_scope_key, gateway.id, flow)
                left = taken_count(db, *key) - 1
                if left > 0:
                    db.column(TAKEN).upsert(key, left)
                elif left == 0:
                    db.column(TAKEN).delete(key)
                consumed += left >= 0  # an inclusive join: only the flows that arrived
            if (
                gateway.element_type is BpmnElementType.PARALLEL_GATEWAY
                or len(gateway.incoming) < 2
            ):
                consumed = len(gateway.incoming)
            _adjust_flows(db, value.flow_scope_key, -consumed)
        elif value.bpmn_element_type not in _NOT_VIA_FLOW and not _compensating(value):
            scope = instance(db, value.flow_scope_key)
            if scope is not None and not _started_ad_hoc(db, scope, value):
                db.column(INSTANCES).upsert(
                    value.flow_scope_key, replace(scope, active_flows=scope.active_flows - 1)
                )


@handlers.applier(
    Instance.ELEMENT_ACTIVATED, Instance.ELEMENT_COMPLETING, Instance.ELEMENT_TERMINATING
)
def apply_state(record: Record, db: PartitionDb) -> None:
    found = instance(db, record.key)
    if found is None:
        raise KeyNotFoundError(INSTANCES.name, record.key, f"{record.intent.name} of an element")
    db.column(INSTANCES).upsert(
        record.key, replace(found, state=record.intent.name, listener_index=0)
    )


@handlers.applier(Instance.ELEMENT_COMPLETED, Instance.ELEMENT_TERMINATED)
def apply_ended(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessInstanceValue)
    db.column(INSTANCES).delete_existing(record.key)
    if value.flow_scope_key > 0:
        db.column(CHILDREN).delete((value.flow_scope_key, record.key))
        if _is_link_throw(value) and record.intent is Instance.ELEMENT_COMPLETED:
            _adjust_flows(db, value.flow_scope_key, 1)  # its catch is activated next
    db.column(VARIABLES).delete_prefix(VARIABLES.key.prefix(record.key))
    db.column(TAKEN).delete_prefix(TAKEN.key.prefix(record.key))  # joins never completed
    db.column(TRIGGERS).delete_prefix(TRIGGERS.key.prefix(record.key))  # fired as it ended
    if value.bpmn_event_type is BpmnEventType.TERMINATE and value.flow_scope_key > 0:
        scope = instance(db, value.flow_scope_key)  # a terminate end event: nothing is pending
        if scope is not None:
            db.column(INSTANCES).upsert(value.flow_scope_key, replace(scope, active_flows=0))
        db.column(TAKEN).delete_prefix(TAKEN.key.prefix(value.flow_scope_key))
    if value.bpmn_element_type is BpmnElementType.PROCESS:
        started = db.column(STARTED_BY_INSTANCE).get(record.key)
        if started is not None:  # its correlation key may start another instance now
            db.column(STARTED_BY_INSTANCE).delete(record.key)
            db.column(STARTED).delete((started.bpmn_process_id, started.correlation_key))


@handlers.applier(Instance.SEQUENCE_FLOW_TAKEN)
def apply_flow_taken(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessInstanceValue)
    _adjust_flows(db, value.flow_scope_key, +1)
    process = deployment_state.deployed(db, value.process_definition_key).model(db)
    flow = process.flows[value.element_id]
    target = process.element(flow.target)
    if target.element_type in _JOINS and len(target.incoming) > 1:
        taken = taken_count(db, value.flow_scope_key, target.id, flow.id)
        db.column(TAKEN).upsert((value.flow_scope_key, target.id, flow.id), taken + 1)


@handlers.applier(ProcessEventIntent.TRIGGERING)
def apply_triggering(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessEventValue)
    db.column(TRIGGERS).upsert(
        (value.scope_key, record.key),
        EventTrigger(value.target_element_id, value.variables),
    )


@handlers.applier(ProcessEventIntent.TRIGGERED)
def apply_triggered(record: Record, db: PartitionDb) -> None:
    value = record.value
    assert isinstance(value, ProcessEventValue)
    db.column(TRIGGERS).delete((value.scope_key, record.key))

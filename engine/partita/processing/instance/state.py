"""Element instances in state, and the event triggers waiting in their scopes.

An element instance (column family `element_instance`) records its element, flow scope,
process and lifecycle state, and for scopes the number of sequence flows taken inside it whose
target is not active yet (`activeFlows`): a scope completes when it has no active children and
no active flows. `element_instance_children` indexes the children of a scope, `taken_flows`
counts the arrivals at parallel joins, and `event_trigger` holds, per scope, the events that
fired for an element that has not taken them yet (its target element id and variables).
"""

from __future__ import annotations

from partita.protocol.values import ProcessInstanceValue
from partita.state import ColumnFamilies
from partita.state.stored import ElementInstance, EventTrigger
from partita.state.view import StateView

INSTANCES = ColumnFamilies.ELEMENT_INSTANCE
CHILDREN = ColumnFamilies.ELEMENT_INSTANCE_CHILDREN
TAKEN = ColumnFamilies.TAKEN_FLOWS
TRIGGERS = ColumnFamilies.EVENT_TRIGGER


def instance(db: StateView, key: int) -> ElementInstance | None:
    return db.column(INSTANCES).get(key)


def value_of(stored: ElementInstance) -> ProcessInstanceValue:
    """The PROCESS_INSTANCE record value of a stored element instance."""
    return ProcessInstanceValue(
        bpmn_process_id=stored.bpmn_process_id,
        version=stored.version,
        process_definition_key=stored.process_definition_key,
        process_instance_key=stored.process_instance_key,
        element_id=stored.element_id,
        flow_scope_key=stored.flow_scope_key,
        bpmn_element_type=stored.element_type,
        bpmn_event_type=stored.event_type,
        parent_process_instance_key=stored.parent_process_instance_key,
        parent_element_instance_key=stored.parent_element_instance_key,
    )


def children(db: StateView, scope_key: int) -> list[int]:
    return [child for (_, child), _ in db.column(CHILDREN).items(CHILDREN.key.prefix(scope_key))]


def scope_chain(db: StateView, key: int) -> list[int]:
    """`key` and its flow scopes up to the process instance, innermost first."""
    chain = []
    current: int | None = key
    while current is not None and current > 0:
        chain.append(current)
        found = instance(db, current)
        current = None if found is None else found.flow_scope_key
    return chain


def taken_count(db: StateView, scope_key: int, gateway: str, flow: str) -> int:
    return db.column(TAKEN).get((scope_key, gateway, flow)) or 0


def trigger_for(db: StateView, scope_key: int, element_id: str) -> tuple[int, EventTrigger] | None:
    """(trigger key, stored trigger) of the event waiting in `scope_key` for `element_id`."""
    for (_, trigger_key), stored in db.column(TRIGGERS).items(TRIGGERS.key.prefix(scope_key)):
        if stored.target == element_id:
            return trigger_key, stored
    return None


def triggers(db: StateView, scope_key: int) -> list[EventTrigger]:
    """The events waiting in `scope_key` for their targets, in the order they fired."""
    return [stored for _, stored in db.column(TRIGGERS).items(TRIGGERS.key.prefix(scope_key))]


def has_trigger(db: StateView, scope_key: int, element_id: str) -> bool:
    return trigger_for(db, scope_key, element_id) is not None


def triggered_start(db: StateView, instance_key: int) -> str | None:
    """The start event a pending trigger names for a new instance, if any."""
    for _, stored in db.column(TRIGGERS).items(TRIGGERS.key.prefix(instance_key)):
        return stored.target
    return None

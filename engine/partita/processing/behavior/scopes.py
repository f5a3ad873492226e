"""A scope's first element and its own completion: a scope activates the element a path in it
starts at (`activate_in`); once no flow is in transit in it and no child runs, an active scope
(a process, a subprocess, a multi-instance body, an ad-hoc subprocess or its inner instance)
completes."""

from __future__ import annotations

from msgspec.structs import replace

from partita.bpmn.model import FlowNode
from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.protocol.enums import BpmnEventType
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.values import ProcessInstanceValue


def activate_in(
    ctx: ProcessingContext,
    value: ProcessInstanceValue,
    node: FlowNode,
    scope_key: int,
    event_type: BpmnEventType | None = None,
) -> None:
    """ACTIVATE_ELEMENT for `node` in the scope instance `scope_key`: `value` (the scope's, or
    the instance's) with the node's id, element type and event type (`event_type` instead when
    given), under a new key."""
    child = replace(
        value,
        element_id=node.id,
        flow_scope_key=scope_key,
        bpmn_element_type=node.element_type,
        bpmn_event_type=node.event_type if event_type is None else event_type,
    )
    ctx.append_command(Instance.ACTIVATE_ELEMENT, child, ctx.keys.next_key())


def complete_scope_if_done(ctx: ProcessingContext, scope_key: int) -> None:
    """COMPLETE_ELEMENT for `scope_key` when nothing runs in it any more."""
    scope = instance_state.instance(ctx.state, scope_key)
    if scope is None or scope.active_flows > 0 or instance_state.children(ctx.state, scope_key):
        return
    if scope.state != Instance.ELEMENT_ACTIVATED.name:
        return
    ctx.append_command(Instance.COMPLETE_ELEMENT, instance_state.value_of(scope), scope_key)

"""Compensation as Zeebe 8.5+ runs it.

An activity with a compensation boundary event leaves a COMPENSATION_SUBSCRIPTION as it
completes (just before ELEMENT_COMPLETED), scoped to its flow scope's instance; a subprocess or
multi-instance body whose completed activities left some leaves one without a handler, so that
compensating its scope reaches them. A compensation throw or end event, once ACTIVATED, triggers
the untriggered subscriptions of its scope (only its `activityRef`'s when it names one; a throw
inside an event subprocess also reaches the event subprocess's parent scope), depth first into
completed subprocesses: for each with a handler, the boundary event's four lifecycle events and
the handler's activation (in the throw event's scope, event type COMPENSATION), then TRIGGERED.
All handlers run at once; as each completes, its subscription COMPLETED (and a subprocess's
handler-less one when nothing inside it is left), and the throw event completes after the last.
With nothing to compensate it completes at once. Subscriptions are deleted when the instance
ends or their subprocess is terminated (`behavior.compensations`)."""

from __future__ import annotations

from msgspec.structs import replace

from partita.bpmn import EventNode, FlowNode, Process, SubProcess
from partita.processing.compensation.state import of_instance, subscription_value
from partita.processing.context import ProcessingContext
from partita.processing.element import multi_instance
from partita.processing.instance import state as instance_state
from partita.protocol.enums import BpmnElementType, BpmnEventType
from partita.protocol.intents import CompensationSubscriptionIntent as Compensation
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.values import ProcessInstanceValue
from partita.state.stored import CompensationSubscription

COMPENSATION = BpmnEventType.COMPENSATION
_THROWS = {BpmnElementType.INTERMEDIATE_THROW_EVENT, BpmnElementType.END_EVENT}
_BOUNDARY_STEPS = (
    Instance.ELEMENT_ACTIVATING,
    Instance.ELEMENT_ACTIVATED,
    Instance.ELEMENT_COMPLETING,
    Instance.ELEMENT_COMPLETED,
)


def boundary_of(model: Process, activity_id: str) -> EventNode | None:
    """The activity's compensation boundary event, if it has one."""
    for boundary_id in model.boundaries.get(activity_id, ()):
        boundary = model.element(boundary_id)
        if isinstance(boundary, EventNode) and boundary.compensation:
            return boundary
    return None


def on_completing(
    ctx: ProcessingContext,
    model: Process,
    element: FlowNode,
    key: int,
    value: ProcessInstanceValue,
) -> None:
    """COMPENSATION_SUBSCRIPTION CREATED for a compensable activity that completes (its
    multi-instance body's, for an inner instance), or for a subprocess or body with
    compensable activities inside."""
    body = value.bpmn_element_type is multi_instance.BODY
    inner = element.multi_instance is not None and not body
    boundary = None if inner else boundary_of(model, element.id)
    if boundary is None:
        if not (body or isinstance(element, SubProcess)):
            return
        if not any(
            s.compensable_activity_scope_key == key
            for _, s in of_instance(ctx.state, value.process_instance_key)
        ):
            return
    created = CompensationSubscription(
        process_definition_key=value.process_definition_key,
        compensable_activity_id=element.id,
        compensable_activity_scope_key=value.flow_scope_key,
        compensable_activity_instance_key=key,
        compensation_handler_id=boundary.compensation_handler if boundary is not None else "",
    )
    ctx.append_event(
        Compensation.CREATED,
        subscription_value(value.process_instance_key, created),
        ctx.keys.next_key(),
    )


def is_handler(value: ProcessInstanceValue) -> bool:
    """An element instance activated by compensation (a handler, or its multi-instance body)."""
    return value.bpmn_event_type is COMPENSATION and value.bpmn_element_type not in _THROWS


def throw(
    ctx: ProcessingContext,
    model: Process,
    element: EventNode,
    key: int,
    value: ProcessInstanceValue,
) -> None:
    """ACTIVATED, then the handlers of what the throw event compensates; it completes once they
    have (at once when there is nothing to compensate)."""
    ctx.append_event(Instance.ELEMENT_ACTIVATED, value, key)
    scopes = {value.flow_scope_key}
    parent = model.elements.get(element.scope)
    if isinstance(parent, SubProcess) and parent.triggered_by_event:
        scope = instance_state.instance(ctx.state, value.flow_scope_key)
        if scope is not None:
            scopes.add(scope.flow_scope_key)
    subscriptions = of_instance(ctx.state, value.process_instance_key)
    triggered = False
    for sub_key, stored in subscriptions:
        if stored.throw_event_id or stored.compensable_activity_scope_key not in scopes:
            continue
        if element.activity_ref and stored.compensable_activity_id != element.activity_ref:
            continue
        _trigger(ctx, model, sub_key, stored, (element, key, value))
        triggered = True
    if not triggered:
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, key)


def _trigger(
    ctx: ProcessingContext,
    model: Process,
    sub_key: int,
    stored: CompensationSubscription,
    thrown: tuple[EventNode, int, ProcessInstanceValue],
) -> None:
    """Invoke one subscription's handler (if it has one), mark it TRIGGERED, and go on into
    what completed inside it. `thrown`: the throw event, its instance key and value."""
    element, key, value = thrown
    handler_key = -1
    boundary = boundary_of(model, stored.compensable_activity_id)
    if stored.compensation_handler_id and boundary is not None:
        caught = replace(
            value,
            element_id=boundary.id,
            bpmn_element_type=BpmnElementType.BOUNDARY_EVENT,
            bpmn_event_type=COMPENSATION,
        )
        boundary_key = ctx.keys.next_key()
        for step in _BOUNDARY_STEPS:
            ctx.append_event(step, caught, boundary_key)
        handler = model.element(stored.compensation_handler_id)
        handler_key = ctx.keys.next_key()
        activation = replace(
            value,
            element_id=handler.id,
            bpmn_element_type=multi_instance.BODY
            if handler.multi_instance
            else handler.element_type,
            bpmn_event_type=COMPENSATION,
        )
        ctx.append_command(Instance.ACTIVATE_ELEMENT, activation, handler_key)
    triggered = subscription_value(
        value.process_instance_key,
        stored,
        throw_event_id=element.id,
        throw_event_instance_key=key,
        compensation_handler_instance_key=handler_key,
    )
    ctx.append_event(Compensation.TRIGGERED, triggered, sub_key)
    for inner_key, inner in of_instance(ctx.state, value.process_instance_key):
        if (  # what completed inside a subprocess, depth first
            inner.compensable_activity_scope_key == stored.compensable_activity_instance_key
            and not inner.throw_event_id
        ):
            _trigger(ctx, model, inner_key, inner, thrown)


def handler_completed(ctx: ProcessingContext, key: int, value: ProcessInstanceValue) -> None:
    """A handler completed: its subscription COMPLETED, then a subprocess's handler-less one
    once nothing inside it is left, and the throw event's completion after its last handler."""
    instance_key = value.process_instance_key
    subscriptions = of_instance(ctx.state, instance_key)
    found = next(
        ((k, s) for k, s in subscriptions if s.compensation_handler_instance_key == key), None
    )
    if found is None:
        return
    sub_key, stored = found
    ctx.append_event(Compensation.COMPLETED, subscription_value(instance_key, stored), sub_key)
    scope = stored.compensable_activity_scope_key
    while True:
        left = of_instance(ctx.state, instance_key)
        if any(s.compensable_activity_scope_key == scope for _, s in left):
            break
        parent = next(
            (
                (k, s)
                for k, s in left
                if s.compensable_activity_instance_key == scope and not s.compensation_handler_id
            ),
            None,
        )
        if parent is None:
            break
        ctx.append_event(
            Compensation.COMPLETED, subscription_value(instance_key, parent[1]), parent[0]
        )
        scope = parent[1].compensable_activity_scope_key
    throw_key = stored.throw_event_instance_key
    if any(
        s.throw_event_instance_key == throw_key for _, s in of_instance(ctx.state, instance_key)
    ):
        return
    thrown = instance_state.instance(ctx.state, throw_key)
    if thrown is not None and thrown.state == Instance.ELEMENT_ACTIVATED.name:
        ctx.append_command(Instance.COMPLETE_ELEMENT, instance_state.value_of(thrown), throw_key)

"""Gateways. An exclusive gateway takes the first outgoing flow whose condition holds, else its
default flow (neither: an incident). An inclusive gateway takes every flow whose condition
holds, else its default flow, and as a join activates once no token that is still in its scope
can reach an incoming flow that has not arrived yet. A parallel gateway forks into every
outgoing flow and, as a join, activates once every incoming flow has arrived. An event-based
gateway waits for the events after it and completes towards the one that fired."""

from __future__ import annotations

from msgspec.structs import replace

from partita.bpmn import ExclusiveGateway, FlowNode, InclusiveGateway, Process, SequenceFlow
from partita.feel import FeelError, compile_expression
from partita.processing.behavior.incidents import element_incident
from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.processing.variable.state import visible_variables
from partita.protocol.enums import BpmnElementType, BpmnEventType, ErrorType
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.values import ProcessInstanceValue


def choose_flow(
    ctx: ProcessingContext,
    gateway: ExclusiveGateway,
    flows: list[SequenceFlow],
    value: ProcessInstanceValue,
    key: int,
) -> SequenceFlow | None:
    """The flow an exclusive gateway takes; None (with an incident) when a condition fails or
    none holds and there is no default flow."""
    variables = visible_variables(ctx.state, key)
    for flow in flows:
        if flow.id == gateway.default_flow or flow.condition is None:
            continue
        try:
            if compile_expression(flow.condition).evaluate_as("boolean", variables):
                return flow
        except FeelError as error:
            element_incident(
                ctx, ErrorType.CONDITION_ERROR, f"{flow.id}: {error.reason}", value, key
            )
            return None
    default = next((f for f in flows if f.id == gateway.default_flow), None)
    if default is None:
        if len(flows) == 1 and flows[0].condition is None:
            return flows[0]
        element_incident(
            ctx,
            ErrorType.CONDITION_ERROR,
            f"no outgoing flow of {gateway.id} has a true condition and there is no default flow",
            value,
            key,
        )
    return default


def fired_flows(
    ctx: ProcessingContext, flows: list[SequenceFlow], value: ProcessInstanceValue
) -> list[SequenceFlow]:
    """The flows of an event-based gateway towards the event that fired."""
    return [
        f for f in flows if instance_state.has_trigger(ctx.state, value.flow_scope_key, f.target)
    ]


def inclusive_flows(
    ctx: ProcessingContext,
    gateway: InclusiveGateway,
    flows: list[SequenceFlow],
    value: ProcessInstanceValue,
    key: int,
) -> list[SequenceFlow] | None:
    """Every flow whose condition holds (a flow without one always), else the default flow;
    None (with an incident) when a condition fails or nothing can be taken."""
    variables = visible_variables(ctx.state, key)
    taken = []
    for flow in flows:
        if flow.id == gateway.default_flow:
            continue
        try:
            if flow.condition is None or compile_expression(flow.condition).evaluate_as(
                "boolean", variables
            ):
                taken.append(flow)
        except FeelError as error:
            element_incident(
                ctx, ErrorType.CONDITION_ERROR, f"{flow.id}: {error.reason}", value, key
            )
            return None
    if taken:
        return taken
    default = [f for f in flows if f.id == gateway.default_flow]
    if not default and flows:
        element_incident(
            ctx,
            ErrorType.CONDITION_ERROR,
            f"no outgoing flow of {gateway.id} has a true condition and there is no default flow",
            value,
            key,
        )
        return None
    return default


def fire_ready_joins(
    ctx: ProcessingContext, model: Process, scope_key: int, value: ProcessInstanceValue
) -> None:
    """Activate every inclusive join of the scope that has arrivals and can wait for nothing
    more: no activation is still on its way in the scope, and no token in it can reach one of
    the join's incoming flows that has not arrived. Its ELEMENT_ACTIVATING is written here,
    consuming the arrivals at once, so a later check cannot fire it twice."""
    scope = instance_state.instance(ctx.state, scope_key)
    if scope is None:
        return
    joins = model.inclusive_joins(scope.element_id)
    if not joins:
        return
    arrivals = {
        (gateway, flow): count
        for (_, gateway, flow), count in ctx.state.column(instance_state.TAKEN).items(
            instance_state.TAKEN.key.prefix(scope_key)
        )
    }
    if scope.active_flows > sum(arrivals.values()):
        return  # an element is about to be activated: it decides later
    children = [
        found.element_id
        for child in instance_state.children(ctx.state, scope_key)
        if (found := instance_state.instance(ctx.state, child)) is not None
    ]
    for join in joins:
        arrived = {f for f in join.incoming if arrivals.get((join.id, f), 0) > 0}
        if not arrived:
            continue
        missing = set(join.incoming) - arrived
        if any(model.reachable_flows(child, join.id) & missing for child in children):
            continue
        key = ctx.keys.next_key()
        activation = replace(
            value,
            element_id=join.id,
            flow_scope_key=scope_key,
            bpmn_element_type=BpmnElementType.INCLUSIVE_GATEWAY,
            bpmn_event_type=BpmnEventType.UNSPECIFIED,
        )
        ctx.append_event(Instance.ELEMENT_ACTIVATING, activation, key)
        ctx.append_command(Instance.ACTIVATE_ELEMENT, activation, key)


def join_waits(ctx: ProcessingContext, target: FlowNode, scope_key: int) -> bool:
    """Whether `target`, a join, waits: a parallel join for another incoming flow, an inclusive
    join always (`fire_ready_joins` decides once the completion has taken its flows)."""
    if len(target.incoming) < 2:
        return False
    if target.element_type is BpmnElementType.INCLUSIVE_GATEWAY:
        return True
    if target.element_type is not BpmnElementType.PARALLEL_GATEWAY:
        return False
    return any(
        instance_state.taken_count(ctx.state, scope_key, target.id, f) < 1 for f in target.incoming
    )

"""Gateways. An exclusive gateway takes the first outgoing flow whose condition holds, else its
default flow (neither: an incident). A parallel gateway forks into every outgoing flow and, as
a join, activates once every incoming flow has arrived. An event-based gateway waits for the
events after it and completes towards the one that fired."""

from __future__ import annotations

from partita.bpmn import ExclusiveGateway, FlowNode, SequenceFlow
from partita.feel import FeelError, compile_expression
from partita.processing.behavior.incidents import element_incident
from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.processing.variable.state import visible_variables
from partita.protocol.enums import BpmnElementType, ErrorType
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


def join_waits(ctx: ProcessingContext, target: FlowNode, scope_key: int) -> bool:
    """Whether `target`, a parallel join, still waits for another incoming flow."""
    if target.element_type is not BpmnElementType.PARALLEL_GATEWAY or len(target.incoming) < 2:
        return False
    return any(
        instance_state.taken_count(ctx.state, scope_key, target.id, f) < 1 for f in target.incoming
    )

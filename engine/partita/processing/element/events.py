"""Event elements: start, intermediate catch and boundary events (and receive tasks, which wait
for a message like a catch event) taking the trigger of the event that fired, and the end
events that do more than end: an error end event throws its error, a terminate end event
terminates everything else in its scope, which then completes; an escalation throw or end
event throws its escalation and goes on unless an interrupting catch ends it; a signal throw or
end event broadcasts its signal and goes on."""

from __future__ import annotations

from typing import Any

from partita.bpmn import EventNode, FlowNode, Process
from partita.processing.behavior.error_catching import catch_error
from partita.processing.behavior.escalation_catching import catch_escalation
from partita.processing.behavior.expressions import ExpressionError, text_of
from partita.processing.behavior.incidents import element_incident
from partita.processing.behavior.termination import terminate_element
from partita.processing.behavior.triggers import consume_trigger
from partita.processing.behavior.variables import merge_event_variables
from partita.processing.context import ProcessingContext
from partita.processing.element.subprocesses import event_subprocess_trigger
from partita.processing.instance import state as instance_state
from partita.processing.variable.state import visible_variables
from partita.protocol import json_text
from partita.protocol.enums import BpmnElementType, ErrorType
from partita.protocol.intents import EscalationIntent, SignalIntent
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.values import EscalationValue, ProcessInstanceValue, SignalValue

_TRIGGERABLE = {
    BpmnElementType.BOUNDARY_EVENT,
    BpmnElementType.START_EVENT,
    BpmnElementType.INTERMEDIATE_CATCH_EVENT,
}


def take_trigger(
    ctx: ProcessingContext,
    process: Process,
    element: FlowNode,
    key: int,
    value: ProcessInstanceValue,
) -> dict[str, Any] | None:
    """The variables of the event that activates this element, if an event does (a boundary
    or start event, or a catch event after an event-based gateway)."""
    if element.element_type not in _TRIGGERABLE:  # only these can be activated by an event
        return None
    triggered = consume_trigger(ctx, value.flow_scope_key, element.id, key, value)
    if triggered is None:
        triggered = event_subprocess_trigger(ctx, process, element.id, value)
    return triggered


def take_caught_trigger(
    ctx: ProcessingContext, element: FlowNode, key: int, value: ProcessInstanceValue
) -> None:
    """A catch event or receive task that waited completes: it takes the trigger of the event
    it caught and merges its variables."""
    if isinstance(element, EventNode) and element.attached_to is None:
        triggered = consume_trigger(ctx, key, element.id, key, value)
        if triggered is not None:
            merge_event_variables(ctx, element, key, value, triggered)


def throw_from_end_event(
    ctx: ProcessingContext, element: EventNode, key: int, value: ProcessInstanceValue
) -> None:
    """An error end event throws its error; uncaught, it stays with an incident."""
    assert element.error is not None
    if catch_error(ctx, key, element.error.code, "{}"):
        return
    message = (
        f"an error with code '{element.error.code}' was thrown by '{element.id}' but no error"
        " catch event handles it"
    )
    element_incident(ctx, ErrorType.UNHANDLED_ERROR_EVENT, message, value, key)


def throw_escalation(
    ctx: ProcessingContext, element: EventNode, key: int, value: ProcessInstanceValue
) -> bool:
    """An escalation intermediate throw or end event throws its escalation (ESCALATION
    ESCALATED, or NOT_ESCALATED when nothing catches it). True when an interrupting catch
    terminated the thrower: its activation stops there."""
    assert element.escalation is not None
    code = element.escalation.code
    caught = catch_escalation(ctx, key, code)
    escalation = EscalationValue(
        process_instance_key=value.process_instance_key,
        escalation_code=code,
        throw_element_id=element.id,
        catch_element_id=caught.id if caught is not None else "",
    )
    intent = EscalationIntent.ESCALATED if caught is not None else EscalationIntent.NOT_ESCALATED
    ctx.append_event(intent, escalation, ctx.keys.next_key())
    return instance_state.instance(ctx.state, key) is None or (
        caught is not None and caught.interrupting
    )


def throw_signal(
    ctx: ProcessingContext, element: EventNode, key: int, value: ProcessInstanceValue
) -> bool:
    """A signal intermediate throw or end event broadcasts its signal (SIGNAL BROADCAST, which
    reaches every partition) with the variables its input mappings made, and goes on. True
    (with an incident) when the signal's name cannot be evaluated."""
    assert element.signal is not None
    visible = visible_variables(ctx.state, key)
    try:
        name = text_of(element.signal.name, visible, f"{element.id}: the signal name")
    except ExpressionError as error:
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, error.reason, value, key)
        return True
    carried = {m.target: visible.get(m.target) for m in element.inputs}
    signal = SignalValue(signal_name=name, variables=json_text.write(carried))
    ctx.append_command(SignalIntent.BROADCAST, signal, -1, partition=ctx.partition)
    return False


def terminate_siblings(ctx: ProcessingContext, scope_key: int, keep: int) -> None:
    """A terminate end event: terminate everything else running in its scope."""
    for child in instance_state.children(ctx.state, scope_key):
        if child == keep:
            continue
        stored = instance_state.instance(ctx.state, child)
        if stored is not None and stored.state not in (
            Instance.ELEMENT_TERMINATING.name,
            Instance.ELEMENT_COMPLETED.name,
        ):
            terminate_element(ctx, child, stored)

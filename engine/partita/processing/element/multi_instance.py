"""Multi-instance activities, parallel and sequential.

A flow into a multi-instance activity activates its MULTI_INSTANCE_BODY (element type, same
element id), the scope of the inner instances and the owner of the activity's boundary events.
The body evaluates `inputCollection` (a FEEL list), creates `outputCollection` (a list of nulls)
when asked for, and starts one inner instance per item (all at once, or one after another when
sequential), each with the item as `inputElement` and `loopCounter` (1-based) as local
variables. When an inner instance completes, `outputElement` is stored at its index of the
output collection and `completionCondition` is evaluated, with `numberOfInstances`,
`numberOfActiveInstances`, `numberOfCompletedInstances` and `numberOfTerminatedInstances`
visible; when it holds (or nothing is left) the remaining inner instances are terminated and
the body completes, handing the output collection to its flow scope. Large collections need no
special care: inner activations beyond a batch's command budget go to the log as commands.
"""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from partita.bpmn import FlowNode, MultiInstance
from partita.feel import FeelError, compile_expression
from partita.processing.behavior.expressions import ExpressionError
from partita.processing.behavior.incidents import element_incident
from partita.processing.behavior.subscriptions import evaluate, open_events
from partita.processing.behavior.termination import terminate_element
from partita.processing.behavior.variables import propagate_variables, set_variable
from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.processing.variable.state import variable_json, visible_variables
from partita.protocol import json_text
from partita.protocol.enums import BpmnElementType, ErrorType
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.values import ProcessInstanceValue

BODY = BpmnElementType.MULTI_INSTANCE_BODY
LOOP_COUNTER = "loopCounter"


class MultiInstanceError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _collection(ctx: ProcessingContext, loop: MultiInstance, key: int) -> list[Any]:
    variables = visible_variables(ctx.state, key)
    try:
        result = compile_expression(loop.input_collection).evaluate(variables)
    except FeelError as error:
        raise MultiInstanceError(
            f"inputCollection '{loop.input_collection}': {error.reason}"
        ) from None
    if not isinstance(result, list):
        found = "null" if result is None else type(result).__name__
        raise MultiInstanceError(
            f"inputCollection '{loop.input_collection}' must be a list, but it is {found}"
        )
    return result


def activate_body(
    ctx: ProcessingContext, element: FlowNode, key: int, value: ProcessInstanceValue, process: Any
) -> None:
    loop = element.multi_instance
    assert loop is not None
    try:
        items = _collection(ctx, loop, key)
        variables = visible_variables(ctx.state, key)
        openings = [evaluate(e, variables, ctx.now) for e in process.boundary_events(element.id)]
    except MultiInstanceError as error:
        element_incident(
            ctx, ErrorType.EXTRACT_VALUE_ERROR, f"{element.id}: {error.reason}", value, key
        )
        return
    except ExpressionError as error:
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, error.reason, value, key)
        return
    if loop.output_collection:
        set_variable(ctx, key, loop.output_collection, [None] * len(items), value)
    open_events(ctx, openings, key, value)
    ctx.append_event(Instance.ELEMENT_ACTIVATED, value, key)
    if not items:
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, key)
        return
    for index in range(1 if loop.sequential else len(items)):
        _start_inner(ctx, element, key, value, items, index=index)


def _start_inner(
    ctx: ProcessingContext,
    element: FlowNode,
    body_key: int,
    body_value: ProcessInstanceValue,
    items: list[Any],
    *,
    index: int,
) -> None:
    loop = element.multi_instance
    assert loop is not None
    inner_key = ctx.keys.next_key()
    inner = replace(
        body_value,
        flow_scope_key=body_key,
        bpmn_element_type=element.element_type,
        bpmn_event_type=element.event_type,
    )
    if loop.input_element:
        set_variable(ctx, inner_key, loop.input_element, items[index], inner)
    set_variable(ctx, inner_key, LOOP_COUNTER, index + 1, inner)
    ctx.append_command(Instance.ACTIVATE_ELEMENT, inner, inner_key)


def loop_counter(ctx: ProcessingContext, key: int) -> int:
    text = variable_json(ctx.state, key, LOOP_COUNTER)
    return int(json_text.parse(text)) if text is not None else 0


def collect_output(
    ctx: ProcessingContext, element: FlowNode, key: int, value: ProcessInstanceValue
) -> bool:
    """Before an inner instance completes: its outputElement into the output collection.
    False (with an incident) when the expression fails."""
    loop = element.multi_instance
    assert loop is not None
    if not loop.output_collection:
        return True
    try:
        result = compile_expression(loop.output_element).evaluate(visible_variables(ctx.state, key))
    except FeelError as error:
        reason = f"outputElement '{loop.output_element}': {error.reason}"
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, f"{element.id}: {reason}", value, key)
        return False
    body_key = value.flow_scope_key
    body = instance_state.instance(ctx.state, body_key)
    assert body is not None
    text = variable_json(ctx.state, body_key, loop.output_collection)
    collected = json_text.parse(text) if text is not None else []
    index = loop_counter(ctx, key) - 1
    while len(collected) <= index:
        collected.append(None)
    collected[index] = result
    set_variable(ctx, body_key, loop.output_collection, collected, instance_state.value_of(body))
    return True


def inner_completed(
    ctx: ProcessingContext, element: FlowNode, counter: int, value: ProcessInstanceValue
) -> None:
    """After inner instance number `counter` completed: the next one, or the body's end."""
    loop = element.multi_instance
    assert loop is not None
    body_key = value.flow_scope_key
    body = instance_state.instance(ctx.state, body_key)
    if body is None or body.state != Instance.ELEMENT_ACTIVATED.name:
        return
    body_value = instance_state.value_of(body)
    try:
        items = _collection(ctx, loop, body_key)
    except MultiInstanceError as error:
        element_incident(
            ctx,
            ErrorType.EXTRACT_VALUE_ERROR,
            f"{element.id}: {error.reason}",
            body_value,
            body_key,
        )
        return
    active = instance_state.children(ctx.state, body_key)
    if loop.completion_condition:
        # While the body runs, inner instances only end by completing (a boundary event or a
        # met condition ends the body itself), so the counts follow from what was started.
        started = counter if loop.sequential else len(items)
        variables = {
            **visible_variables(ctx.state, body_key),
            "numberOfInstances": len(items),
            "numberOfActiveInstances": len(active),
            "numberOfCompletedInstances": started - len(active),
            "numberOfTerminatedInstances": 0,
        }
        try:
            done = compile_expression(loop.completion_condition).evaluate_as("boolean", variables)
        except FeelError as error:
            reason = (
                f"{element.id}: completionCondition '{loop.completion_condition}': {error.reason}"
            )
            element_incident(ctx, ErrorType.CONDITION_ERROR, reason, body_value, body_key)
            return
        if done:
            for child in active:
                stored = instance_state.instance(ctx.state, child)
                if stored is not None:
                    terminate_element(ctx, child, stored)
            ctx.append_command(Instance.COMPLETE_ELEMENT, body_value, body_key)
            return
    if loop.sequential and counter < len(items):
        _start_inner(ctx, element, body_key, body_value, items, index=counter)
    elif not active:
        ctx.append_command(Instance.COMPLETE_ELEMENT, body_value, body_key)


def hand_over_output(
    ctx: ProcessingContext, element: FlowNode, key: int, value: ProcessInstanceValue
) -> None:
    """The body completes: its output collection goes to the flow scope."""
    loop = element.multi_instance
    assert loop is not None
    if not loop.output_collection:
        return
    text = variable_json(ctx.state, key, loop.output_collection)
    collected = json_text.parse(text) if text is not None else []
    propagate_variables(ctx, value.flow_scope_key, {loop.output_collection: collected}, value)

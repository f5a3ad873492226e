"""Ad-hoc subprocesses. On activation the `activeElementsCollection` (FEEL, a list of element
ids) names the inner elements to activate: each must be an element of the subprocess without
incoming flows, else an EXTRACT_VALUE_ERROR incident names it. Each runs in an inner instance
of its own (`<id>#innerInstance`, as in Zeebe 8.8), which completes when the path that starts
there ends. The subprocess completes once no inner instance is active, or as soon as one
completes and its `completionCondition` holds, terminating the others first when
`cancelRemainingInstances`."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from partita.bpmn import AdHocSubProcess, FlowNode, Process
from partita.feel import FeelError, compile_expression
from partita.processing.behavior.incidents import element_incident
from partita.processing.behavior.scopes import activate_in
from partita.processing.behavior.termination import terminate_element
from partita.processing.behavior.variables import set_variable
from partita.processing.context import ProcessingContext
from partita.processing.instance import state as instance_state
from partita.processing.variable.state import visible_variables
from partita.protocol.enums import BpmnElementType, BpmnEventType, ErrorType
from partita.protocol.intents import ProcessInstanceIntent as Instance
from partita.protocol.values import ProcessInstanceValue


def chosen(
    ctx: ProcessingContext,
    element: AdHocSubProcess,
    key: int,
    value: ProcessInstanceValue,
    model: Process,
) -> list[FlowNode] | None:
    """The inner elements to activate; None (with an incident) when the collection cannot be
    evaluated or names something that cannot be activated."""
    if not element.active_elements:
        return []
    try:
        ids = compile_expression(element.active_elements).evaluate(
            visible_variables(ctx.state, key)
        )
    except FeelError as error:
        element_incident(
            ctx, ErrorType.EXTRACT_VALUE_ERROR, f"{element.id}: {error.reason}", value, key
        )
        return None
    if ids is None:
        return []
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        reason = (
            f"{element.id}: activeElementsCollection must yield a list of element ids, not {ids!r}"
        )
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, reason, value, key)
        return None
    activatable = {
        e.id: e
        for e in model.elements.values()
        if e.scope == element.id and not e.incoming and e.element_type.name != "BOUNDARY_EVENT"
    }
    unknown = [i for i in ids if i not in activatable]
    if unknown:
        reason = (
            f"{element.id}: cannot activate {', '.join(repr(i) for i in unknown)}: not an element"
            f" of the ad-hoc subprocess without incoming flows ({', '.join(sorted(activatable))})"
        )
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, reason, value, key)
        return None
    return [activatable[i] for i in ids]


def start(
    ctx: ProcessingContext,
    element: AdHocSubProcess,
    elements: list[FlowNode],
    key: int,
    value: ProcessInstanceValue,
) -> None:
    """Activate the chosen inner elements of ad-hoc subprocess instance `key` (none: it
    completes at once)."""
    if not elements:
        ctx.append_command(Instance.COMPLETE_ELEMENT, value, key)
        return
    for inner in elements:
        activate_inner(ctx, element, key, value, inner, {})


def activate_inner(  # noqa: PLR0917 - the subprocess, the element, and what it gets
    ctx: ProcessingContext,
    element: AdHocSubProcess,
    scope_key: int,
    scope_value: ProcessInstanceValue,
    inner: FlowNode,
    local: dict[str, Any],
) -> None:
    """Activate `inner` in an inner instance of its own (`<id>#innerInstance`, ACTIVATING and
    ACTIVATED at once, as Zeebe 8.8 writes them), which holds the activation's variables
    (`local`) and the path that starts there; the path's end completes it."""
    instance_key = ctx.keys.next_key()
    instance = replace(
        scope_value,
        element_id=element.inner_instance_id,
        flow_scope_key=scope_key,
        bpmn_element_type=BpmnElementType.AD_HOC_SUB_PROCESS_INNER_INSTANCE,
        bpmn_event_type=BpmnEventType.UNSPECIFIED,
    )
    ctx.append_event(Instance.ELEMENT_ACTIVATING, instance, instance_key)
    ctx.append_event(Instance.ELEMENT_ACTIVATED, instance, instance_key)
    for name, variable in local.items():
        set_variable(ctx, instance_key, name, variable, instance)
    activate_in(ctx, scope_value, inner, instance_key)


def completed_by_condition(ctx: ProcessingContext, model: Process, scope_key: int) -> bool:
    """After an inner element completed: when its ad-hoc subprocess's completion condition
    holds, terminate what still runs (if it cancels the rest) and complete it. True when it
    was completed here."""
    scope = instance_state.instance(ctx.state, scope_key)
    if scope is None or scope.state != Instance.ELEMENT_ACTIVATED.name:
        return False
    element = model.elements.get(str(scope.element_id))
    if not isinstance(element, AdHocSubProcess) or not element.completion_condition:
        return False
    value = instance_state.value_of(scope)
    try:
        done = compile_expression(element.completion_condition).evaluate_as(
            "boolean", visible_variables(ctx.state, scope_key)
        )
    except FeelError as error:
        reason = f"{element.id}: completionCondition: {error.reason}"
        element_incident(ctx, ErrorType.EXTRACT_VALUE_ERROR, reason, value, scope_key)
        return True
    children = instance_state.children(ctx.state, scope_key)
    if not done or (children and not element.cancel_remaining):
        return False
    for child in children:
        stored = instance_state.instance(ctx.state, child)
        if stored is not None and stored.state != Instance.ELEMENT_TERMINATING.name:
            terminate_element(ctx, child, stored)
    ctx.append_command(Instance.COMPLETE_ELEMENT, value, scope_key)
    return True

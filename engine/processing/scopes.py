"""Scopes beyond the process: embedded and event subprocesses, call activities, terminate end
events, and BPMN errors.

- A subprocess activates like any element, then starts its start event inside itself; it
  completes when nothing runs in it any more (the same rule as a process).
- A call activity starts the latest version of the called process as a child instance (on this
  partition) with the parent's variables (all visible ones, or only its input mappings'), and
  completes when the child completes, taking the child's variables (all, or only through its
  output mappings). Terminating it terminates the child.
- A terminate end event terminates everything else in its scope, which then completes.
- An error (a job's THROW_ERROR, an error end event) is caught by the nearest matching error
  boundary event or error event subprocess, looking from the element that threw it outwards
  through subprocesses and call activities, specific error codes before catch-all ones.
  Nothing catches it: an UNHANDLED_ERROR_EVENT incident naming the code.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine.bpmn import CallActivity, EventNode, Process, SubProcess
from engine.processing import events, instances, processes
from engine.processing.context import ProcessingContext
from engine.processing.mappings import element_incident
from engine.protocol.enums import BpmnElementType, ErrorType
from engine.protocol.intents import ProcessInstanceIntent as Instance
from engine.protocol.values import ProcessInstanceValue


def start_inside(
    ctx: ProcessingContext, scope: SubProcess, key: int, value: ProcessInstanceValue, model: Process
) -> None:
    """Activate the start event of subprocess instance `key`."""
    start = model.element(scope.start_event)
    child = replace(
        value,
        element_id=start.id,
        flow_scope_key=key,
        bpmn_element_type=start.element_type,
        bpmn_event_type=start.event_type,
    )
    ctx.append_command(Instance.ACTIVATE_ELEMENT, child, ctx.keys.next_key())


def event_subprocess_trigger(
    ctx: ProcessingContext, model: Process, element_id: str, value: ProcessInstanceValue
) -> dict[str, Any] | None:
    """The trigger a start event of an event subprocess takes: it waits in the scope that
    holds the event subprocess (where the event fired)."""
    start = model.element(element_id)
    if start.element_type is not BpmnElementType.START_EVENT or start.scope == model.id:
        return None
    sub = model.element(start.scope)
    if not isinstance(sub, SubProcess) or not sub.triggered_by_event:
        return None
    holder = instances.instance(ctx.state, value.flow_scope_key)
    if holder is None:
        return None
    return events.consume_trigger(ctx, int(holder["flowScopeKey"]), element_id, -1, value)


# -- call activities --------------------------------------------------------------------------


def call(
    ctx: ProcessingContext,
    activity: CallActivity,
    key: int,
    value: ProcessInstanceValue,
    called: processes.DeployedProcess,
) -> None:
    """Start the child instance of call activity instance `key`."""
    child_key = ctx.keys.next_key()
    child = ProcessInstanceValue(
        bpmn_process_id=called.bpmn_process_id,
        version=called.version,
        process_definition_key=called.key,
        process_instance_key=child_key,
        element_id=called.bpmn_process_id,
        bpmn_element_type=BpmnElementType.PROCESS,
        parent_process_instance_key=value.process_instance_key,
        parent_element_instance_key=key,
    )
    from engine.processing.mappings import set_variable

    if activity.propagate_all_parent_variables:
        variables = instances.visible_variables(ctx.state, key)
    else:
        variables = instances.local_variables(ctx.state, key)  # its input mappings
    for name, result in variables.items():
        set_variable(ctx, child_key, name, result, child)
    ctx.append_command(Instance.ACTIVATE_ELEMENT, child, child_key)


def child_completed(
    ctx: ProcessingContext, stored: dict[str, Any], variables: dict[str, Any]
) -> None:
    """A child instance completed: hand its variables to the call activity and complete it."""
    parent_key = int(stored.get("parentElementInstanceKey", -1))
    parent = instances.instance(ctx.state, parent_key) if parent_key > 0 else None
    if parent is None or parent["state"] != Instance.ELEMENT_ACTIVATED.name:
        return
    parent_value = instances.value_of(parent)
    deployed = processes.by_key(ctx.state, parent_value.process_definition_key)
    assert deployed is not None
    activity = deployed.model(ctx.state).element(parent_value.element_id)
    assert isinstance(activity, CallActivity)
    from engine.processing.mappings import merge_event_variables, set_variable

    if activity.propagate_all_child_variables:
        merge_event_variables(ctx, activity, parent_key, parent_value, variables)
    elif activity.outputs:  # only what the output mappings take
        for name, result in variables.items():
            set_variable(ctx, parent_key, name, result, parent_value)
    ctx.append_command(Instance.COMPLETE_ELEMENT, parent_value, parent_key)


# -- errors -----------------------------------------------------------------------------------


def _matching(candidates: list[tuple[EventNode, Any]], code: str) -> tuple[EventNode, Any] | None:
    specific = [c for c in candidates if c[0].error is not None and c[0].error.code == code]
    catch_all = [c for c in candidates if c[0].error is not None and c[0].error.code == ""]
    found = specific or catch_all
    return found[0] if found else None


def catch_error(ctx: ProcessingContext, thrower_key: int, code: str, variables: str) -> bool:
    """Trigger the event that catches error `code` thrown at element instance `thrower_key`;
    False when nothing catches it."""
    current = thrower_key
    while current > 0:
        stored = instances.instance(ctx.state, current)
        if stored is None:
            return False
        deployed = processes.by_key(ctx.state, int(stored["processDefinitionKey"]))
        assert deployed is not None
        model = deployed.model(ctx.state)
        element_id = str(stored["elementId"])
        candidates: list[tuple[EventNode, Any]] = []
        for boundary_id in model.boundaries.get(element_id, ()):
            boundary = model.element(boundary_id)
            if isinstance(boundary, EventNode) and boundary.error is not None:
                candidates.append((boundary, None))
        for sub in model.event_subprocesses(element_id):
            start = model.element(sub.start_event) if sub.start_event else None
            if isinstance(start, EventNode) and start.error is not None:
                candidates.append((start, sub))
        found = _matching(candidates, code)
        if found is not None and stored["state"] == Instance.ELEMENT_ACTIVATED.name:
            return events.trigger(ctx, model, current, found[0].id, variables)
        parent = int(stored["flowScopeKey"])
        if parent <= 0:
            parent = int(stored.get("parentElementInstanceKey", -1))  # into the calling process
        current = parent
    return False


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


def terminate_siblings(ctx: ProcessingContext, scope_key: int, keep: int) -> None:
    """A terminate end event: terminate everything else running in its scope."""
    from engine.processing.termination import terminate_element

    for child in instances.children(ctx.state, scope_key):
        if child == keep:
            continue
        stored = instances.instance(ctx.state, child)
        if stored is not None and stored["state"] not in (
            Instance.ELEMENT_TERMINATING.name,
            Instance.ELEMENT_COMPLETED.name,
        ):
            terminate_element(ctx, child, stored)
